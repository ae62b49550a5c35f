//! The plan stage: bind each config to the kernel's real parameters (`job`), prepare the configs
//! listed elsewhere, reproducing an engine's launcher for config files (`listed`), make one
//! compile job per (config, arch) with the one cache key (`jobs`), and split the jobs into shards
//! for runs spread over machines (`shard`); a whole probe's plan is `sweep`. `cache_key` is the one cache-key scheme every
//! compile, inspection and replay uses.

pub mod cache_key;
pub mod capture;
pub mod job;
pub mod jobs;
pub mod listed;
pub mod replay;
pub mod shard;
pub mod sweep;

pub use cache_key::{Job, KeyContext, key};
