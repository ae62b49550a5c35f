//! A Triton version matrix: one probe report per Triton version, in the order asked for, each whole
//! (its own results, verdicts and recommendations), and the differences between neighbours. Data
//! only: `run` fills it, `render` draws it with one column group per version.

use serde::{Deserialize, Serialize};

use crate::model::diff::ReportDiff;
use crate::model::probe::{ProbeReport, ToolInfo};

/// The version of the matrix format.
pub const MATRIX_SCHEMA_VERSION: u32 = 1;

/// One probe per Triton version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixReport {
    /// [`MATRIX_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `probe-matrix`.
    pub kind: crate::model::kind::ReportKind,
    /// The tilefit that wrote it.
    pub tool: ToolInfo,
    /// Each version's report, in the order the versions were given.
    pub versions: Vec<ProbeReport>,
    /// What changed from each version to the next.
    pub diffs: Vec<ReportDiff>,
}
