//! `diff`: what changed between two saved probe reports of one kernel, or between the versions of
//! one saved matrix. Two reports of different kernels, or with no (config, arch) in common, are an
//! error saying so; an edited kernel is a note.

use std::path::Path;

use crate::hint::Hinted;
use crate::judge::diff::diff;
use crate::model::diff::ReportDiff;
use crate::model::identity::{Comparison, Subject};
use crate::model::read::{self, NotAProbeReport};

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

/// The diffs of `old` against `new`, or of one matrix's versions (`new` left out); with the notes
/// worth printing (an edited kernel).
pub fn diffs(old: &Path, new: Option<&Path>) -> Result<(Vec<ReportDiff>, Vec<String>), DiffError> {
    let Some(new) = new else {
        let matrix = read::matrix(old).map_err(NotAProbeReport::from)?;
        return Ok((matrix.diffs, Vec::new()));
    };
    let (old_report, new_report) = (read::probe_report(old)?, read::probe_report(new)?);
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
    Ok((vec![d], notes))
}
