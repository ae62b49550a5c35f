//! The plan stage: bind each config to the kernel's real parameters (`job`), prepare the configs
//! listed elsewhere, reproducing an engine's launcher for config files (`listed`), make one
//! compile job per (config, arch) with the one cache key (`jobs`), and split the jobs into shards
//! for runs spread over machines (`shard`).

pub mod job;
pub mod jobs;
pub mod listed;
pub mod shard;
