//! Replay: recompile every kernel a real workload compiled, straight from its Triton cache, for
//! every arch of the fleet, and judge the bytes against every device. The cache is indexed in Rust
//! (`scan.rs`); each distinct kernel is recompiled from its cached IR file with the options it was
//! compiled with, by the Triton version that produced it (the caller supplies one toolchain per
//! version, so versions are never mixed). Only IR reaches the compiler: nothing from the cache is
//! imported or executed. Besides plain Triton caches, `sources.rs` finds `torch.compile`'s Inductor
//! cache and unpacks tritonparse traces into cache-shaped folders.

pub mod scan;
pub mod sources;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use scan::{CacheIndex, CachedKernel, IrArg, ScanError, Skipped, scan};

use crate::cache::{Lookup, ResultCache};
use crate::device::Backend;
use crate::job::{self, Target};
use crate::probe::{CompileOutcome, OutcomeError, ProbeEvent, TargetDevice, ToolInfo};
use crate::toolchain::Toolchain;
use crate::verdict::{CompileStatus, DeviceVerdict};
use crate::worker::{Pool, WorkerCommand, WorkerFault};

/// Version of the replay report's JSON shape.
pub const REPLAY_SCHEMA_VERSION: u32 = 1;

/// One distinct kernel variant found in the caches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelVariant {
    /// Short id (the start of Triton's own hash of the compile).
    pub id: String,
    /// Function name.
    pub name: String,
    /// `file.py:line` of its definition, from the IR.
    pub source: Option<String>,
    /// The Triton version that produced it.
    pub triton_version: Option<String>,
    /// The arch it was compiled for.
    pub original_arch: String,
    /// `metadata.shared` there.
    pub original_shared_bytes: Option<u64>,
    /// Options it was compiled with (and is replayed with).
    pub options: BTreeMap<String, Value>,
    /// Its arguments: types and divisibility, which tell specializations apart.
    pub args: Vec<IrArg>,
    /// The `tl.arange` lengths in its IR: the tile sizes its constexprs chose (constexpr values
    /// themselves are folded away before the IR is cached).
    pub tile_ranges: Vec<u64>,
    /// The cache folder it was read from.
    pub entry: String,
    /// How many identical entries the caches hold.
    pub copies: usize,
}

/// One (kernel variant, arch) recompile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayResult {
    /// The variant (see `kernels`).
    pub kernel: KernelRef,
    /// Options, as in a probe result's config.
    pub config: BTreeMap<String, Value>,
    /// The arch recompiled for.
    pub arch: String,
    /// Its backend.
    pub backend: Backend,
    /// How it went.
    pub status: CompileStatus,
    /// `metadata.shared` on this arch.
    pub shared_bytes: Option<u64>,
    /// The arch the workload compiled for, and its bytes there, beside the new ones.
    pub original_arch: String,
    /// `metadata.shared` on the original arch.
    pub original_shared_bytes: Option<u64>,
    /// Error kind and first line.
    pub error: Option<OutcomeError>,
    /// Came from the result cache.
    pub cached: bool,
    /// The Triton version that recompiled it.
    pub replayed_with: String,
    /// The compiled binary, when binaries were asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<PathBuf>,
    /// Registers, local memory and spills from the binary (`--resources full`), flattened.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<crate::resources::KernelResources>,
    /// Why the binary's resources could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_error: Option<String>,
    /// The kernel's symbol in the binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_name: Option<String>,
    /// One verdict per device of this arch.
    pub verdicts: Vec<DeviceVerdict>,
}

/// A reference to a variant, as carried by each result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelRef {
    /// Index into `kernels`.
    pub index: usize,
    /// The variant's id.
    pub id: String,
    /// Its function name.
    pub name: String,
    /// Its source location.
    pub source: Option<String>,
}

/// A Triton version found in the caches and the toolchain that replayed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionGroup {
    /// The version recorded in the cache entries (`None`: not recorded).
    pub produced_by: Option<String>,
    /// The Triton version that recompiled them.
    pub replayed_with: String,
    /// The Python of that toolchain.
    pub python_version: String,
    /// Variants in this group.
    pub kernels: usize,
}

