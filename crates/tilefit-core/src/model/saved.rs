//! A report saved with `--json`, read back: one typed reader for `tilefit report`, `--baseline`,
//! `tilefit diff` and `verify REPORT.json`. The file comes from elsewhere: it is read through
//! `input::untrusted` (every string checked), its `schema_version` and `kind` checked, and a file
//! of another kind (a shard, a matrix) is refused with what to do instead. Data only.

use std::path::Path;

use crate::input::untrusted::{UntrustedError, read_json};
pub use crate::model::kind::ReportKind;
use crate::model::probe::ProbeReport;
use crate::model::replay::ReplayReport;

/// A saved probe, replay or capture report.
pub enum SavedReport {
    /// A probe's.
    Probe(Box<ProbeReport>),
    /// A replay's.
    Replay(Box<ReplayReport>),
    /// A capture's.
    Capture(Box<crate::model::capture::CaptureReport>),
}

/// Why a saved report could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SavedReportError {
    /// Unreadable, not JSON, or a string no field may hold.
    #[error(transparent)]
    Untrusted(#[from] UntrustedError),
    /// Not schema 1.
    #[error("`{path}` has no `schema_version: 1`")]
    Schema {
        /// The file.
        path: String,
    },
    /// A version matrix, where one report is wanted.
    #[error("`{path}` is a Triton version matrix, not one report")]
    Matrix {
        /// The file.
        path: String,
    },
    /// One shard, where a whole report is wanted.
    #[error("`{path}` is one shard of a sharded run, not a whole report")]
    Shard {
        /// The file.
        path: String,
    },
    /// Some other kind, or none.
    #[error("`{path}` has the kind {}, not `probe`, `replay` or `capture`", kind.as_deref().map_or_else(|| "none".to_owned(), |k| format!("`{}`", crate::escape::control(k))))]
    Kind {
        /// The file.
        path: String,
        /// Its `kind`, if any.
        kind: Option<String>,
    },
    /// The right kind, but not the shape this version reads.
    #[error("`{path}` is not a tilefit report this version reads: {detail}")]
    Shape {
        /// The file.
        path: String,
        /// serde's words.
        detail: String,
    },
}

impl SavedReportError {
    /// What to do next.
    pub fn hint(&self) -> &'static str {
        const WRITE: &str = "pass a file written by `tilefit probe --json FILE`, `tilefit replay --json FILE` or `tilefit capture --json FILE`";
        match self {
            SavedReportError::Untrusted(e) => e.field_hint().unwrap_or(WRITE),
            SavedReportError::Kind { .. } => WRITE,
            SavedReportError::Schema { .. } => "this tilefit reads reports of schema_version 1",
            SavedReportError::Matrix { .. } => {
                "see what changed between its versions with `tilefit diff MATRIX.json`"
            }
            SavedReportError::Shard { .. } => {
                "put every shard together first: `tilefit merge shard-*.json --json report.json`"
            }
            SavedReportError::Shape { .. } => {
                "re-run the probe, replay or capture with this tilefit to save a fresh report"
            }
        }
    }
}

impl SavedReport {
    /// Read a saved probe, replay or capture report.
    pub fn read(path: &Path) -> Result<SavedReport, SavedReportError> {
        SavedReport::from_json(path, read_json(path)?)
    }

    /// A saved probe, replay or capture report from `path`'s JSON, already read and checked by
    /// `input::untrusted`.
    pub fn from_json(
        path: &Path,
        json: serde_json::Value,
    ) -> Result<SavedReport, SavedReportError> {
        let shown = crate::escape::control(&path.display().to_string()).into_owned();
        if json
            .get("schema_version")
            .and_then(serde_json::Value::as_u64)
            != Some(1)
        {
            return Err(SavedReportError::Schema { path: shown });
        }
        let kind = json.get("kind").and_then(serde_json::Value::as_str);
        let shape = |e: serde_json::Error| SavedReportError::Shape {
            path: shown.clone(),
            detail: e.to_string(),
        };
        match kind.and_then(ReportKind::parse) {
            Some(ReportKind::Probe) => Ok(SavedReport::Probe(Box::new(
                serde_json::from_value(json).map_err(shape)?,
            ))),
            Some(ReportKind::Replay) => Ok(SavedReport::Replay(Box::new(
                serde_json::from_value(json).map_err(shape)?,
            ))),
            Some(ReportKind::ProbeMatrix) => Err(SavedReportError::Matrix { path: shown }),
            Some(ReportKind::ProbeShard | ReportKind::ReplayShard) => {
                Err(SavedReportError::Shard { path: shown })
            }
            Some(ReportKind::Capture) => Ok(SavedReport::Capture(Box::new(
                serde_json::from_value(json).map_err(shape)?,
            ))),
            Some(ReportKind::Verify) | None => Err(SavedReportError::Kind {
                path: shown,
                kind: kind.map(str::to_owned),
            }),
        }
    }
}

impl crate::hint::Hint for SavedReportError {
    fn hint(&self) -> Option<String> {
        Some(SavedReportError::hint(self).to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(name: &str, json: &serde_json::Value) -> Result<SavedReport, SavedReportError> {
        let dir = std::env::temp_dir().join(format!("tilefit-saved-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.json");
        std::fs::write(&path, json.to_string()).unwrap();
        let read = SavedReport::read(&path);
        std::fs::remove_dir_all(&dir).unwrap();
        read
    }

    #[test]
    fn each_kind_that_is_not_one_report_is_refused_with_what_to_do() {
        use serde_json::json;
        let matrix = read(
            "matrix",
            &json!({"schema_version": 1, "kind": "probe-matrix"}),
        );
        assert!(matches!(matrix, Err(SavedReportError::Matrix { .. })));
        let shard = read(
            "shard",
            &json!({"schema_version": 1, "kind": "replay-shard"}),
        );
        let e = shard.err().unwrap();
        assert!(e.hint().contains("tilefit merge"), "{}", e.hint());
        let other = read("other", &json!({"schema_version": 1, "kind": "verify"}));
        assert!(
            matches!(other, Err(SavedReportError::Kind { kind: Some(k), .. }) if k == "verify")
        );
        let schema = read("schema", &json!({"schema_version": 2, "kind": "probe"}));
        assert!(matches!(schema, Err(SavedReportError::Schema { .. })));
        let shape = read("shape", &json!({"schema_version": 1, "kind": "probe"}));
        assert!(matches!(shape, Err(SavedReportError::Shape { .. })));
        let field = read("field", &json!({"schema_version": 1, "kind": "probe\n::x"}));
        let e = field.err().unwrap();
        assert!(e.to_string().contains("field `kind`"), "{e}");
        assert!(e.hint().contains("edited"), "{}", e.hint());
    }
}
