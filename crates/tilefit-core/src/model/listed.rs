//! What listed configs came to, as the report carries it: per device which fit and by how much
//! the others miss, per config file its device, variant, tuning Triton and entries' verdicts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::input::config_files::FileProblem;
use crate::input::spec::ListKind;
use crate::model::verdict::VerdictCode;
use crate::vocab::AutotuneConfig;

/// How the listed configs fare on one device, for one workload variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceFit {
    /// The device as the fleet names it.
    pub device: String,
    /// Its arch.
    pub arch: String,
    /// The workload variant (values of the [sweep] axes; empty without axes).
    pub variant: BTreeMap<String, Value>,
    /// Indices (into the report's results' `config_index`) of the listed configs that fit.
    pub fits: Vec<usize>,
    /// Those over the budget, with the bytes over.
    pub over: Vec<(usize, u64)>,
    /// Those whose block has more threads than the device allows, with its threads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<(usize, u32)>,
    /// Those that did not compile or could not run for another reason.
    pub other: Vec<usize>,
    /// Listed configs in all.
    pub total: usize,
}

impl DeviceFit {
    /// No listed config fits: on an autotuned kernel the autotuner has nothing to choose from.
    pub fn none_fits(&self) -> bool {
        self.fits.is_empty()
    }
}

/// One entry of a config file and its verdict on the file's own device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileEntry {
    /// The key (a batch size).
    pub key: String,
    /// The config's index in the report's results.
    pub config_index: usize,
    /// Its verdict on the file's device, when the file maps to one.
    pub verdict: Option<VerdictCode>,
    /// Bytes per block on that device's arch.
    pub shared_bytes: Option<u64>,
    /// Bytes over that device's budget.
    pub over_by: Option<u64>,
    /// What the launcher changed before the launch (`SPLIT_K 2 -> 1 (forced)`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edits: Vec<String>,
    /// Why it has no verdict on its device: its compile failed (the compiler's reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One config file as the report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileReport {
    /// The file name.
    pub file: String,
    /// Its path, as the run found it (for annotations on the entry's line).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// The device name its name carries.
    pub device_name: Option<String>,
    /// The fleet device it maps to.
    pub device: Option<String>,
    /// That device's arch.
    pub arch: Option<String>,
    /// Why it maps to no device.
    pub unresolved: Option<String>,
    /// It names a known GPU that tilefit cannot compile for (another Triton backend): not
    /// judged, and not an unmapped file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsupported: Option<String>,
    /// The kernel variant its name selects (`dtype=fp8_w8a8`); empty for the plain kernel.
    #[serde(default)]
    pub variant: String,
    /// Why it was not judged: the spec describes no kernel variant for its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undescribed: Option<String>,
    /// The Triton it was tuned with (its `triton_version` key or `triton_X_Y_Z` folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tuned_with: Option<String>,
    /// Its entries with their verdicts on its device.
    pub entries: Vec<FileEntry>,
    /// Its entries judged again under the Triton it was tuned with (`--triton-from-files`), when
    /// that is not the judging one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under_tuned: Option<UnderTuned>,
}

/// A config file's entries under the Triton it was tuned with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnderTuned {
    /// That Triton.
    pub triton: String,
    /// The entries, judged on the file's device with that Triton's bytes (empty when it could
    /// not run).
    pub entries: Vec<FileEntry>,
    /// Why that Triton could not judge them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What the listed configs came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListedReport {
    /// Autotune list or config files.
    pub kind: ListKind,
    /// Distinct listed configs.
    pub distinct: usize,
    /// Where each result's config was listed, by `config_index`.
    pub origins: Vec<Vec<crate::vocab::Listing>>,
    /// Per device and variant.
    pub per_device: Vec<DeviceFit>,
    /// The config files, for `from_files` sweeps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileReport>,
    /// Files that matched but could not be read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub file_problems: Vec<FileProblem>,
    /// The autotune list as the kernel wrote it (for `--emit-configs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub autotune: Vec<AutotuneConfig>,
}
