//! A shard's report: what one machine of a sharded run compiled, with what `tilefit merge` needs to
//! judge the whole run without a Python or Triton of its own: the run as asked for, the Triton and
//! Python that compiled, the kernel's interface as the worker read it, a digest of the whole plan,
//! and each compiled job's outcome by cache key. Data only: `run::probe` writes and reads it.

use serde::{Deserialize, Serialize};

use crate::compile::toolchain::Origin;
use crate::compile::{CompileOutcome, WorkersUsed};
use crate::model::probe::{KernelInfo, ToolInfo};
use crate::plan::shard::Shard;
use crate::vocab::KernelInterface;

/// The version of the shard format.
pub const SHARD_SCHEMA_VERSION: u32 = 1;

/// One shard's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardReport {
    /// [`SHARD_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `probe-shard`.
    pub kind: crate::model::kind::ReportKind,
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

/// One shard of a sharded replay: the recompiles it ran, and what the merge needs to index the
/// same caches and plan the same run (the caches as given, the fleet, the toolchain of each
/// recorded Triton version).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayShardReport {
    /// [`SHARD_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `replay-shard`.
    pub kind: crate::model::kind::ReportKind,
    /// The tilefit that wrote it.
    pub tool: ToolInfo,
    /// Which shard.
    pub shard: Shard,
    /// Digest of the whole run's plan (the fleet and every recompile's slot and cache key).
    pub plan_sha256: String,
    /// Recompiles in the whole run.
    pub jobs_total: usize,
    /// The run as asked for.
    pub invocation: ReplayInvocation,
    /// The toolchain each recorded Triton version was replayed with.
    pub toolchains: Vec<ShardToolchain>,
    /// This shard's recompiles.
    pub outcomes: Vec<ShardOutcome>,
    /// Wall time of this shard.
    pub seconds: f64,
}

/// A replay as the user asked for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayInvocation {
    /// The caches, traces and Inductor folders given (or, with none given, the default caches
    /// found).
    pub dirs: Vec<String>,
    /// `--targets`, as given.
    pub targets: Vec<String>,
    /// `--full-compile`.
    pub full_compile: bool,
    /// `--resources full`.
    pub read_resources: bool,
}

/// The toolchain of one version group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardToolchain {
    /// The Triton version the cache entries record (`None`: not recorded).
    pub produced_by: Option<String>,
    /// The Triton that replayed them.
    pub triton_version: String,
    /// Its Python.
    pub python_version: String,
    /// How it was chosen.
    pub origin: Origin,
}

/// Shards' outcomes by cache key, for the merge to look each planned job up.
pub fn by_key<'a>(
    outcomes: impl IntoIterator<Item = &'a ShardOutcome>,
) -> std::collections::HashMap<&'a str, &'a ShardOutcome> {
    outcomes.into_iter().map(|o| (o.key.as_str(), o)).collect()
}

/// What says which run a shard belongs to, for [`check_one_run`].
pub struct ShardIdentity<'a> {
    /// The shard.
    pub shard: Shard,
    /// Its kind and schema.
    pub kind: crate::model::kind::ReportKind,
    /// Its schema version.
    pub schema_version: u32,
    /// Its run's plan digest.
    pub plan_sha256: &'a str,
    /// How to name its inputs in an error.
    pub inputs: String,
}

impl ShardReport {
    /// Its identity.
    pub fn identity(&self) -> ShardIdentity<'_> {
        ShardIdentity {
            shard: self.shard,
            kind: self.kind,
            schema_version: self.schema_version,
            plan_sha256: &self.plan_sha256,
            inputs: format!("{}, Triton {}", self.invocation.spec, self.triton_version),
        }
    }
}

impl ReplayShardReport {
    /// Its identity.
    pub fn identity(&self) -> ShardIdentity<'_> {
        ShardIdentity {
            shard: self.shard,
            kind: self.kind,
            schema_version: self.schema_version,
            plan_sha256: &self.plan_sha256,
            inputs: self.invocation.dirs.join(", "),
        }
    }
}

/// (jobs this shard compiled, of them FAILED, jobs of the whole run).
fn tally(outcomes: &[ShardOutcome], total: usize) -> (usize, usize, usize) {
    let failed = outcomes
        .iter()
        .filter(|o| o.outcome.status == crate::vocab::CompileStatus::Failed)
        .count();
    (outcomes.len(), failed, total)
}

/// What a written shard says of itself, probe's and replay's alike.
pub trait ShardFile: Serialize {
    /// `2/3`.
    fn describe(&self) -> String;
    /// (jobs this shard compiled, of them FAILED, jobs of the whole run).
    fn tally(&self) -> (usize, usize, usize);
}

impl ShardFile for ShardReport {
    fn describe(&self) -> String {
        self.shard.describe()
    }

    fn tally(&self) -> (usize, usize, usize) {
        tally(&self.outcomes, self.jobs_total)
    }
}

impl ShardFile for ReplayShardReport {
    fn describe(&self) -> String {
        self.shard.describe()
    }

    fn tally(&self) -> (usize, usize, usize) {
        tally(&self.outcomes, self.jobs_total)
    }
}

/// How many missing shards an error names before it counts the rest.
const NAMED_MISSING: usize = 5;

/// Every shard of one run, each once; else what is wrong, in words.
pub fn check_one_run(shards: &[ShardIdentity<'_>]) -> Result<(), String> {
    let Some(first) = shards.first() else {
        return Err("no shards to merge".to_owned());
    };
    for shard in shards {
        if shard.schema_version != SHARD_SCHEMA_VERSION || shard.kind != first.kind {
            return Err(format!(
                "shard {} is a `{}` of schema {}, not a `{}` of schema {SHARD_SCHEMA_VERSION}",
                shard.shard.describe(),
                shard.kind,
                shard.schema_version,
                first.kind
            ));
        }
        if shard.plan_sha256 != first.plan_sha256 || shard.shard.count != first.shard.count {
            return Err(format!(
                "shard {} ({}) and shard {} ({}) are not of one run: their inputs differ",
                first.shard.describe(),
                first.inputs,
                shard.shard.describe(),
                shard.inputs
            ));
        }
    }
    let count = first.shard.count;
    let mut seen = std::collections::BTreeSet::new();
    for shard in shards {
        // Checked when the file was read, and again here: a range error is a message, never a
        // panic, whoever built the identity.
        crate::plan::shard::Shard::checked(shard.shard.index, shard.shard.count)
            .map_err(|problem| format!("shard {}: {problem}", shard.shard.describe()))?;
        if !seen.insert(shard.shard.index) {
            return Err(format!("shard {} is given twice", shard.shard.describe()));
        }
    }
    let missing = count - seen.len();
    if missing == 0 {
        return Ok(());
    }
    // Name the first few missing shards, then count the rest: one short line however many.
    let named: Vec<String> = (1..=count)
        .filter(|i| !seen.contains(i))
        .take(NAMED_MISSING)
        .map(|i| format!("{i}/{count}"))
        .collect();
    let rest = if missing > named.len() {
        format!(" and {} more", missing - named.len())
    } else {
        String::new()
    };
    Err(format!(
        "{} of {count} shards are missing: {}{rest}",
        missing,
        named.join(", ")
    ))
}
