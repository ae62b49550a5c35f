//! A shard's report: what one machine of a sharded run compiled, with what `tilefit merge` needs to
//! judge the whole run without a Python or Triton of its own: the run as asked for, the Triton and
//! Python that compiled, the kernel's interface as the worker read it, a digest of the whole plan,
//! and each compiled job's outcome by cache key. Data only: `run::probe` writes and reads it.

use serde::{Deserialize, Serialize};

use crate::compile::toolchain::Origin;
use crate::compile::{CompileOutcome, KernelInterface, WorkersUsed};
use crate::model::probe::{KernelInfo, ToolInfo};
use crate::plan::shard::Shard;

/// The version of the shard format.
pub const SHARD_SCHEMA_VERSION: u32 = 1;

/// One shard's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardReport {
    /// [`SHARD_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `probe-shard`.
    pub kind: String,
    /// The tilefit that wrote it.
    pub tool: ToolInfo,
    /// Which shard.
    pub shard: Shard,
    /// Digest of everything the whole run was planned from (the spec file, the fleet, every job's
    /// cache key and config): equal on every shard of one run, and checked again by the merge.
    pub plan_sha256: String,
    /// Jobs in the whole run.
    pub jobs_total: usize,
    /// The run as asked for, so the merge plans it again.
    pub invocation: Invocation,
    /// Triton's version.
    pub triton_version: String,
    /// Python's version.
    pub python_version: String,
    /// How the toolchain was chosen.
    pub toolchain: Origin,
    /// The kernel.
    pub kernel: KernelInfo,
    /// The kernel's parameters and autotune list, as the worker read them.
    pub interface: KernelInterface,
    /// This shard's jobs, in plan order.
    pub outcomes: Vec<ShardOutcome>,
    /// Cache entries found broken and recomputed.
    pub recomputed: usize,
    /// Wall time of this shard.
    pub seconds: f64,
    /// How its workers started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<WorkersUsed>,
}

/// The run a shard belongs to, as the user asked for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invocation {
    /// The spec, as given on the command line.
    pub spec: String,
    /// `--targets`, as given (empty: the spec's or the default fleet).
    pub targets: Vec<String>,
    /// `--full-compile`.
    pub full_compile: bool,
    /// `--resources full`.
    pub read_resources: bool,
}

/// One job's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardOutcome {
    /// The job's cache key.
    pub key: String,
    /// What the compile came to.
    pub outcome: CompileOutcome,
    /// It came from the shard's result cache.
    pub cached: bool,
}
