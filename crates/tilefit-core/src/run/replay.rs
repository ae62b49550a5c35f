//! `replay`: recompile every kernel a real workload compiled, straight from its Triton cache, for
//! every arch of the fleet, and judge the bytes against every device. The cache is indexed in Rust
//! (`input::cache_index`); each distinct kernel is recompiled from its cached IR file with the
//! options it was compiled with, by the Triton version that produced it (the caller supplies one
//! toolchain per version, so versions never mix). Only IR reaches the compiler: nothing from the
//! cache is imported or executed. Compiles go through the shared loop (`compile::compile_all`).
//!
//! Sharded like a probe: [`replay_shard`] plans every version group's recompiles and runs its own
//! part of their union; [`merge`] plans the same run again and takes each recompile's outcome from
//! its shard, so the report is the one a single run makes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use serde_json::Value;

use crate::compile::WorkerFault;
use crate::compile::toolchain::Toolchain;
use crate::compile::{self, CompileOutcome, Event, Scratch, Settings};
use crate::device::{Target, TargetDevice};
use crate::input::cache_index::{CacheIndex, CachedKernel, PORTABLE_OPTIONS};
use crate::judge::probe::judge_on;
use crate::model::probe::ToolInfo;
use crate::model::replay::{
    KernelRef, KernelVariant, REPLAY_SCHEMA_VERSION, ReplayReport, ReplayResult, ReplayStats,
    VersionGroup,
};
use crate::model::shard::{
    ReplayInvocation, ReplayShardReport, SHARD_SCHEMA_VERSION, ShardOutcome, ShardToolchain,
};
use crate::plan::jobs::fleet_archs;
use crate::plan::shard::{self, Shard};
use crate::plan::{Job, KeyContext};
use crate::vocab::CompileStatus;
use crate::vocab::Request;

/// Why a replay could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// Shards that do not make one run.
    #[error("{0}")]
    Shards(String),
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

impl crate::hint::Hint for ReplayError {
    fn hint(&self) -> Option<String> {
        match self {
            ReplayError::Shards(_) => Some(
                "merge the `--json` files of every shard of one replay, made from the same caches (give them with `--caches` if they moved)".to_owned(),
            ),
            ReplayError::Worker { .. } => None,
        }
    }
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

/// One version group, planned: its report line, its toolchain, and a slot and job per recompile.
struct GroupPlan<'a> {
    group: VersionGroup,
    toolchain: &'a Toolchain,
    slots: Vec<(usize, usize)>,
    jobs: Vec<Job>,
}

fn plan_groups<'a>(
    index: &CacheIndex,
    archs: &[Target],
    toolchains: &'a [(Option<String>, Toolchain)],
    settings: &Settings,
) -> Vec<GroupPlan<'a>> {
    let worker = settings.worker_digest().unwrap_or_default();
    toolchains
        .iter()
        .filter_map(|(produced_by, toolchain)| {
            let members: Vec<usize> = (0..index.kernels.len())
                .filter(|&i| &index.kernels[i].triton_version == produced_by)
                .collect();
            if members.is_empty() {
                return None;
            }
            let (slots, jobs) = plan(index, &members, archs, toolchain, settings, &worker);
            Some(GroupPlan {
                group: VersionGroup {
                    produced_by: produced_by.clone(),
                    replayed_with: toolchain.triton_version.clone(),
                    python_version: toolchain.python_version.clone(),
                    kernels: members.len(),
                },
                toolchain,
                slots,
                jobs,
            })
        })
        .collect()
}

/// Compile a group's `jobs` (all of them, or a shard's) on a pool of its own toolchain.
fn compile_group(
    plan: &GroupPlan<'_>,
    jobs: &[Job],
    settings: &Settings,
    on_event: &mut dyn FnMut(Event),
) -> Result<compile::Compiled, ReplayError> {
    let scratch = Scratch::new(&settings.cache_dir, "replay");
    let pool = compile::pool_for(plan.toolchain, settings, &scratch);
    if compile::needs_workers(jobs, settings) {
        pool.warm_up().map_err(|source| ReplayError::Worker {
            version: plan.toolchain.triton_version.clone(),
            source,
        })?;
    }
    Ok(compile::compile_all(jobs, &pool, settings, on_event))
}

