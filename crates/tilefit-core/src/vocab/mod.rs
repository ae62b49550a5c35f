//! The leaf vocabulary: the nouns input, plan, compile and everything above them share, defined
//! once below them all so no stage reaches up for a word. A kernel's source and load mode, its
//! parameters, sweep configs, autotune configs and tensor descriptors ([`kernel`]); a compile
//! job's arguments, the job and the worker request ([`job`]); what a compile came to
//! ([`CompileStatus`]).

pub mod job;
pub mod kernel;
mod status;

pub use job::{CompileJob, JobArg, PROTOCOL_VERSION, Request};
pub use kernel::{
    AutotuneConfig, Config, DESCRIPTOR_TYPE, Descriptor, KernelInterface, KernelParam,
    KernelSource, Listing, LoadMode, Loaded, NONE_TYPE, describe_config,
};
pub use status::CompileStatus;
