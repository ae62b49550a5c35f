//! The judge stage: verdicts per device (`verdict`: shared memory against the budget, the thread
//! limit, occupancy), a probe's results and recommendation (`probe`), listed configs per device
//! and per config file (`listed`), what changed between two reports (`diff`), and what the gate
//! reads from a report (`findings`).

pub mod diff;
pub mod findings;
pub mod gate;
pub mod listed;
pub mod probe;
pub mod replay;
pub mod verdict;
