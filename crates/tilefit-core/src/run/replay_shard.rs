//! A replay spread over shards: [`replay_shard`] plans every version group's recompiles and runs
//! its own part of their union; [`merge`] plans the same run again and takes each recompile's
//! outcome from its shard, so the report is the one a single run makes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use crate::compile::Settings;
use crate::compile::toolchain::Toolchain;
use crate::device::TargetDevice;
use crate::input::cache_index::CacheIndex;
use crate::judge::replay::Outcomes;
use crate::model::probe::ToolInfo;
use crate::model::replay::ReplayReport;
use crate::model::shard::{
    ReplayInvocation, ReplayShardReport, SHARD_SCHEMA_VERSION, ShardOutcome, ShardToolchain,
};
use crate::plan::Job;
use crate::plan::jobs::fleet_archs;
use crate::plan::shard::{self, Shard};

use super::replay::{GroupPlan, ReplayError, compile_group, plan_groups, report_of};

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
        let done = compile_group(plan, &mine, settings)?;
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
        kind: crate::model::kind::ReportKind::ReplayShard,
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
                    env: crate::compile::toolchain::triton_environment(),
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
