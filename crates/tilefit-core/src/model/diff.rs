//! What changed between two probe reports of one kernel (a Triton upgrade, a kernel edit): the
//! bytes of each (config, arch) and each device's verdict. Data only: `judge::diff` computes it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::verdict::VerdictCode;

/// The differences between an old and a new report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportDiff {
    /// The old report's Triton.
    pub old_triton: String,
    /// The new report's Triton.
    pub new_triton: String,
    /// (config, arch) pairs in both reports.
    pub compared: usize,
    /// Pairs whose bytes or verdicts differ.
    pub changes: Vec<Change>,
    /// Pairs only the old report has.
    pub only_old: usize,
    /// Pairs only the new report has.
    pub only_new: usize,
    /// What the changes have in common, in words: the config value every change has and no
    /// unchanged result has (`every change has PRECISION=tf32x3; none with PRECISION=tf32
    /// changed`), and how the bytes moved (`x2.00 in every change`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub named: Vec<String>,
}

/// One (config, arch) that changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The config.
    pub config: BTreeMap<String, Value>,
    /// The arch.
    pub arch: String,
    /// Bytes before (`None`: no size, it did not compile).
    pub old_bytes: Option<u64>,
    /// Bytes after.
    pub new_bytes: Option<u64>,
    /// Devices whose verdict changed.
    pub flips: Vec<Flip>,
}

/// A device whose verdict changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flip {
    /// The device.
    pub device: String,
    /// Before.
    pub old: VerdictCode,
    /// After.
    pub new: VerdictCode,
}

impl Flip {
    /// A config that ran on the device no longer does.
    pub fn breaks(&self) -> bool {
        self.old == VerdictCode::Fits
            && matches!(
                self.new,
                VerdictCode::OverBudget | VerdictCode::OverThreadLimit
            )
    }
}

impl ReportDiff {
    /// The flips from fits to over, with their change.
    pub fn breaks(&self) -> Vec<(&Change, &Flip)> {
        self.changes
            .iter()
            .flat_map(|c| c.flips.iter().filter(|f| f.breaks()).map(move |f| (c, f)))
            .collect()
    }
}
