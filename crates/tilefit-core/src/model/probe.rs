//! The probe's report: one result per (config, arch) with a verdict per device, the recommended
//! config per device and workload variant, the rule, counts, and the listed configs' summary.
//! What `tilefit report` reads back; `schema_version` guards the shape.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::compile::{OutcomeError, Passed};
use crate::device::{Backend, TargetDevice};
use crate::model::listed::ListedReport;
use crate::model::verdict::{DeviceVerdict, VerdictCode};
use crate::resources::KernelResources;
use crate::vocab::CompileJob;
use crate::vocab::CompileStatus;

/// Version of the report's JSON shape.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// One (config, arch) result with its verdicts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    /// Axis values, plus the effective num_warps and num_stages.
    pub config: BTreeMap<String, Value>,
    /// Index of the config in sweep order.
    pub config_index: usize,
    /// The arch compiled for.
    pub arch: String,
    /// Its backend.
    pub backend: Backend,
    /// How the compile went.
    pub status: CompileStatus,
    /// `metadata.shared`.
    pub shared_bytes: Option<u64>,
    /// `metadata.tmem_size`.
    pub tmem_size: Option<u64>,
    /// Error kind and first line.
    pub error: Option<OutcomeError>,
    /// Came from the result cache.
    pub cached: bool,
    /// Arguments Triton marked divisible by 16.
    pub divisible_by_16: Vec<String>,
    /// Int arguments equal to 1, compiled as constants.
    pub specialized_to_1: Vec<String>,
    /// Seconds the compile took in its worker (when it was compiled, cached or not).
    pub compile_seconds: f64,
    /// The compiled binary and its kernel symbol, when binaries were asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<PathBuf>,
    /// The kernel's symbol in the binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_name: Option<String>,
    /// Registers, local memory and spills from the binary (`--resources full`), flattened:
    /// `registers_per_thread`, `local_bytes_per_thread`, `spill_bytes`, ...
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<KernelResources>,
    /// Why the binary's resources could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_error: Option<String>,
    /// The compile job, kept with binaries so `verify --launch` can launch the same config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<CompileJob>,
    /// Parameters passed as more than a plain value: what the worker gave the JIT.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub passed: BTreeMap<String, Passed>,
    /// Options this arch's backend does not take, left out of its compile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_options: Vec<String>,
    /// One verdict per device of this arch.
    pub verdicts: Vec<DeviceVerdict>,
}

/// The recommended config of one device for one workload variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// The device as the user wrote it.
    pub device: String,
    /// Its canonical name.
    pub name: String,
    /// Its arch.
    pub arch: String,
    /// The workload variant (values of the rule's `per` axes).
    pub variant: BTreeMap<String, Value>,
    /// The recommended config, or `None` when no swept config fits.
    pub config: Option<BTreeMap<String, Value>>,
    /// Its shared memory.
    pub shared_bytes: Option<u64>,
    /// Its headroom on this device.
    pub headroom: Option<u64>,
    /// The recommendation differs from the baseline.
    pub changed: bool,
    /// The baseline config.
    pub baseline: BTreeMap<String, Value>,
    /// Whether the baseline fits this device.
    pub baseline_fits: bool,
    /// The baseline's verdict on this device.
    pub baseline_verdict: VerdictCode,
    /// By how much the baseline misses the budget, when it is over.
    pub baseline_over_by: Option<u64>,
    /// The baseline does not fit: this device needs a different config.
    pub needs_change: bool,
}

/// The rule as applied, for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleSummary {
    /// Workload axes.
    pub per: Vec<String>,
    /// Preferences, `max:num_stages`.
    pub prefer: Vec<String>,
    /// Baseline overrides.
    pub baseline: BTreeMap<String, Value>,
}

/// Tool identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// `tilefit`.
    pub name: String,
    /// Its version.
    pub version: String,
}