/// Counts and time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayStats {
    /// Cache folders looked at.
    pub entries_scanned: usize,
    /// Distinct kernel variants.
    pub kernels: usize,
    /// Folders that are not kernels.
    pub other_entries: usize,
    /// Kernel entries skipped.
    pub skipped: usize,
    /// Recompiles (variants x archs).
    pub jobs: usize,
    /// Compiled in this run.
    pub compiled: usize,
    /// From the result cache.
    pub cached: usize,
    /// Worker faults, and recompiles an interrupt stopped.
    pub failed: usize,
    /// Wall time of the recompiles.
    pub seconds: f64,
    /// False when the run was interrupted.
    #[serde(default = "crate::probe::complete_by_default")]
    pub complete: bool,
}

/// Everything a replay found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    /// [`REPLAY_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `replay`: tells a saved replay report from a probe report.
    pub kind: String,
    /// tilefit's name and version.
    pub tool: ToolInfo,
    /// The cache directories.
    pub caches: Vec<String>,
    /// Triton versions: produced by, replayed with.
    pub versions: Vec<VersionGroup>,
    /// The fleet.
    pub targets: Vec<TargetDevice>,
    /// Distinct kernel variants.
    pub kernels: Vec<KernelVariant>,
    /// Variant-major, then arch in fleet order.
    pub results: Vec<ReplayResult>,
    /// Entries that could not be replayed, with the reason.
    pub skipped: Vec<Skipped>,
    /// Counts.
    pub stats: ReplayStats,
}

/// How to run.
#[derive(Debug, Clone)]
pub struct ReplaySettings {
    /// Worker processes.
    pub jobs: usize,
    /// Read and write the result cache.
    pub use_cache: bool,
    /// Per-job timeout.
    pub job_timeout: Duration,
    /// tilefit's cache directory.
    pub cache_dir: PathBuf,
    /// Keep each compiled binary in this folder (`tilefit verify`); the cache is not used then.
    pub binaries: Option<PathBuf>,
    /// Compile through the cubin instead of stopping after shared-memory allocation.
    pub full_compile: bool,
    /// Read registers, local memory, spills and launch bounds from each binary
    /// (`--resources full`); implies the whole compile.
    pub read_resources: bool,
    /// Raised on SIGINT/SIGTERM: the run stops and reports what finished, marked incomplete.
    pub cancel: crate::cancel::Cancel,
}

/// Why a replay could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// A worker could not start for a version group.
    #[error("the compile worker for Triton {version} could not start")]
    Worker {
        /// The Triton version.
        version: String,
        /// The fault.
        #[source]
        source: WorkerFault,
    },
}

static MAKE_RANGE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"tt\.make_range \{end = (\d+) : i32, start = (\d+) : i32\}")
        .expect("literal")
});

/// Distinct `tt.make_range` lengths, ascending.
fn tile_ranges(ir: &str) -> Vec<u64> {
    let mut ranges: Vec<u64> = MAKE_RANGE
        .captures_iter(ir)
        .filter_map(|c| {
            Some(
                c[1].parse::<u64>()
                    .ok()?
                    .saturating_sub(c[2].parse::<u64>().ok()?),
            )
        })
        .collect();
    ranges.sort_unstable();
    ranges.dedup();
    ranges
}

/// The short id of a variant.
fn short_id(hash: &str) -> String {
    hash.chars().take(8).collect()
}

