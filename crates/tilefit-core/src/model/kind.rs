//! What a report says it is: the `kind` every JSON file tilefit writes carries, one enum instead
//! of strings compared here and there.

use serde::{Deserialize, Serialize};

/// What a saved JSON file says it is, by its `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReportKind {
    /// `tilefit probe --json`.
    Probe,
    /// `tilefit replay --json`.
    Replay,
    /// `tilefit probe --triton A,B --json`.
    ProbeMatrix,
    /// `tilefit probe --shard K/N --json`.
    ProbeShard,
    /// `tilefit replay --shard K/N --json`.
    ReplayShard,
    /// `tilefit verify --json`.
    Verify,
    /// `tilefit capture --json`.
    Capture,
}

impl ReportKind {
    /// The kind of a `kind` string, if tilefit writes it.
    pub fn parse(kind: &str) -> Option<ReportKind> {
        Some(match kind {
            "probe" => ReportKind::Probe,
            "replay" => ReportKind::Replay,
            "probe-matrix" => ReportKind::ProbeMatrix,
            "probe-shard" => ReportKind::ProbeShard,
            "replay-shard" => ReportKind::ReplayShard,
            "verify" => ReportKind::Verify,
            "capture" => ReportKind::Capture,
            _ => return None,
        })
    }
}

impl ReportKind {
    /// The `kind` as reports write it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReportKind::Probe => "probe",
            ReportKind::Replay => "replay",
            ReportKind::ProbeMatrix => "probe-matrix",
            ReportKind::ProbeShard => "probe-shard",
            ReportKind::ReplayShard => "replay-shard",
            ReportKind::Verify => "verify",
            ReportKind::Capture => "capture",
        }
    }
}

impl std::fmt::Display for ReportKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_as_written() {
        for kind in [
            ReportKind::Probe,
            ReportKind::Replay,
            ReportKind::ProbeMatrix,
            ReportKind::ProbeShard,
            ReportKind::ReplayShard,
            ReportKind::Verify,
        ] {
            assert_eq!(ReportKind::parse(kind.as_str()), Some(kind));
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json, kind.as_str());
            assert_eq!(serde_json::from_value::<ReportKind>(json).unwrap(), kind);
        }
    }
}