/// Replay every kernel of the index. `toolchains` pairs each recorded Triton version with the
/// toolchain that replays it (the binary provisions or picks them); each version group is compiled
/// by its own pool, so versions never mix.
pub fn replay(
    index: &CacheIndex,
    caches: &[PathBuf],
    targets: &[TargetDevice],
    toolchains: &[(Option<String>, Toolchain)],
    settings: &Settings,
    on_event: &mut dyn FnMut(Event),
) -> Result<ReplayReport, ReplayError> {
    let started = Instant::now();
    let archs = fleet_archs(targets);
    let groups = plan_groups(index, &archs, toolchains, settings);
    let mut outcomes: Outcomes = BTreeMap::new();
    for plan in &groups {
        let done = compile_group(plan, &plan.jobs, settings, on_event)?;
        for (slot, (outcome, cached)) in plan.slots.iter().zip(done.outcomes) {
            outcomes.insert(
                *slot,
                (outcome, cached, plan.toolchain.triton_version.clone()),
            );
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(report_of(
        index, caches, targets, &archs, groups, outcomes, seconds,
    ))
}

/// Judge every recompile and put the report together.
fn report_of(
    index: &CacheIndex,
    caches: &[PathBuf],
    targets: &[TargetDevice],
    archs: &[Target],
    groups: Vec<GroupPlan<'_>>,
    outcomes: Outcomes,
    seconds: f64,
) -> ReplayReport {
    let kernels = variants(index);
    let compiled = outcomes.values().filter(|(_, cached, _)| !cached).count();
    let complete = compile::complete(outcomes.values().map(|(o, _, _)| o));
    let results = judge(&kernels, archs, targets, outcomes);
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
        seconds,
        complete,
    };
    ReplayReport {
        schema_version: REPLAY_SCHEMA_VERSION,
        kind: "replay".to_owned(),
        tool: ToolInfo::current(),
        caches: caches.iter().map(|c| c.display().to_string()).collect(),
        versions: groups.into_iter().map(|g| g.group).collect(),
        targets: targets.to_vec(),
        kernels,
        results,
        skipped: index.skipped.clone(),
        stats,
    }
}

/// The digest that says two replay shards belong to one run: the fleet, and every recompile's
/// slot and key (which cover each IR file, the Triton and Python versions and the worker).
fn plan_digest(targets: &[TargetDevice], groups: &[GroupPlan<'_>]) -> String {
    let material = serde_json::json!({
        "targets": targets,
        "jobs": groups.iter().flat_map(|g| g.slots.iter().zip(&g.jobs))
            .map(|(slot, job)| serde_json::json!([slot, job.key]))
            .collect::<Vec<_>>(),
    });
    crate::digest::sha256(material.to_string().as_bytes())
}

/// Run shard `shard` of a replay: plan every group, recompile this shard's part of the union.
pub fn replay_shard(
    index: &CacheIndex,
    invocation: ReplayInvocation,
    targets: &[TargetDevice],
    toolchains: &[(Option<String>, Toolchain)],
    settings: &Settings,
    shard: Shard,
    on_event: &mut dyn FnMut(Event),
) -> Result<ReplayShardReport, ReplayError> {
    let started = Instant::now();
    let archs = fleet_archs(targets);
    let groups = plan_groups(index, &archs, toolchains, settings);
    let all: Vec<Job> = groups.iter().flat_map(|g| g.jobs.iter().cloned()).collect();
    let assigned = shard::assign(&all, shard.count);
    let mut next = assigned.into_iter();
    let mut outcomes = Vec::new();
    for plan in &groups {
        let mine: Vec<Job> = plan
            .jobs
            .iter()
            .filter(|_| next.next() == Some(shard.index))
            .cloned()
            .collect();
        let done = compile_group(plan, &mine, settings, on_event)?;
        outcomes.extend(
            mine.iter()
                .zip(done.outcomes)
                .map(|(job, (outcome, cached))| ShardOutcome {
                    key: job.key.clone(),
                    outcome,
                    cached,
                }),
        );
    }
    Ok(ReplayShardReport {
        schema_version: SHARD_SCHEMA_VERSION,
        kind: "replay-shard".to_owned(),
        tool: ToolInfo::current(),
        shard,
        plan_sha256: plan_digest(targets, &groups),
        jobs_total: all.len(),
        invocation,
        toolchains: groups
            .iter()
            .map(|g| ShardToolchain {
                produced_by: g.group.produced_by.clone(),
                triton_version: g.toolchain.triton_version.clone(),
                python_version: g.toolchain.python_version.clone(),
                origin: g.toolchain.origin,
            })
            .collect(),
        outcomes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The toolchains a replay's shards used, as the merge plans with them (nothing runs them).
pub fn shard_toolchains(shard: &ReplayShardReport) -> Vec<(Option<String>, Toolchain)> {
    shard
        .toolchains
        .iter()
        .map(|t| {
            (
                t.produced_by.clone(),
                Toolchain {
                    // Not run: the merge compiles nothing.
                    python: PathBuf::new(),
                    python_version: t.python_version.clone(),
                    triton_version: t.triton_version.clone(),
                    origin: t.origin,
                },
            )
        })
        .collect()
}

/// Put the shards of one replay back together: every shard once, of one run, planned again from
/// the same caches here.
pub fn merge(
    index: &CacheIndex,
    caches: &[PathBuf],
    targets: &[TargetDevice],
    settings: &Settings,
    shards: &[ReplayShardReport],
) -> Result<ReplayReport, ReplayError> {
    let first = shards
        .first()
        .ok_or_else(|| ReplayError::Shards("no shards to merge".to_owned()))?;
    let identities: Vec<crate::model::shard::ShardIdentity<'_>> =
        shards.iter().map(ReplayShardReport::identity).collect();
    crate::model::shard::check_one_run(&identities).map_err(ReplayError::Shards)?;
    let toolchains = shard_toolchains(first);
    let archs = fleet_archs(targets);
    let groups = plan_groups(index, &archs, &toolchains, settings);
    if plan_digest(targets, &groups) != first.plan_sha256 {
        return Err(ReplayError::Shards(
            "the shards were not made from these caches as they are here (an entry, the fleet or tilefit itself differs)".to_owned(),
        ));
    }
    let by_key = crate::model::shard::by_key(shards.iter().flat_map(|s| &s.outcomes));
    let mut outcomes: Outcomes = BTreeMap::new();
    for plan in &groups {
        for (slot, job) in plan.slots.iter().zip(&plan.jobs) {
            let found = by_key.get(job.key.as_str()).ok_or_else(|| {
                ReplayError::Shards(format!(
                    "no shard has the recompile `{}`: merge every shard of the run",
                    job.label
                ))
            })?;
            outcomes.insert(
                *slot,
                (
                    found.outcome.clone(),
                    found.cached,
                    plan.toolchain.triton_version.clone(),
                ),
            );
        }
    }
    let seconds = shards.iter().map(|s| s.seconds).fold(0.0, f64::max);
    Ok(report_of(
        index, caches, targets, &archs, groups, outcomes, seconds,
    ))
}

/// (kernel, arch) slot -> its outcome, whether it came from the cache, and the Triton that
/// replayed it.
type Outcomes = BTreeMap<(usize, usize), (CompileOutcome, bool, String)>;

/// One recompile per (member kernel, arch): its slot and its job under the one key scheme (the
/// IR file's digest stands for the source).
fn plan(
    index: &CacheIndex,
    members: &[usize],
    archs: &[Target],
    toolchain: &Toolchain,
    settings: &Settings,
    worker: &str,
) -> (Vec<(usize, usize)>, Vec<Job>) {
    let mut slots = Vec::new();
    let mut jobs = Vec::new();
    for &kernel in members {
        let cached_kernel = &index.kernels[kernel];
        let context = KeyContext {
            source: crate::digest::sha256(&std::fs::read(&cached_kernel.ir).unwrap_or_default()),
            triton: toolchain.triton_version.clone(),
            python: toolchain.python_version.clone(),
            worker: worker.to_owned(),
        };
        for (arch_index, target) in archs.iter().enumerate() {
            let request = Request::CompileIr {
                ir_file: cached_kernel.ir.clone(),
                options: replay_options(cached_kernel, target),
                target: target.clone(),
                full: settings.full_compile || settings.read_resources,
                resources: settings.read_resources,
                binary_dir: None,
            };
            slots.push((kernel, arch_index));
            jobs.push(Job {
                key: crate::plan::key(&request, &context),
                label: format!("{} {}", target.arch, cached_kernel.name),
                cost: 1,
                request,
            });
        }
    }
    (slots, jobs)
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
                .map(|d| judge_on(d, &outcome))
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
            PORTABLE_OPTIONS.contains(&key.as_str()) || target.backend == kernel.backend
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}