/// Replay every kernel of the index. `toolchains` pairs each recorded Triton version with the
/// toolchain that replays it (the binary provisions or picks them); each version group is compiled
/// by its own pool, so versions never mix.
pub fn replay(
    index: &CacheIndex,
    caches: &[PathBuf],
    targets: &[TargetDevice],
    toolchains: &[(Option<String>, Toolchain)],
    settings: &ReplaySettings,
    on_event: &mut dyn FnMut(ProbeEvent),
) -> Result<ReplayReport, ReplayError> {
    let started = Instant::now();
    let kernels = variants(index);
    let archs = fleet_archs(targets);
    let mut outcomes: BTreeMap<(usize, usize), (CompileOutcome, bool, String)> = BTreeMap::new();
    let mut versions = Vec::new();
    let mut compiled = 0;
    for (produced_by, toolchain) in toolchains {
        let members: Vec<usize> = (0..index.kernels.len())
            .filter(|&i| &index.kernels[i].triton_version == produced_by)
            .collect();
        if members.is_empty() {
            continue;
        }
        versions.push(VersionGroup {
            produced_by: produced_by.clone(),
            replayed_with: toolchain.triton_version.clone(),
            python_version: toolchain.python_version.clone(),
            kernels: members.len(),
        });
        let group = Group {
            index,
            archs: &archs,
            toolchain,
            settings,
            cache: ResultCache::new(&settings.cache_dir),
        };
        let pending = group.plan(&members, &mut outcomes);
        on_event(ProbeEvent::Planned {
            jobs: index.kernels.len() * archs.len(),
            cached: outcomes.len(),
            to_compile: pending.len(),
        });
        compiled += pending.len();
        group.compile(&pending, versions.len(), &mut outcomes, on_event)?;
    }
    let results = judge(&kernels, &archs, targets, outcomes);
    let stats = ReplayStats {
        entries_scanned: index.entries_scanned,
        kernels: kernels.len(),
        other_entries: index.other_entries,
        skipped: index.skipped.len(),
        jobs: results.len(),
        compiled,
        cached: results.iter().filter(|r| r.cached).count(),
        failed: results
            .iter()
            .filter(|r| r.status == CompileStatus::Failed)
            .count(),
        seconds: started.elapsed().as_secs_f64(),
        complete: !settings.cancel.is_cancelled(),
    };
    Ok(ReplayReport {
        schema_version: REPLAY_SCHEMA_VERSION,
        kind: "replay".to_owned(),
        tool: ToolInfo {
            name: "tilefit".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        },
        caches: caches.iter().map(|c| c.display().to_string()).collect(),
        versions,
        targets: targets.to_vec(),
        kernels,
        results,
        skipped: index.skipped.clone(),
        stats,
    })
}

/// The report's view of each distinct kernel.
fn variants(index: &CacheIndex) -> Vec<KernelVariant> {
    index
        .kernels
        .iter()
        .zip(&index.copies)
        .map(|(k, copies)| KernelVariant {
            id: short_id(&k.hash),
            name: k.name.clone(),
            source: k.source.clone(),
            triton_version: k.triton_version.clone(),
            original_arch: k.arch.clone(),
            original_shared_bytes: k.shared,
            options: k.options.clone(),
            args: k.args.clone(),
            tile_ranges: std::fs::read_to_string(&k.ir)
                .map(|ir| tile_ranges(&ir))
                .unwrap_or_default(),
            entry: k.entry.display().to_string(),
            copies: *copies,
        })
        .collect()
}

/// Distinct archs of the fleet, in fleet order: each kernel compiles once per arch.
fn fleet_archs(targets: &[TargetDevice]) -> Vec<Target> {
    let mut archs: Vec<Target> = Vec::new();
    for device in targets {
        if !archs.iter().any(|t| t.arch == device.arch) {
            archs.push(Target {
                backend: device.backend,
                arch: device.arch.clone(),
                warp_size: device.warp_size,
            });
        }
    }
    archs
}

type Outcomes = BTreeMap<(usize, usize), (CompileOutcome, bool, String)>;

/// The kernels of one Triton version and the toolchain that replays them.
struct Group<'a> {
    index: &'a CacheIndex,
    archs: &'a [Target],
    toolchain: &'a Toolchain,
    settings: &'a ReplaySettings,
    cache: ResultCache,
}

/// A recompile still to do: (kernel, arch) slot, request, cache key.
type Pending = ((usize, usize), serde_json::Value, String);

