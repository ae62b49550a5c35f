//! A capture's report (`tilefit capture --json`, `kind: "capture"`): per target, the launches the
//! engine's own host code made under emulation, each judged through the compiles it makes, the
//! calls that stopped, and the script's errors.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::probe::{ProbeResult, ToolInfo};
use crate::device::TargetDevice;
use crate::device::emulated::EmulatedDevice;
use crate::input::capture::{CapturedArg, CapturedKernel, ScriptError, Site, Stopped, TestOutcome};

/// The report's schema version.
pub const CAPTURE_SCHEMA_VERSION: u32 = 1;

/// The whole capture.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaptureReport {
    /// [`CAPTURE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Always `capture`.
    pub kind: super::kind::ReportKind,
    /// tilefit.
    pub tool: ToolInfo,
    /// The Triton the captures compiled with.
    pub triton_version: String,
    /// Its Python.
    pub python_version: String,
    /// The script (or `-m MODULE`).
    pub script: String,
    /// Its arguments.
    pub script_args: Vec<String>,
    /// One run per target.
    pub targets: Vec<TargetCapture>,
}

/// One target's run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetCapture {
    /// The device.
    pub device: TargetDevice,
    /// What host code saw of it.
    pub emulated: EmulatedDevice,
    /// Python, torch and Triton of the emulated run.
    pub versions: BTreeMap<String, String>,
    /// Calls the script made.
    pub calls: u64,
    /// Calls stopped where host code needed what emulation lacks.
    pub stopped: Vec<Stopped>,
    /// Errors of the script (not stops).
    pub errors: Vec<ScriptError>,
    /// The launches, in order (a launch repeated identically once, with its count).
    pub launches: Vec<LaunchReport>,
    /// The distinct compiles the launches make.
    pub compiles: Vec<CompileReport>,
    /// Under pytest: each test's outcome.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<TestOutcome>,
    /// Why the run gave no records, when it gave none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The captured kernels' scope files, by digest (what the compiles loaded, and what
    /// `--emit-spec` writes beside the specs).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub scopes: BTreeMap<String, String>,
}

/// One launch, judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaunchReport {
    /// The kernel.
    pub kernel: CapturedKernel,
    /// The launching line.
    pub caller: Option<Site>,
    /// The script's calls (under pytest: the tests) that made it.
    pub calls: Vec<String>,
    /// How many times it was made.
    pub count: u64,
    /// For an autotuned launch: configs listed and configs tried after pruning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autotune: Option<AutotuneCounts>,
    /// The compiles it makes (indexes into [`TargetCapture::compiles`]).
    pub compiles: Vec<usize>,
    /// The grid.
    pub grid: Option<Vec<u64>>,
    /// The verdict.
    pub verdict: LaunchVerdict,
    /// Why it could not be compiled, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsupported: Option<String>,
}

/// An autotuned launch's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutotuneCounts {
    /// Configs in its list.
    pub configs: u64,
    /// Configs the autotuner would try after pruning.
    pub tried: u64,
}

/// What a launch comes to on its device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LaunchVerdict {
    /// Its config (every config it would try) fits.
    Fits,
    /// A fixed config over the budget: the engine crashes here.
    Over,
    /// Autotuned, and no config it would try fits: the engine crashes here.
    NoneFits,
    /// Autotuned, and some configs it would try do not fit: the autotuner skips them.
    SomeSkipped,
    /// A compile failed (an error, not a size).
    CompileError,
    /// It could not be compiled from its values (unsupported, or a worker failure).
    NotJudged,
}

impl LaunchVerdict {
    /// The words a table shows.
    pub fn as_str(self) -> &'static str {
        match self {
            LaunchVerdict::Fits => "fits",
            LaunchVerdict::Over => "OVER: the engine crashes here",
            LaunchVerdict::NoneFits => "none would fit: the engine crashes here",
            LaunchVerdict::SomeSkipped => "some don't: the autotuner skips them",
            LaunchVerdict::CompileError => "COMPILE ERROR",
            LaunchVerdict::NotJudged => "not judged",
        }
    }

    /// Whether the engine crashes at this launch on this device.
    pub fn crashes(self) -> bool {
        matches!(self, LaunchVerdict::Over | LaunchVerdict::NoneFits)
    }
}

/// One distinct compile and its result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompileReport {
    /// The kernel.
    pub kernel: CapturedKernel,
    /// Arguments as the JIT specializes them.
    pub args: BTreeMap<String, CapturedArg>,
    /// Constexprs.
    pub constexprs: BTreeMap<String, Value>,
    /// Options the launch passed.
    pub options: BTreeMap<String, Value>,
    /// Module-level values the kernel reads.
    pub globals: BTreeMap<String, Value>,
    /// The probe's result for this target (bytes, status, verdict).
    pub result: Option<ProbeResult>,
    /// Why it was not compiled (the spec it makes was refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
