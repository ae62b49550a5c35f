//! A capture's report (`tilefit capture --json`, `kind: "capture"`): per target, the launches the
//! engine's own host code made under emulation, each judged through the compiles it makes, the
//! calls that stopped, and the script's errors.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::probe::{ProbeResult, ToolInfo};
use crate::device::TargetDevice;
use crate::device::emulated::EmulatedDevice;
use crate::input::capture::{
    CapturedArg, CapturedKernel, Frame, InductorKernel, InductorRescale, ProcessName, ScriptError,
    Site, Stopped, TestOutcome, ValueRead,
};

/// The report's schema version.
pub const CAPTURE_SCHEMA_VERSION: u32 = 1;

/// The whole capture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaptureReport {
    /// [`CAPTURE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Always `capture`.
    pub kind: super::kind::ReportKind,
    /// tilefit.
    pub tool: ToolInfo,
    /// The Triton the captures compiled with.
    pub triton_version: String,
    /// Triton's compile knobs set in the environment, under which it compiled.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub triton_env: BTreeMap<String, String>,
    /// Its Python.
    pub python_version: String,
    /// The script (or `-m MODULE`).
    pub script: String,
    /// Its arguments.
    pub script_args: Vec<String>,
    /// One run per target.
    pub targets: Vec<TargetCapture>,
    /// Cancelled (SIGINT/SIGTERM): targets after the one that was running are missing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
    /// How the run's compile workers started: one pool for every target (absent when nothing
    /// was compiled, and from reports saved before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<crate::compile::WorkersUsed>,
    /// The shard of the run this report is (`--shard K/N`): its targets' records are kept for
    /// `tilefit merge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::plan::shard::Shard>,
    /// `--allow-empty`: a target with no launch passed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_empty: bool,
    /// `--allow-stopped`: a stop that ended the script or a test early was reported, not failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_stopped: bool,
}

/// One target's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<TestOutcome>,
    /// Value checks passed over (not checked): a line each, with its count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<ValueRead>,
    /// Values assumed where host code read what emulation does not have: a line each, with the
    /// value; every launch after one is marked with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assumptions: Vec<ValueRead>,
    /// The run's child processes (the main one not among them): each joined to this report, or
    /// why its records could not be had.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<ChildRun>,
    /// Why the run gave no records, when it gave none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// How the script's process ended, and the tail of what it wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<ScriptRun>,
    /// Why this target fails closed: each a line of the report (empty: every launch was judged,
    /// and the script ran to its end).
    #[serde(default)]
    pub failures: Vec<TargetFailure>,
    /// The captured kernels' scope files, by digest (what the compiles loaded, and what
    /// `--emit-spec` writes beside the specs).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scopes: BTreeMap<String, String>,
    /// In a shard's report: the target's records as its processes wrote them (joined), which
    /// `tilefit merge` puts together with the other shards' (read as hostile input there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<serde_json::Value>,
}

/// A child process of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildRun {
    /// Its name and kind.
    pub process: ProcessName,
    /// Launches it made.
    pub launches: u64,
    /// Its exit status, as it recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i64>,
    /// Why its records could not be had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// How the script's process ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptRun {
    /// `exited`, `signaled`, `timed-out`, `cancelled` or `cannot-start`.
    pub end: String,
    /// The exit status, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// The signal that ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Seconds it ran.
    pub seconds: f64,
    /// Lines it wrote (stdout and stderr).
    pub lines: u64,
    /// The last lines of its stdout.
    pub stdout_tail: Vec<String>,
    /// The last lines of its stderr.
    pub stderr_tail: Vec<String>,
}

/// Why a target's run fails closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureCode {
    /// The script raised.
    ScriptError,
    /// A non-zero exit status (`sys.exit(4)`, `os._exit(3)`).
    ExitStatus,
    /// A signal or a crash.
    Signal,
    /// Past `--script-timeout`.
    Timeout,
    /// The run was cancelled.
    Cancelled,
    /// No records, or records that could not be read whole.
    Records,
    /// A launch that was not judged.
    NotJudged,
    /// A compile error.
    CompileError,
    /// Nothing was launched.
    Empty,
    /// A test could not be collected, or failed for a reason that is not an emulation limit.
    TestFailed,
    /// A stop the script did not catch ended it: the rest of the script was not run.
    StoppedEarly,
    /// A child process of the run whose records cannot be had, or that failed.
    Child,
}

impl FailureCode {
    /// The code as the JSON writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureCode::ScriptError => "script-error",
            FailureCode::ExitStatus => "exit-status",
            FailureCode::Signal => "signal",
            FailureCode::Timeout => "timeout",
            FailureCode::Cancelled => "cancelled",
            FailureCode::Records => "records",
            FailureCode::NotJudged => "not-judged",
            FailureCode::CompileError => "compile-error",
            FailureCode::Empty => "empty",
            FailureCode::TestFailed => "test-failed",
            FailureCode::StoppedEarly => "stopped-early",
            FailureCode::Child => "child",
        }
    }
}

/// Why a capture fails whatever its verdicts say (the capture gate's fail-closed part, one
/// decision for `capture`, `report` and `diff`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailedClosed {
    /// An interrupt cut the run short: no verdict of the missing targets can be trusted.
    Incomplete,
    /// Targets whose run failed (a script error, records not whole, a launch not judged, nothing
    /// launched...): each as `device: code: message`.
    Targets(Vec<String>),
}

