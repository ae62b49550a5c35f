//! One target's records judged on the run's pipeline: each distinct compile compiled for the
//! target's arch as its [`crate::input::spec::Sweep`] (the one `--emit-spec` writes for it),
//! each launch given its verdict, and the fix of every launch that crashes the engine.

use std::collections::BTreeMap;

use crate::device::TargetDevice;
use crate::input::capture::Records;
use crate::judge::capture::launch_verdict;
use crate::model::capture::{AutotuneCounts, CompileReport, LaunchReport, TargetCapture};
use crate::model::verdict::VerdictCode;
use crate::plan::capture::{Compile, plan, scope_file_name, sweep_of};
use crate::run::pipeline::Pipeline;

/// The probe results of one target's compiles, each as its sweep (the one `--emit-spec` writes
/// for it), on one pool of workers.
fn compile_all(
    pipeline: &Pipeline<'_>,
    compiles: &[Compile],
    scopes: &BTreeMap<String, String>,
    target: &TargetDevice,
) -> Vec<CompileReport> {
    let mut reports: Vec<CompileReport> = compiles
        .iter()
        .map(|compile| CompileReport {
            kernel: compile.kernel.clone(),
            args: compile.args.clone(),
            constexprs: compile.constexprs.clone(),
            options: compile.options.clone(),
            globals: compile.globals.clone(),
            result: None,
            error: None,
            inductor_shared: compile.inductor_shared,
            inductor_choice: compile.inductor_choice.clone(),
            inductor_rescaled: compile.inductor_rescaled.clone(),
        })
        .collect();
    let mut specs = Vec::new();
    let mut spec_of = Vec::new();
    let kernels = pipeline.scratch().join("kernels");
    for (i, compile) in compiles.iter().enumerate() {
        let scope_path = kernels.join(scope_file_name(&compile.kernel));
        let written = compile
            .kernel
            .scope
            .as_ref()
            .and_then(|d| scopes.get(d))
            .ok_or_else(|| "the records hold no scope file for its kernel".to_owned())
            .and_then(|scope| {
                std::fs::create_dir_all(&kernels)
                    .and_then(|()| std::fs::write(&scope_path, scope))
                    .map_err(|e| format!("cannot write {}: {e}", scope_path.display()))
            });
        if let Err(why) = written {
            reports[i].error = Some(why);
            continue;
        }
        // The sweep `--emit-spec` writes, checked as a spec file's parts are.
        match sweep_of(&[compile], &target.device, &scope_path) {
            Ok(spec) => {
                specs.push(spec);
                spec_of.push(i);
            }
            Err(e) => reports[i].error = Some(crate::hint::chain_text(&e)),
        }
    }
    // One batch for all of them: the pool's workers compile side by side.
    let results = pipeline.probe_all(&specs, std::slice::from_ref(target));
    for (i, outcome) in spec_of.into_iter().zip(results) {
        match outcome {
            Ok(probe) => reports[i].result = probe.results.into_iter().next(),
            Err(e) => reports[i].error = Some(crate::hint::chain_text(&e)),
        }
    }
    reports
}

/// Where a target's compiles come from: the run's pipeline, or (`tilefit merge`) the compiles
/// the shards made, taken from their reports by what was compiled.
pub(super) enum Compiler<'a, 'p> {
    /// Compile on the run's pipeline.
    Pipeline(&'a Pipeline<'p>),
    /// The shards' reports of this target.
    Shards(&'a [&'a TargetCapture]),
}

