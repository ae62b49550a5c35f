//! A probe spread over shards: [`probe_shard`] plans the whole sweep and compiles only its
//! shard's jobs into a [`ShardReport`]; [`merge`] plans the sweep again from the same inputs and
//! takes every job's outcome from the shards instead of compiling, so the rest of the pipeline,
//! and the report, is the one a single run makes.

use std::time::Instant;

use crate::compile::Settings;
use crate::compile::toolchain::Toolchain;
use crate::device::TargetDevice;
use crate::input::spec::Sweep;
use crate::model::probe::{KernelInfo, ProbeReport, ToolInfo};
use crate::model::shard::{Invocation, SHARD_SCHEMA_VERSION, ShardOutcome, ShardReport};
use crate::plan::shard::{self, Shard};

use super::pipeline::{
    Pipeline, Planned, Setup, Totals, depth, key_context, loaded_context, plan_sweep, rejected,
    report_of,
};
use super::probe_error::ProbeError;

/// The digest that says two shards belong to one run: the spec file, the fleet, and every job's
/// config and cache key in plan order (the keys cover the kernel source, the Triton and Python
/// versions and the worker script).
fn plan_digest(spec: &Sweep, planned: &Planned) -> Result<String, ProbeError> {
    // A sweep made in memory (a captured compile) has no file: what it was made from stands in.
    let spec_bytes = match spec.origin.spec_file() {
        Some(path) => std::fs::read(path).map_err(|source| ProbeError::Io {
            path: path.display().to_string(),
            source,
        })?,
        None => spec.origin.shown().into_bytes(),
    };
    let material = serde_json::json!({
        "spec": crate::digest::sha256(&spec_bytes),
        "targets": planned.prepared.targets,
        "jobs": planned.jobs.iter().map(|job| serde_json::json!([
            job.config_index,
            crate::vocab::describe_config(&planned.configs[job.config_index]),
            job.job.key,
        ])).collect::<Vec<_>>(),
    });
    Ok(crate::digest::sha256(material.to_string().as_bytes()))
}

/// Run shard `shard` of a probe: plan the whole sweep, compile this shard's jobs.
pub fn probe_shard(
    pipeline: &Pipeline<'_>,
    spec: &Sweep,
    invocation: Invocation,
    targets: &[TargetDevice],
    shard: Shard,
) -> Result<ShardReport, ProbeError> {
    let started = Instant::now();
    let (toolchain, settings) = (pipeline.toolchain(), pipeline.settings());
    let setup = pipeline.setup(spec)?;
    let planned = plan_sweep(spec, targets, &setup, depth(settings), &settings.cancel)?;
    let plan_sha256 = plan_digest(spec, &planned)?;
    let all: Vec<crate::plan::Job> = planned.jobs.iter().map(|p| p.job.clone()).collect();
    let mine: Vec<crate::plan::Job> = all
        .iter()
        .zip(shard::assign(&all, shard.count))
        .filter(|(_, s)| *s == shard.index)
        .map(|(job, _)| job.clone())
        .collect();
    let compiled = pipeline.compile(&mine);
    if let Some(message) = compiled.input_error {
        return Err(rejected(spec, &message));
    }
    Ok(ShardReport {
        schema_version: SHARD_SCHEMA_VERSION,
        kind: crate::model::kind::ReportKind::ProbeShard,
        tool: ToolInfo::current(),
        shard,
        plan_sha256,
        jobs_total: all.len(),
        invocation,
        triton_version: toolchain.triton_version.clone(),
        python_version: toolchain.python_version.clone(),
        toolchain: toolchain.origin,
        kernel: KernelInfo::of(spec, &setup.interface, setup.source_sha256),
        interface: setup.interface,
        outcomes: mine
            .iter()
            .zip(compiled.outcomes)
            .map(|(job, (outcome, cached))| ShardOutcome {
                key: job.key.clone(),
                outcome,
                cached,
            })
            .collect(),
        recomputed: compiled.recomputed,
        seconds: started.elapsed().as_secs_f64(),
        workers: compiled.workers,
    })
}

/// Put the shards of one run back together: check they are all there and of the same inputs,
/// plan the sweep again from `spec` (which must be the spec they ran) and judge every job with
/// the outcome its shard compiled. Needs no Python: the kernel's interface and the toolchain's
/// versions come from the shards.
pub fn merge(
    spec: &Sweep,
    targets: &[TargetDevice],
    settings: &Settings,
    shards: &[ShardReport],
) -> Result<ProbeReport, ProbeError> {
    let first = shards
        .first()
        .ok_or_else(|| ProbeError::Shards("no shards to merge".to_owned()))?;
    check_shards(shards)?;
    let toolchain = Toolchain {
        // Not run: the merge compiles nothing.
        python: std::path::PathBuf::new(),
        python_version: first.python_version.clone(),
        triton_version: first.triton_version.clone(),
        origin: first.toolchain,
        env: crate::compile::toolchain::triton_environment(),
    };
    let (source_sha256, context) = key_context(spec, &toolchain, settings)?;
    let setup = Setup {
        context: loaded_context(context, &first.interface),
        source_sha256,
        interface: first.interface.clone(),
    };
    let planned = plan_sweep(spec, targets, &setup, depth(settings), &settings.cancel)?;
    if plan_digest(spec, &planned)? != first.plan_sha256 {
        return Err(ProbeError::Shards(format!(
            "the shards were not made from `{}` as it is here (the spec, its kernel, its config files, the fleet or tilefit itself differ)",
            spec.origin.shown()
        )));
    }
    let by_key = crate::model::shard::by_key(shards.iter().flat_map(|s| &s.outcomes));
    let mut outcomes = Vec::with_capacity(planned.jobs.len());
    for job in &planned.jobs {
        let found = by_key.get(job.job.key.as_str()).ok_or_else(|| {
            ProbeError::Shards(format!(
                "no shard has the job `{}`: merge every shard of the run",
                job.job.label
            ))
        })?;
        outcomes.push((found.outcome.clone(), found.cached));
    }
    let input_error = outcomes.iter().find_map(|(o, _)| {
        o.error
            .as_ref()
            .filter(|e| e.kind.is_input_error())
            .map(|e| e.message.clone())
    });
    let totals = Totals {
        recomputed: shards.iter().map(|s| s.recomputed).sum(),
        // The shards ran side by side: the run took as long as its slowest shard.
        seconds: shards.iter().map(|s| s.seconds).fold(0.0, f64::max),
        workers: None,
        interrupted: false,
    };
    report_of(planned, setup, &toolchain, &outcomes, input_error, totals)
        .map_err(|message| rejected(spec, &message))
}

/// Every shard of one run, each once.
fn check_shards(shards: &[ShardReport]) -> Result<(), ProbeError> {
    let identities: Vec<_> = shards.iter().map(ShardReport::identity).collect();
    crate::model::shard::check_one_run(&identities).map_err(ProbeError::Shards)
}