impl CaptureReport {
    /// `3.6.0`, or `3.6.0 with TRITON_HIP_USE_ASYNC_COPY=1` where knobs were set.
    pub fn triton_label(&self) -> String {
        let set: Vec<String> = self
            .triton_env
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if set.is_empty() {
            self.triton_version.clone()
        } else {
            format!("{} with {}", self.triton_version, set.join(" "))
        }
    }

    /// Whether the capture failed closed, and why (`None`: its verdicts decide).
    pub fn failed_closed(&self) -> Option<FailedClosed> {
        if self.incomplete {
            return Some(FailedClosed::Incomplete);
        }
        let lines: Vec<String> = self
            .targets
            .iter()
            .flat_map(|t| {
                t.failures.iter().map(|f| {
                    format!(
                        "{}: {}: {}",
                        t.device.device,
                        f.code.as_str(),
                        crate::escape::control(&f.message)
                    )
                })
            })
            .collect();
        (!lines.is_empty()).then_some(FailedClosed::Targets(lines))
    }
}

/// One reason a target fails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetFailure {
    /// What kind.
    pub code: FailureCode,
    /// The report's line.
    pub message: String,
    /// The call it belongs to (under pytest, the test), when it belongs to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
}

/// One launch, judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchReport {
    /// The kernel.
    pub kernel: CapturedKernel,
    /// The launching line.
    pub caller: Option<Site>,
    /// From the user's call down to the launch, outermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<Frame>,
    /// The script's calls (under pytest: the tests) that made it.
    pub calls: Vec<String>,
    /// The processes and threads that made it (`main / MainThread`, `Process-1 / MainThread`),
    /// sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub places: Vec<String>,
    /// Launched after a value was assumed (the first such value's line): its arguments may
    /// depend on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assumed: Option<Site>,
    /// How many times it was made.
    pub count: u64,
    /// For an autotuned launch: configs listed and configs tried after pruning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autotune: Option<AutotuneCounts>,
    /// The compiles it makes (indexes into [`TargetCapture::compiles`]).
    pub compiles: Vec<usize>,
    /// The grid.
    pub grid: Option<Vec<u64>>,
    /// The verdict.
    pub verdict: LaunchVerdict,
    /// Why it could not be compiled, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsupported: Option<String>,
    /// For a launch that crashes the engine: the nearest configs that fit on this device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<LaunchFix>,
    /// A kernel `torch.compile` generated: Inductor's name for it, what chose its configs and
    /// its generated source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inductor: Option<InductorKernel>,
}

/// The way out of a launch over budget: the nearest configs that fit on its device, compiled
/// for it (fewer stages first, then smaller tiles), and what to pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchFix {
    /// Up to three that fit, nearest first: the changes in words and the bytes.
    pub fits: Vec<FixChoice>,
    /// What to change at the call site (`pass num_stages=1`), or in the autotune list.
    pub pass: String,
}

/// One config that fits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixChoice {
    /// `num_stages 2 -> 1`.
    pub changes: Vec<String>,
    /// The whole config (constexprs and options), as `NAME=VALUE` words.
    pub config: String,
    /// Its shared memory on the device.
    pub shared_bytes: u64,
}

/// An autotuned launch's counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutotuneCounts {
    /// Configs in its list.
    pub configs: u64,
    /// Configs the autotuner would try after pruning.
    pub tried: u64,
    /// The names the list's entries set (what a fix adds); a heuristic's are not among them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
}

/// What a launch comes to on its device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LaunchVerdict {
    /// Its config (every config it would try) fits.
    Fits,
    /// A fixed config over the budget: the engine crashes here.
    Over,
    /// A fixed config whose block has more threads than the device allows (num_warps x warp
    /// size): Triton raises OutOfResources "threads", the engine crashes here.
    #[serde(rename = "over-thread-limit")]
    OverThreads,
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
            LaunchVerdict::OverThreads => "THREADS over the limit: the engine crashes here",
            LaunchVerdict::NoneFits => "none would fit: the engine crashes here",
            LaunchVerdict::SomeSkipped => "some don't: the autotuner skips them",
            LaunchVerdict::CompileError => "COMPILE ERROR",
            LaunchVerdict::NotJudged => "not judged",
        }
    }

    /// Whether the engine crashes at this launch on this device.
    pub fn crashes(self) -> bool {
        matches!(
            self,
            LaunchVerdict::Over | LaunchVerdict::OverThreads | LaunchVerdict::NoneFits
        )
    }
}

/// One distinct compile and its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For a kernel `torch.compile` generated: the bytes Inductor's own compile of this config
    /// for the emulated arch reported, beside tilefit's (they agree; a test holds them to it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inductor_shared: Option<u64>,
    /// For a choice of a max-autotune selection: Inductor's description of its config
    /// (`BLOCK_K=32, BLOCK_M=64, ..., num_stages=5, num_warps=8`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inductor_choice: Option<String>,
    /// A config Inductor added once the kernel's configs were loaded: a copy of a reduction
    /// config with its R blocks halved, because its registers per thread leave too few resident
    /// blocks for its grid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inductor_rescaled: Option<InductorRescale>,
}
