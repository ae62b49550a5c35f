//! The judge stage: verdicts per device (`verdict`: shared memory against the budget, the thread
//! limit, occupancy), a probe's results and recommendation (`probe`), listed configs per device
//! and per config file (`listed`), and what changed between two reports (`diff`).

pub mod diff;
pub mod listed;
pub mod probe;
pub mod verdict;
