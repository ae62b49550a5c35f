//! `replay`: recompile every kernel a real workload compiled, straight from its Triton cache, for
//! every arch of the fleet, and judge the bytes against every device. The cache is indexed in Rust
//! (`input::cache_index`); each distinct kernel is recompiled from its cached IR file with the
//! options it was compiled with, by the Triton version that produced it (the caller supplies one
//! toolchain per version, so versions never mix). Only IR reaches the compiler: nothing from the
//! cache is imported or executed. Staged like a probe: the recompiles are planned in
//! `plan::replay`, compiled through the shared loop (`compile::compile_all`), and judged in
//! `judge::replay`.
//!
//! Sharded like a probe (`run::replay_shard`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::compile::WorkerFault;
use crate::compile::toolchain::Toolchain;
use crate::compile::{self, Scratch, Settings};
use crate::device::{Target, TargetDevice};
use crate::input::aoti::{self, AotiError, Package};
use crate::input::cache_index::CacheIndex;
use crate::input::caches::CachesError;
use crate::judge::replay::{Outcomes, judge, variants};
use crate::judge::shipped::judge_packages;
use crate::model::probe::ToolInfo;
use crate::model::replay::{REPLAY_SCHEMA_VERSION, ReplayReport, ReplayStats, VersionGroup};
use crate::plan::Job;
use crate::plan::jobs::fleet_archs;
use crate::plan::replay::recompiles;
use crate::vocab::CompileStatus;

/// Why a replay could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// Shards that do not make one run.
    #[error("{0}")]
    Shards(String),
    /// The caches could not be read.
    #[error(transparent)]
    Caches(#[from] CachesError),
    /// A package could not be read.
    #[error(transparent)]
    Package(#[from] AotiError),
    /// Packages given to a sharded replay.
    #[error(
        "a shipped package is judged as recorded, with no compile to share out: `{0}` cannot be replayed with `--shard`"
    )]
    ShardedPackage(String),
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
            ReplayError::Caches(error) => error.hint(),
            ReplayError::Worker { .. } | ReplayError::Package(AotiError::Read { .. }) => None,
            ReplayError::Package(AotiError::NoWrapper(_)) => Some(
                "give the `.pt2` that `torch._inductor.aoti_compile_and_package` wrote for a CUDA device, or the folder it unzips to".to_owned(),
            ),
            ReplayError::ShardedPackage(_) => Some(
                "replay the package in a run of its own, without `--shard`".to_owned(),
            ),
        }
    }
}

/// What a replay was given: Triton caches, indexed, and shipped packages, read.
pub struct Inputs {
    /// The caches.
    pub caches: Vec<PathBuf>,
    /// Their kernels.
    pub index: CacheIndex,
    /// The AOTInductor packages.
    pub packages: Vec<Package>,
}

impl Inputs {
    /// The line said before the compiles start.
    pub fn summary(&self, devices: usize) -> String {
        let shipped: usize = self.packages.iter().map(|p| p.kernels.len()).sum();
        let packages = if self.packages.is_empty() {
            String::new()
        } else {
            format!(
                " and {shipped} shipped kernels from {} packages (judged as recorded)",
                self.packages.len()
            )
        };
        format!(
            "tilefit: {} kernel variants from {} cache entries{packages}; judging for {devices} devices",
            self.index.kernels.len(),
            self.index.entries_scanned,
        )
    }
}

