//! The probe once per Triton version, each in its own toolchain, as one matrix report with what
//! changed from one version to the next; and `--triton-from-files`: the config files' entries
//! judged again under the Triton each file was tuned with.

use std::path::Path;

use super::pipeline::{self, Pipeline, Planned};
use super::probe_error::ProbeError;
use super::toolchains::{self, SelectError};
use crate::compile::Settings;
use crate::compile::toolchain::Toolchain;
use crate::device::TargetDevice;
use crate::input::spec::{SpecError, Sweep};
use crate::judge::diff::diff;
use crate::model::matrix::{MATRIX_SCHEMA_VERSION, MatrixReport};
use crate::model::probe::{ProbeReport, ToolInfo};

/// Why a version of the matrix could not be judged.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    /// No toolchain for a version.
    #[error(transparent)]
    Toolchain(#[from] SelectError),
    /// The spec's `[kernel] module` is not found by a version's Python.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The probe failed.
    #[error(transparent)]
    Probe(#[from] ProbeError),
}

impl crate::hint::Hint for MatrixError {
    fn hint(&self) -> Option<String> {
        match self {
            MatrixError::Toolchain(e) => crate::hint::Hint::hint(e),
            MatrixError::Spec(e) => Some(e.hint()),
            MatrixError::Probe(e) => crate::hint::Hint::hint(e),
        }
    }
}

/// The probe under each of `versions` (`--python` where its Triton is that version, else the
/// managed environment), diffed version to version.
pub fn probe_matrix(
    spec: &Sweep,
    targets: &[TargetDevice],
    versions: &[String],
    python: Option<&Path>,
    settings: &Settings,
) -> Result<MatrixReport, MatrixError> {
    let mut reports = Vec::new();
    let mut spec = spec.clone();
    for version in versions {
        let toolchain = toolchains::for_version(python, version, &*settings.reporter)?;
        spec.resolve_module(&toolchain.python)?;
        settings.reporter.note(&format!(
            "tilefit: Triton {} (Python {}, {})",
            toolchain.triton_version,
            toolchain.python_version,
            toolchain.python.display()
        ));
        reports.push(pipeline::probe(&spec, targets, &toolchain, settings)?);
    }
    let diffs = reports
        .windows(2)
        .map(|pair| diff(&pair[0], &pair[1]))
        .collect();
    Ok(MatrixReport {
        schema_version: MATRIX_SCHEMA_VERSION,
        kind: crate::model::kind::ReportKind::ProbeMatrix,
        tool: ToolInfo::current(),
        versions: reports,
        diffs,
    })
}

/// `--triton-from-files`: each Triton the config files were tuned with (other than the judging
/// one) judges those files' entries again, in its own toolchain. A version tilefit cannot run is
/// noted on its files; the run goes on.
pub fn judge_under_tuned(
    report: &mut ProbeReport,
    spec: &Sweep,
    targets: &[TargetDevice],
    python: Option<&Path>,
    settings: &Settings,
) {
    let mut versions: Vec<String> = Vec::new();
    for file in report.listed.iter().flat_map(|l| &l.files) {
        if let Some(version) = &file.tuned_with
            && *version != report.triton_version
            && !versions.contains(version)
        {
            versions.push(version.clone());
        }
    }
    for version in versions {
        if let Some(why) = toolchains::unsupported(&version) {
            report.tuned_unavailable(&version, &why);
            continue;
        }
        let toolchain = match toolchains::for_version(python, &version, &*settings.reporter) {
            Ok(toolchain) => toolchain,
            Err(error) => {
                report.tuned_unavailable(&version, &crate::hint::chain_text(&error));
                continue;
            }
        };
        settings.reporter.note(&format!(
            "tilefit: judging the files tuned with Triton {version} with it too"
        ));
        match probe_tuned(spec, targets, &toolchain, settings) {
            Ok(tuned) => report.attach_tuned(&tuned),
            Err(error) => report.tuned_unavailable(&version, &error.to_string()),
        }
    }
}

/// The entries of the config files tuned with `toolchain`'s Triton, judged with it: the probe
/// restricted to the configs those files list (each on its file's device and the fleet, as in the
/// main run), for [`attach_tuned`].
fn probe_tuned(
    spec: &Sweep,
    targets: &[TargetDevice],
    toolchain: &Toolchain,
    settings: &Settings,
) -> Result<ProbeReport, ProbeError> {
    let version = toolchain.triton_version.clone();
    let pipeline = Pipeline::new(toolchain, settings, "probe");
    pipeline.probe_kept(spec, targets, move |planned: &Planned| {
        let tuned: Vec<String> = planned
            .prepared
            .listed
            .iter()
            .flat_map(|inputs| &inputs.files)
            .filter(|f| f.file.tuned_with.as_deref() == Some(version.as_str()))
            .map(|f| f.file.name.clone())
            .collect();
        let origins = planned.prepared.spec.config_origins();
        planned
            .jobs
            .iter()
            .map(|job| {
                origins.get(job.config_index).is_some_and(|o| {
                    o.iter()
                        .any(|o| o.file().is_some_and(|f| tuned.iter().any(|t| t == f)))
                })
            })
            .collect()
    })
}