impl ToolInfo {
    /// This tilefit (the workspace's one version).
    pub fn current() -> ToolInfo {
        ToolInfo {
            name: "tilefit".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

/// The kernel probed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelInfo {
    /// Source file.
    pub file: String,
    /// Function.
    pub function: String,
    /// SHA-256 of the file.
    pub source_sha256: String,
    /// The `@triton.jit` function's parameter names: what an exported config may hold besides
    /// compile options (a spec's placeholder axes, such as `kv_dtype`, are not among them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<String>,
    /// How its module was loaded: imported, or the kernel extracted from the file (the names
    /// that ran, and why the import failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded: Option<crate::vocab::Loaded>,
}

impl KernelInfo {
    /// The report's kernel: the spec's file and function, how the worker loaded it, its parameters,
    /// and the digest of its source.
    pub fn of(
        spec: &crate::input::spec::Sweep,
        interface: &crate::vocab::KernelInterface,
        source_sha256: String,
    ) -> KernelInfo {
        KernelInfo {
            file: spec.kernel_file.display().to_string(),
            function: spec.function.clone(),
            loaded: interface.loaded.clone(),
            source_sha256,
            parameters: interface.params.iter().map(|p| p.name.clone()).collect(),
        }
    }
}

/// Counts and time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeStats {
    /// Jobs in the sweep (configs x distinct archs).
    pub jobs: usize,
    /// Compiled in this run.
    pub compiled: usize,
    /// Taken from the cache.
    pub cached: usize,
    /// Cache entries found broken and recomputed.
    pub recomputed: usize,
    /// Jobs whose worker faulted or that an interrupt stopped.
    pub failed: usize,
    /// Wall time of the run.
    pub seconds: f64,
    /// False when the run was interrupted: some results are missing (marked failed).
    #[serde(default = "complete_by_default")]
    pub complete: bool,
    /// How the compile workers started (forked from zygotes, or spawned and why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<crate::compile::WorkersUsed>,
}

/// Reports saved before `complete` existed were complete runs.
pub(crate) fn complete_by_default() -> bool {
    true
}

/// Everything a probe found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// [`REPORT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `probe`: tells a saved probe report from a replay report.
    pub kind: crate::model::kind::ReportKind,
    /// tilefit's name and version.
    pub tool: ToolInfo,
    /// Triton version that compiled.
    pub triton_version: String,
    /// Python version of the workers.
    pub python_version: String,
    /// Where that Python came from: `environment` (the virtualenv or conda environment tilefit
    /// runs in), `managed` or `user-python` (`--python`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolchain: Option<crate::compile::toolchain::Origin>,
    /// Triton's compile knobs set in the environment (`TRITON_HIP_USE_ASYNC_COPY=0`): the bytes
    /// are Triton's under them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub triton_env: BTreeMap<String, String>,
    /// The spec file.
    pub spec: String,
    /// The kernel.
    pub kernel: KernelInfo,
    /// The fleet.
    pub targets: Vec<TargetDevice>,
    /// Sweep axes, outermost first.
    pub axes: Vec<String>,
    /// Results, config-major, then arch in fleet order.
    pub results: Vec<ProbeResult>,
    /// Per device and variant.
    pub recommendations: Vec<Recommendation>,
    /// The recommendation rule.
    pub rule: RuleSummary,
    /// Counts.
    pub stats: ProbeStats,
    /// Configs listed outside the axes (a kernel's autotune list, config files): per device
    /// which fit, and per file its device's verdicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listed: Option<ListedReport>,
}

impl ProbeReport {
    /// Put each config file's entries as `tuned` (a `run::matrix` run restricted to them) judged them beside the
    /// main run's, for the files tuned with `tuned`'s Triton.
    pub fn attach_tuned(&mut self, tuned: &ProbeReport) {
        let Some(listed) = self.listed.as_mut() else {
            return;
        };
        let others = tuned
            .listed
            .as_ref()
            .map_or(&[][..], |l| l.files.as_slice());
        for file in &mut listed.files {
            if file.tuned_with.as_deref() != Some(tuned.triton_version.as_str()) {
                continue;
            }
            if let Some(other) = others.iter().find(|o| o.path == file.path) {
                file.under_tuned = Some(crate::model::listed::UnderTuned {
                    triton: tuned.triton_version.clone(),
                    entries: other.entries.clone(),
                    error: None,
                });
            }
        }
    }

    /// Mark the files tuned with `version` as not judged under it, and why.
    pub fn tuned_unavailable(&mut self, version: &str, why: &str) {
        let Some(listed) = self.listed.as_mut() else {
            return;
        };
        for file in &mut listed.files {
            let judged =
                file.device.is_some() && file.undescribed.is_none() && file.unsupported.is_none();
            if judged && file.tuned_with.as_deref() == Some(version) {
                file.under_tuned = Some(crate::model::listed::UnderTuned {
                    triton: version.to_owned(),
                    entries: Vec::new(),
                    error: Some(why.to_owned()),
                });
            }
        }
    }
}
