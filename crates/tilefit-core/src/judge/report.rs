//! A probe's outcomes judged into its report: every result against every device of its arch,
//! the listed configs summarized, the recommendation made, the counts.

use crate::compile::toolchain::Toolchain;
use crate::compile::{self, CompileOutcome, WorkersUsed};
use crate::judge::listed::summarize_listed;
use crate::judge::probe::{assemble, result_for, uniform_failure};
use crate::model::probe::{KernelInfo, ProbeReport, ProbeResult, ProbeStats};
use crate::plan::sweep::{Planned, Setup};
use crate::vocab::CompileStatus;

/// What a probe report counts besides its outcomes.
pub(crate) struct Totals {
    /// Cache entries found broken and recomputed.
    pub(crate) recomputed: usize,
    /// Wall time.
    pub(crate) seconds: f64,
    /// How the workers started.
    pub(crate) workers: Option<WorkersUsed>,
    /// The run was interrupted somewhere (its jobs may all have come from the cache).
    pub(crate) interrupted: bool,
}

/// Judge every outcome, recommend, and put the report together.
/// `Err` is Triton's refusal of the spec's arguments (an input error a worker reported, or one
/// compile error for every config and target), for the caller to word as the spec's error.
pub(crate) fn report_of(
    planned: Planned,
    setup: Setup,
    toolchain: &Toolchain,
    outcomes: &[(CompileOutcome, bool)],
    input_error: Option<String>,
    totals: Totals,
) -> Result<ProbeReport, String> {
    let Planned {
        prepared,
        configs,
        jobs,
    } = planned;
    let spec = &prepared.spec;
    let targets = prepared.targets.as_slice();
    if let Some(message) = input_error.or_else(|| uniform_failure(outcomes)) {
        return Err(message);
    }
    let results: Vec<ProbeResult> = jobs
        .iter()
        .zip(outcomes)
        .map(|(planned, (outcome, cached))| {
            result_for(
                &configs[planned.config_index],
                planned.config_index,
                planned.compile_job(),
                outcome,
                *cached,
                targets,
            )
        })
        .collect();
    let mut report = assemble(
        spec,
        targets,
        toolchain,
        &configs,
        results,
        KernelInfo::of(spec, &setup.interface, setup.source_sha256),
        ProbeStats {
            jobs: jobs.len(),
            compiled: outcomes.iter().filter(|(_, c)| !c).count(),
            cached: outcomes.iter().filter(|(_, c)| *c).count(),
            recomputed: totals.recomputed,
            failed: outcomes
                .iter()
                .filter(|(o, _)| o.status == CompileStatus::Failed)
                .count(),
            seconds: totals.seconds,
            // Interrupted anywhere (mid-walk of a config folder too): incomplete, even when
            // every job it kept came from the cache.
            complete: compile::complete(outcomes.iter().map(|(o, _)| o)) && !totals.interrupted,
            workers: totals.workers,
        },
    );
    report.listed = prepared
        .listed
        .map(|inputs| summarize_listed(spec, &configs, inputs, &report.results, targets));
    Ok(report)
}
