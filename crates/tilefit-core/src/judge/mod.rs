//! The judge stage: verdicts per device (`verdict`: shared memory against the budget, the thread
//! limit, occupancy), a probe's results and recommendation (`probe`) and its whole report
//! (`report`), listed configs per device
//! and per config file (`listed`), a replay's variants and results (`replay`), what changed
//! between two reports (`diff`), what the gate reads from a report (`findings`) and the gate
//! itself (`gate`: rules, baseline, shipped configs, findings with their file and line), and
//! prediction against the driver (`agreement`), and a max-autotune selection on a device
//! (`selection`).

pub mod agreement;
pub mod capture;
pub mod capture_tests;
pub mod diff;
pub mod findings;
pub mod gate;
pub mod listed;
pub mod probe;
pub mod replay;
pub mod report;
pub mod selection;
pub mod shipped;
pub mod verdict;
