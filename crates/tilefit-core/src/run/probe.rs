//! `tilefit probe SPEC` as one run on one [`Pipeline`]: the probe; with `--triton-from-files`,
//! the config files' entries judged again under the Triton each was tuned with; with
//! `--emit-files`, the engine config files made on the same pipeline (its workers, its scratch),
//! from the config files the probe judged (read once). The binary writes what this returns.

use std::path::Path;

use crate::device::TargetDevice;
use crate::input::spec::Sweep;
use crate::model::fix_files::FixedFiles;
use crate::model::probe::ProbeReport;

use super::fix_files::{FixFilesError, fix_files};
use super::matrix::judge_under_tuned;
use super::pipeline::Pipeline;
use super::probe_error::ProbeError;

/// What a probe run does besides the probe.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProbeRun<'a> {
    /// `--triton-from-files`: judge each config file under the Triton it was tuned with too,
    /// with this `--python` where it is that version.
    pub triton_from_files: Option<Option<&'a Path>>,
    /// `--emit-files`: make the engine config files.
    pub emit_files: bool,
}

/// The probe's report and, with `--emit-files` on a complete probe, the files made (or why
/// not). The report's `stats.workers` counts the whole run's workers.
pub fn probe_run(
    pipeline: &Pipeline<'_>,
    spec: &mut Sweep,
    targets: &[TargetDevice],
    run: ProbeRun<'_>,
) -> Result<(ProbeReport, Option<Result<FixedFiles, FixFilesError>>), ProbeError> {
    if run.emit_files {
        // Read once: the probe and the files made after it judge the same values.
        pipeline.read_config_files(spec)?;
    }
    let mut report = pipeline.probe(spec, targets)?;
    if let Some(python) = run.triton_from_files {
        let settings = pipeline.settings();
        judge_under_tuned(&mut report, spec, targets, python, settings);
    }
    // Files only from a complete probe; an interrupt while they are made marks the report
    // incomplete (the binary writes nothing then).
    let fixed = (run.emit_files && report.stats.complete)
        .then(|| fix_files(pipeline, spec, &report, targets));
    let workers = pipeline.workers();
    if workers.started > 0 {
        report.stats.workers = Some(workers);
    }
    Ok((report, fixed))
}