/// One target's records judged: each distinct compile compiled for its arch (or taken from the
/// shards that compiled it), each launch given its verdict.
pub(super) fn judge_target(
    mut source: Compiler<'_, '_>,
    records: &Records,
    mut report: TargetCapture,
) -> TargetCapture {
    let target = report.device.clone();
    let planned = plan(records);
    report.versions.clone_from(&records.versions);
    report.calls = records.calls;
    report.stopped.clone_from(&records.stopped);
    report.errors.clone_from(&records.errors);
    report.tests.clone_from(&records.tests);
    report.checks.clone_from(&records.checks);
    report.assumptions.clone_from(&records.assumptions);
    report.scopes.clone_from(&records.scopes);
    report.compiles = match &mut source {
        Compiler::Pipeline(pipeline) => {
            compile_all(pipeline, &planned.compiles, &records.scopes, &target)
        }
        Compiler::Shards(shards) => super::shard_compiles::from_shards(shards, &planned.compiles),
    };
    report.launches = planned
        .launches
        .iter()
        .map(|(launch, count)| {
            let compiles: Vec<&CompileReport> = launch
                .compiles
                .iter()
                .filter_map(|&i| report.compiles.get(i))
                .collect();
            let unsupported = launch
                .unsupported
                .clone()
                .or_else(|| crate::judge::capture::inductor_disagreement(&compiles));
            LaunchReport {
                kernel: launch.kernel.clone(),
                caller: launch.caller.clone(),
                chain: launch.chain.clone(),
                calls: launch.calls.clone(),
                places: launch.places.clone(),
                assumed: launch.assumed.clone(),
                count: *count,
                autotune: launch.autotune.map(|(configs, tried)| AutotuneCounts {
                    configs,
                    tried,
                    keys: launch.autotune_keys.clone(),
                }),
                compiles: launch.compiles.clone(),
                grid: launch.grid.clone(),
                verdict: crate::judge::capture::with_fallback(
                    launch_verdict(
                        launch.autotune.is_some(),
                        unsupported.is_some(),
                        &compiles,
                        &target.device,
                    ),
                    launch.inductor.as_ref(),
                ),
                unsupported,
                fix: None,
                inductor: launch.inductor.clone(),
            }
        })
        .collect();
    match source {
        Compiler::Pipeline(pipeline) => fix_launches(pipeline, &mut report),
        Compiler::Shards(shards) => super::shard_compiles::fixes_from_shards(shards, &mut report),
    }
    report
}

/// For every launch that crashes the engine, the nearest configs that fit on its device: the
/// candidates of the over-budget config (of an autotuned list none of whose configs fits, the
/// smallest one's), compiled for the device in one batch, judged, and named with what to pass.
fn fix_launches(pipeline: &Pipeline<'_>, report: &mut TargetCapture) {
    let target = report.device.clone();
    let mut wanted: Vec<(usize, Vec<(crate::fix::files::Candidate, Compile)>)> = Vec::new();
    // Scope texts of templates with edited tiles, by digest.
    let mut edited: BTreeMap<String, String> = BTreeMap::new();
    for (at, launch) in report.launches.iter().enumerate() {
        if !launch.verdict.crashes() {
            continue;
        }
        let smallest = launch
            .compiles
            .iter()
            .filter_map(|&i| report.compiles.get(i))
            .min_by_key(|c| c.result.as_ref().and_then(|r| r.shared_bytes));
        let Some(base) = smallest else { continue };
        let candidates = crate::fix::launch::launch_candidates(report, launch, base, &mut edited);
        wanted.push((at, candidates));
    }
    if wanted.is_empty() {
        return;
    }
    let all: Vec<Compile> = wanted
        .iter()
        .flat_map(|(_, c)| c.iter().map(|(_, compile)| compile.clone()))
        .collect();
    let scopes = if edited.is_empty() {
        std::borrow::Cow::Borrowed(&report.scopes)
    } else {
        let mut all = report.scopes.clone();
        all.extend(edited);
        std::borrow::Cow::Owned(all)
    };
    let results = compile_all(pipeline, &all, &scopes, &target);
    let mut next = results.iter();
    for (at, candidates) in wanted {
        let bytes: Vec<Option<u64>> = candidates
            .iter()
            .map(|_| {
                let result = next.next()?.result.as_ref()?;
                let fits = result
                    .verdicts
                    .iter()
                    .any(|v| v.device == target.device && v.verdict == VerdictCode::Fits);
                fits.then_some(result.shared_bytes).flatten()
            })
            .collect();
        let autotuned = report.launches[at]
            .autotune
            .as_ref()
            .map(|a| a.keys.as_slice());
        report.launches[at].fix = crate::fix::launch::fix_of(
            autotuned,
            report.launches[at].inductor.as_ref(),
            &candidates,
            &bytes,
        );
    }
}
