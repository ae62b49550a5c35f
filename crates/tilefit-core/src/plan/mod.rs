//! The plan stage: bind each config to the kernel's real parameters (`job`), prepare the configs
//! listed elsewhere, reproducing an engine's launcher for config files (`listed`), and make one
//! compile job per (config, arch) with the one cache key (`jobs`).

pub mod job;
pub mod jobs;
pub mod listed;