/// Sort `dirs` into packages (`input::aoti`) and caches, and read both; with no caches named
/// but packages, the default caches are not scanned.
pub fn inputs(dirs: &[PathBuf], cache_dir: &Path, sharded: bool) -> Result<Inputs, ReplayError> {
    let (packages, caches): (Vec<&PathBuf>, Vec<&PathBuf>) =
        dirs.iter().partition(|d| aoti::is_package(d));
    if let (true, Some(first)) = (sharded, packages.first()) {
        return Err(ReplayError::ShardedPackage(first.display().to_string()));
    }
    let packages = packages
        .into_iter()
        .map(|p| aoti::read(p))
        .collect::<Result<Vec<_>, _>>()?;
    if caches.is_empty() && !packages.is_empty() {
        let index = CacheIndex {
            skipped: packages.iter().flat_map(|p| p.problems.clone()).collect(),
            ..CacheIndex::default()
        };
        return Ok(Inputs {
            caches: Vec::new(),
            index,
            packages,
        });
    }
    let caches: Vec<PathBuf> = caches.into_iter().cloned().collect();
    let (caches, mut index) = crate::input::caches::index(&caches, cache_dir)?;
    index
        .skipped
        .extend(packages.iter().flat_map(|p| p.problems.clone()));
    Ok(Inputs {
        caches,
        index,
        packages,
    })
}

/// One version group, planned: its report line, its toolchain, and a slot and job per recompile.
pub(super) struct GroupPlan<'a> {
    pub(super) group: VersionGroup,
    pub(super) toolchain: &'a Toolchain,
    pub(super) slots: Vec<(usize, usize)>,
    pub(super) jobs: Vec<Job>,
}

pub(super) fn plan_groups<'a>(
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
            let context = crate::plan::KeyContext {
                source: String::new(),
                triton: toolchain.triton_version.clone(),
                python: toolchain.python_version.clone(),
                worker: worker.clone(),
                env: toolchain.env.clone(),
            };
            let depth = crate::plan::jobs::Depth {
                full: settings.full_compile,
                resources: settings.read_resources,
            };
            let (slots, jobs) = recompiles(index, &members, archs, &context, depth);
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
pub(super) fn compile_group(
    plan: &GroupPlan<'_>,
    jobs: &[Job],
    settings: &Settings,
) -> Result<compile::Compiled, ReplayError> {
    let scratch = Scratch::new(&settings.cache_dir, "replay");
    let pool = compile::pool_for(plan.toolchain, settings, &scratch);
    if compile::needs_workers(jobs, settings) {
        pool.warm_up().map_err(|source| ReplayError::Worker {
            version: plan.toolchain.triton_version.clone(),
            source,
        })?;
    }
    Ok(compile::compile_all(jobs, &pool, settings))
}

/// Replay every kernel of the index. `toolchains` pairs each recorded Triton version with the
/// toolchain that replays it (the binary provisions or picks them); each version group is compiled
/// by its own pool, so versions never mix.
pub fn replay(
    index: &CacheIndex,
    caches: &[PathBuf],
    packages: &[Package],
    targets: &[TargetDevice],
    toolchains: &[(Option<String>, Toolchain)],
    settings: &Settings,
) -> Result<ReplayReport, ReplayError> {
    let started = Instant::now();
    let archs = fleet_archs(targets);
    let groups = plan_groups(index, &archs, toolchains, settings);
    let mut outcomes: Outcomes = BTreeMap::new();
    for plan in &groups {
        let done = compile_group(plan, &plan.jobs, settings)?;
        for (slot, (outcome, cached)) in plan.slots.iter().zip(done.outcomes) {
            outcomes.insert(
                *slot,
                (outcome, cached, plan.toolchain.triton_version.clone()),
            );
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let mut report = report_of(index, caches, targets, &archs, groups, outcomes, seconds);
    let (kernels, results) = judge_packages(packages, report.kernels.len(), &archs, targets);
    report.stats.kernels += kernels.len();
    report.stats.unreadable_shipped = packages.iter().map(|p| p.problems.len()).sum();
    report.stats.jobs += results.len();
    report
        .caches
        .extend(packages.iter().map(|p| p.path.display().to_string()));
    report.kernels.extend(kernels);
    report.results.extend(results);
    Ok(report)
}

/// Judge every recompile and put the report together.
pub(super) fn report_of(
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
        unreadable_shipped: 0,
    };
    ReplayReport {
        schema_version: REPLAY_SCHEMA_VERSION,
        kind: crate::model::kind::ReportKind::Replay,
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