impl Group<'_> {
    /// Take what the result cache has; return the recompiles still to do.
    fn plan(&self, members: &[usize], outcomes: &mut Outcomes) -> Vec<Pending> {
        let worker_digest = job::sha256(crate::worker::WORKER_SCRIPT.as_bytes());
        let mut pending = Vec::new();
        for &kernel in members {
            let cached_kernel = &self.index.kernels[kernel];
            let ir_digest = job::sha256(&std::fs::read(&cached_kernel.ir).unwrap_or_default());
            for (arch_index, target) in self.archs.iter().enumerate() {
                let options = replay_options(cached_kernel, target);
                let key = job::sha256(
                    serde_json::json!({
                        "kind": "replay",
                        "ir": ir_digest,
                        "options": options,
                        "target": target,
                        "triton": self.toolchain.triton_version,
                        "python": self.toolchain.python_version,
                        "worker": worker_digest,
                        "full": self.settings.full_compile,
                        "resources": self.settings.read_resources,
                    })
                    .to_string()
                    .as_bytes(),
                );
                if self.settings.use_cache
                    && self.settings.binaries.is_none()
                    && let Lookup::Hit(outcome) = self.cache.get::<CompileOutcome>(&key)
                {
                    let replayed_with = self.toolchain.triton_version.clone();
                    outcomes.insert((kernel, arch_index), (outcome, true, replayed_with));
                    continue;
                }
                let mut request = serde_json::json!({
                    "type": "compile_ir",
                    "ir_file": cached_kernel.ir,
                    "options": options,
                    "target": target,
                    "full": self.settings.full_compile || self.settings.read_resources,
                    "resources": self.settings.read_resources,
                });
                if let Some(dir) = &self.settings.binaries {
                    request["binary_dir"] = Value::from(dir.display().to_string());
                }
                pending.push(((kernel, arch_index), request, key));
            }
        }
        pending
    }

    /// Recompile on a pool of this group's toolchain, caching each outcome as it arrives.
    fn compile(
        &self,
        pending: &[Pending],
        group_number: usize,
        outcomes: &mut Outcomes,
        on_event: &mut dyn FnMut(ProbeEvent),
    ) -> Result<(), ReplayError> {
        if pending.is_empty() {
            return Ok(());
        }
        let scratch = self
            .settings
            .cache_dir
            .join("scratch")
            .join(format!("replay-{}-{group_number}", std::process::id()));
        let command = WorkerCommand {
            cancel: self.settings.cancel.clone(),
            ..WorkerCommand::embedded(self.toolchain.python.clone(), scratch.clone())
        };
        let pool = Pool::new(command, self.settings.jobs, self.settings.job_timeout);
        pool.warm_up().map_err(|source| ReplayError::Worker {
            version: self.toolchain.triton_version.clone(),
            source,
        })?;
        let requests = pending.iter().map(|(_, r, _)| r.clone()).collect();
        let mut done = 0;
        pool.run(requests, |position, result| {
            let (slot, _, key) = &pending[position];
            let outcome = match &result {
                Ok(reply) => CompileOutcome::from_reply(reply),
                Err(fault) => CompileOutcome::from_fault(fault),
            };
            if self.settings.use_cache && self.settings.binaries.is_none() && outcome.cacheable() {
                let _ = self.cache.put(key, &outcome);
            }
            done += 1;
            on_event(ProbeEvent::Compiled {
                done,
                total: pending.len(),
                label: format!(
                    "{} {}",
                    self.archs[slot.1].arch, self.index.kernels[slot.0].name
                ),
            });
            outcomes.insert(
                *slot,
                (outcome, false, self.toolchain.triton_version.clone()),
            );
        });
        drop(pool);
        let _ = std::fs::remove_dir_all(&scratch);
        Ok(())
    }
}

/// One result per (kernel, arch), with a verdict per device of that arch.
fn judge(
    kernels: &[KernelVariant],
    archs: &[Target],
    targets: &[TargetDevice],
    outcomes: Outcomes,
) -> Vec<ReplayResult> {
    outcomes
        .into_iter()
        .map(|((kernel, arch_index), (outcome, cached, replayed_with))| {
            let variant = &kernels[kernel];
            let target = &archs[arch_index];
            let verdicts = targets
                .iter()
                .filter(|d| d.arch == target.arch)
                .map(|d| crate::probe::judge_on(d, &outcome))
                .collect();
            ReplayResult {
                kernel: KernelRef {
                    index: kernel,
                    id: variant.id.clone(),
                    name: variant.name.clone(),
                    source: variant.source.clone(),
                },
                config: variant.options.clone(),
                arch: target.arch.clone(),
                backend: target.backend,
                status: outcome.status,
                shared_bytes: outcome.shared,
                original_arch: variant.original_arch.clone(),
                original_shared_bytes: variant.original_shared_bytes,
                error: outcome.error,
                cached,
                replayed_with,
                binary: outcome.binary,
                kernel_name: outcome.kernel_name,
                resources: outcome.resources,
                resources_error: outcome.resources_error,
                verdicts,
            }
        })
        .collect()
}

/// The options a cached kernel is recompiled with on `target`: the portable ones always, the
/// backend-specific ones only on its own backend.
fn replay_options(kernel: &CachedKernel, target: &Target) -> BTreeMap<String, Value> {
    kernel
        .options
        .iter()
        .filter(|(key, _)| {
            scan::PORTABLE_OPTIONS.contains(&key.as_str()) || target.backend == kernel.backend
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}
