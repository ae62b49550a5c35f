//! `diff`: what changed between two saved probe reports of one kernel, or between the versions of
//! one saved matrix. Two reports of different kernels, or with no (config, arch) in common, are an
//! error saying so; an edited kernel is a note.

use std::path::Path;

use crate::hint::Hinted;
use crate::judge::diff::diff;
use crate::model::capture::CaptureReport;
use crate::model::diff::ReportDiff;
use crate::model::identity::{Comparison, Subject};
use crate::model::read::{self, ForDiff, NotAProbeReport};

const SAME_SPEC: &str =
    "diff two reports of the same spec (a Triton or kernel upgrade), saved with `--json`";

/// Why there is nothing to diff.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    /// A file is not a probe report (or a matrix, alone).
    #[error(transparent)]
    Input(#[from] NotAProbeReport),
    /// The reports are not comparable.
    #[error(transparent)]
    Incomparable(#[from] Hinted),
}

impl crate::hint::Hint for DiffError {
    fn hint(&self) -> Option<String> {
        match self {
            DiffError::Input(e) => crate::hint::Hint::hint(e),
            DiffError::Incomparable(e) => crate::hint::Hint::hint(e),
        }
    }
}

/// What `diff` found: the diffs, the notes worth printing (an edited kernel), and whether the
/// new report is a capture that failed closed (its diff alone would read as a pass).
pub struct Diffs {
    /// One per pair compared.
    pub diffs: Vec<ReportDiff>,
    /// Notes for stderr.
    pub notes: Vec<String>,
    /// The new capture's fail-closed reason, when it has one.
    pub new_failed_closed: Option<crate::model::capture::FailedClosed>,
}

/// The diffs of `old` against `new`, or of one matrix's versions (`new` left out).
pub fn diffs(old: &Path, new: Option<&Path>) -> Result<Diffs, DiffError> {
    let Some(new) = new else {
        let matrix = read::matrix(old).map_err(NotAProbeReport::from)?;
        return Ok(Diffs {
            diffs: matrix.diffs,
            notes: Vec::new(),
            new_failed_closed: None,
        });
    };
    let (old_report, new_report) = match (read::for_diff(old)?, read::for_diff(new)?) {
        (ForDiff::Probe(old_report), ForDiff::Probe(new_report)) => (old_report, new_report),
        (ForDiff::Capture(old_report), ForDiff::Capture(new_report)) => {
            return capture_diff(old, new, &old_report, &new_report);
        }
        _ => {
            return Err(Hinted::new(
                format!(
                    "`{}` and `{}` are not two reports of one kind: one is a capture, the other a probe",
                    old.display(),
                    new.display()
                ),
                SAME_SPEC,
            )
            .into());
        }
    };
    let mut notes = Vec::new();
    match Subject::of_probe(&old_report.kernel).compare(&Subject::of_probe(&new_report.kernel)) {
        Comparison::Same => {}
        Comparison::Edited(note) => notes.push(format!("tilefit: note: {note}")),
        Comparison::Different(what) => {
            return Err(Hinted::new(
                format!(
                    "`{}` and `{}` are not reports of one kernel: {what}",
                    old.display(),
                    new.display()
                ),
                SAME_SPEC,
            )
            .into());
        }
    }
    let d = diff(&old_report, &new_report);
    if d.compared == 0 {
        return Err(Hinted::new(
            format!(
                "`{}` and `{}` have no (config, arch) in common: {} and {} results, none comparable",
                old.display(),
                new.display(),
                old_report.results.len(),
                new_report.results.len()
            ),
            SAME_SPEC,
        )
        .into());
    }
    Ok(Diffs {
        diffs: vec![d],
        notes,
        new_failed_closed: None,
    })
}

/// Two captures of one script: every distinct compile of every target, compared.
fn capture_diff(
    old: &Path,
    new: &Path,
    old_report: &CaptureReport,
    new_report: &CaptureReport,
) -> Result<Diffs, DiffError> {
    let mut notes = Vec::new();
    if old_report.script != new_report.script {
        notes.push(format!(
            "tilefit: note: the captures ran different scripts ({} and {})",
            crate::escape::control(&old_report.script),
            crate::escape::control(&new_report.script)
        ));
    }
    let d = crate::judge::diff::diff_captures(old_report, new_report);
    if d.compared == 0 {
        return Err(Hinted::new(
            format!(
                "`{}` and `{}` have no compile in common",
                old.display(),
                new.display()
            ),
            "diff two captures of the same script (a Triton, engine or kernel upgrade), saved with `--json`",
        )
        .into());
    }
    Ok(Diffs {
        diffs: vec![d],
        notes,
        new_failed_closed: new_report.failed_closed(),
    })
}
