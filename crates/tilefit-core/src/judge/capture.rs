//! A captured launch judged on its device: a fixed config over the budget, or an autotuned launch
//! none of whose tried configs fits, is where the engine crashes; an autotuned launch with some
//! configs over is one the autotuner survives by skipping them. And the capture's findings, for
//! the gate: the same rules as a probe's, a crashing launch found at its launching line.

use std::collections::BTreeMap;

use serde_json::Value;

use super::findings::{Findings, Judged, Miss, SubjectKey};
use crate::input::capture::InductorKernel;
use crate::model::capture::{
    CaptureReport, CompileReport, FailureCode, LaunchReport, LaunchVerdict, TargetCapture,
    TargetFailure,
};
use crate::model::verdict::VerdictCode;
use crate::units::format_count;
use crate::vocab::CompileStatus;

/// Why a kernel `torch.compile` generated cannot be judged from tilefit's compile: Inductor's own
/// compile of a config for the emulated arch gave other bytes than tilefit's compile of the
/// launch's values (a dynamic-shape kernel, whose ints Inductor leaves unspecialized where the
/// launch's values are multiples of 16). None where every compile agrees or has no Inductor bytes.
pub fn inductor_disagreement(compiles: &[&CompileReport]) -> Option<String> {
    compiles.iter().find_map(|c| {
        let inductor = c.inductor_shared?;
        let ours = c.result.as_ref()?.shared_bytes?;
        (inductor != ours).then(|| {
            format!(
                "Inductor's compile for the device needs {} bytes, tilefit's compile of the launch's values {}: Inductor specialized it differently (dynamic shapes), so neither is judged",
                format_count(inductor),
                format_count(ours)
            )
        })
    })
}

/// A max-autotune selection none of whose Triton choices fits still compiles where it has an
/// ATen kernel to fall back to: the autotuner skips every Triton choice. Any other verdict as is.
pub fn with_fallback(verdict: LaunchVerdict, inductor: Option<&InductorKernel>) -> LaunchVerdict {
    let fallback = inductor
        .and_then(|i| i.choices.as_ref())
        .is_some_and(|c| c.fallback.is_some());
    if fallback && verdict == LaunchVerdict::NoneFits {
        LaunchVerdict::SomeSkipped
    } else {
        verdict
    }
}

/// The verdict of a launch that makes `compiles` on `device`.
pub fn launch_verdict(
    autotuned: bool,
    unsupported: bool,
    compiles: &[&CompileReport],
    device: &str,
) -> LaunchVerdict {
    if unsupported || compiles.is_empty() {
        return LaunchVerdict::NotJudged;
    }
    let verdicts: Vec<Option<VerdictCode>> = compiles
        .iter()
        .map(|c| {
            c.result
                .as_ref()
                .and_then(|r| r.verdicts.iter().find(|v| v.device == device))
                .map(|v| v.verdict)
        })
        .collect();
    let fits = verdicts
        .iter()
        .filter(|v| **v == Some(VerdictCode::Fits))
        .count();
    let over = verdicts
        .iter()
        .filter(|v| {
            matches!(
                v,
                Some(VerdictCode::OverBudget | VerdictCode::OverThreadLimit)
            )
        })
        .count();
    let errors = verdicts
        .iter()
        .filter(|v| {
            matches!(
                v,
                Some(VerdictCode::CompileError | VerdictCode::UnsupportedOnTarget)
            )
        })
        .count();
    let judged = fits + over + errors;
    if judged < verdicts.len() {
        return LaunchVerdict::NotJudged;
    }
    // Triton turns a block with more threads than the driver allows into OutOfResources
    // "threads" before the launch, on NVIDIA and on AMD (HIP reports the kernel's flat work-group
    // size, which LLVM clamps to 1,024), so autotuners skip it like a config over the budget.
    let over_budget = verdicts.contains(&Some(VerdictCode::OverBudget));
    // A compile error is never a fit verdict: a launch with one is a compile error (a fixed
    // config over budget stays over: the engine crashes there whatever else fails), and "none
    // fits" means every config compiled and every one is over.
    match (autotuned, fits, over, errors) {
        (_, f, 0, 0) if f == verdicts.len() => LaunchVerdict::Fits,
        (false, _, o, _) if o > 0 && over_budget => LaunchVerdict::Over,
        (false, _, o, _) if o > 0 => LaunchVerdict::OverThreads,
        (_, _, _, e) if e > 0 => LaunchVerdict::CompileError,
        (true, 0, _, _) => LaunchVerdict::NoneFits,
        (true, _, _, _) => LaunchVerdict::SomeSkipped,
        (false, _, _, _) => LaunchVerdict::CompileError,
    }
}

/// The failure of the script's process itself: a non-zero status, a signal, the time limit, a
/// cancel.
fn process_failure(target: &TargetCapture) -> Option<TargetFailure> {
    let script = target.script.as_ref()?;
    let (code, message) = match script.end.as_str() {
        "exited" => {
            let code = script.code.filter(|c| *c != 0)?;
            let pytest = if target.tests.is_empty() {
                ""
            } else {
                " (pytest: a test failed, or collection or usage failed)"
            };
            (
                FailureCode::ExitStatus,
                format!("the script exited with status {code}{pytest}"),
            )
        }
        "signaled" => {
            let signal = script.signal.unwrap_or_default();
            let crash = if matches!(signal, 4 | 6 | 7 | 8 | 11) {
                ": a crash"
            } else {
                ""
            };
            (
                FailureCode::Signal,
                format!(
                    "the script was killed by signal {signal} ({}{crash})",
                    crate::compile::script::signal_name(signal)
                ),
            )
        }
        "timed-out" => (
            FailureCode::Timeout,
            format!(
                "the script ran past the time limit (--script-timeout) and was killed after {:.0} s, with everything it started",
                script.seconds
            ),
        ),
        "cancelled" => (
            FailureCode::Cancelled,
            "the run was cancelled (SIGINT or SIGTERM): the script was killed".to_owned(),
        ),
        _ => return None,
    };
    Some(TargetFailure {
        code,
        message,
        call: None,
    })
}

/// The stops that ended the script, a thread or a test (unless `allow_stopped`), and the child
/// processes whose records cannot be had.
fn ended_early(target: &TargetCapture, allow_stopped: bool) -> Vec<TargetFailure> {
    let mut failures = Vec::new();
    let mut fail = |code: FailureCode, message: String, call: Option<&String>| {
        failures.push(TargetFailure {
            code,
            message,
            call: call.cloned(),
        });
    };
    for stop in target
        .stopped
        .iter()
        .filter(|s| s.ended && !allow_stopped && !expected(target, s.call.as_deref()))
    {
        let place = match (&stop.file, stop.line) {
            (Some(file), Some(line)) => format!(" at {}:{line}", file_name(file)),
            _ => String::new(),
        };
        fail(
            FailureCode::StoppedEarly,
            format!(
                "{} stopped{place} ({}) and ended there: what it runs after that line was never run, so it is not judged (catch the stop, or avoid the call, to judge the rest)",
                match (&stop.call, target.tests.is_empty()) {
                    (Some(test), false) => format!("the test {test}"),
                    _ => who(stop.process.as_deref(), stop.thread.as_deref()),
                },
                stop.reason
            ),
            stop.call.as_ref(),
        );
    }
    for child in &target.children {
        let name = format!(
            "the child process {} ({})",
            child.process.name, child.process.kind
        );
        // A status the child ended with is its parent's to handle (a test marked to fail, a
        // pool that retries); its own errors and stops are failures above, with its name.
        if let Some(why) = &child.failure {
            fail(
                FailureCode::Child,
                format!("{name}: {why}; its launches are not judged"),
                None,
            );
        }
    }
    failures
}

/// The launches that were not judged, or whose compiles failed.
fn launch_failures(target: &TargetCapture) -> Vec<TargetFailure> {
    let mut failures = Vec::new();
    let mut fail = |code: FailureCode, message: String, call: Option<&String>| {
        failures.push(TargetFailure {
            code,
            message,
            call: call.cloned(),
        });
    };
    for launch in &target.launches {
        match launch.verdict {
            LaunchVerdict::NotJudged => fail(
                FailureCode::NotJudged,
                format!(
                    "{} was not judged: {}",
                    launch_text(launch),
                    launch
                        .unsupported
                        .as_deref()
                        .unwrap_or("a compile gave no result")
                ),
                launch.calls.first(),
            ),
            LaunchVerdict::CompileError => {
                let reasons: Vec<&str> = launch
                    .compiles
                    .iter()
                    .filter_map(|&i| target.compiles.get(i))
                    .filter_map(|c| {
                        c.error.as_deref().or_else(|| {
                            c.result
                                .as_ref()
                                .and_then(|r| r.error.as_ref())
                                .map(|e| e.message.as_str())
                        })
                    })
                    .collect();
                fail(
                    FailureCode::CompileError,
                    format!(
                        "{}: {} of {} compiles failed: {}",
                        launch_text(launch),
                        reasons.len().max(1),
                        launch.compiles.len(),
                        reasons.first().copied().unwrap_or("a compile error")
                    ),
                    launch.calls.first(),
                );
            }
            _ => {}
        }
    }
    failures
}

/// Why a target fails closed, each a line of the report. A target passes only when its script
/// ran to its end with status 0 (a stop it did not catch ends it early), its records were read
/// whole, every launch was compiled and judged, and at least one launch was captured (unless
/// `allow_empty`; a stop that ended the script, a thread or a test passes with `allow_stopped`).
/// Stopped calls the script went on from, and launches over budget, are the
/// gate's (`--fail-on stopped`, `baseline`, `none-fits`).
pub fn target_failures(
    target: &TargetCapture,
    allow_empty: bool,
    allow_stopped: bool,
) -> Vec<TargetFailure> {
    // A script error is the line; the status 1 it ended with says nothing more.
    let raised = !target.errors.is_empty()
        && target
            .script
            .as_ref()
            .is_some_and(|s| s.end == "exited" && s.code == Some(1));
    let process = process_failure(target).filter(|_| !raised);
    let explained = process.is_some();
    let mut failures: Vec<TargetFailure> = process.into_iter().collect();
    let mut fail = |code: FailureCode, message: String, call: Option<&String>| {
        failures.push(TargetFailure {
            code,
            message,
            call: call.cloned(),
        });
    };
    // No records after a crash, a signal or a timeout: the process's line explains it.
    if let Some(why) = target.failure.as_ref().filter(|_| !explained) {
        fail(FailureCode::Records, format!("no records: {why}"), None);
    }
    for error in target
        .errors
        .iter()
        .filter(|e| !expected(target, e.call.as_deref()))
    {
        let place = match (&error.file, error.line) {
            (Some(file), Some(line)) => format!(" at {}:{line}", file_name(file)),
            _ => String::new(),
        };
        fail(
            FailureCode::ScriptError,
            format!(
                "{} raised{place}: {}",
                who(error.process.as_deref(), error.thread.as_deref()),
                error.error
            ),
            error.call.as_ref(),
        );
    }
    failures.extend(ended_early(target, allow_stopped));
    let mut fail = |code: FailureCode, message: String, call: Option<&String>| {
        failures.push(TargetFailure {
            code,
            message,
            call: call.cloned(),
        });
    };
    for test in target.tests.iter().filter(|t| t.outcome == "failed") {
        fail(
            FailureCode::TestFailed,
            format!("test {} failed (not an emulation limit)", test.nodeid),
            Some(&test.nodeid),
        );
    }
    failures.extend(launch_failures(target));
    let mut fail = |code: FailureCode, message: String, call: Option<&String>| {
        failures.push(TargetFailure {
            code,
            message,
            call: call.cloned(),
        });
    };
    let launched: u64 = target.launches.iter().map(|l| l.count).sum();
    if launched == 0 && !allow_empty && target.failure.is_none() {
        fail(
            FailureCode::Empty,
            "nothing was launched: the script made no kernel launch (pass --allow-empty if that is expected)".to_owned(),
            None,
        );
    }
    failures
}

/// Whether what happened in `call` is what it expects: under pytest, a test marked to fail that
/// failed (its own errors, and those of the children it started).
fn expected(target: &TargetCapture, call: Option<&str>) -> bool {
    call.is_some_and(|call| {
        target
            .tests
            .iter()
            .any(|t| t.nodeid == call && t.outcome == "xfailed")
    })
}

/// Who raised or stopped: the script, or the thread or child process it was in.
pub fn who(process: Option<&str>, thread: Option<&str>) -> String {
    match (
        process.filter(|p| *p != "main"),
        thread.filter(|t| *t != "MainThread"),
    ) {
        (None, None) => "the script".to_owned(),
        (None, Some(thread)) => format!("the thread {thread}"),
        (Some(process), None) => format!("the child process {process}"),
        (Some(process), Some(thread)) => {
            format!("the thread {thread} of the child process {process}")
        }
    }
}

/// `BLOCK_N=32 num_stages=2`: a compile's constexprs and options, as a config.
pub fn config_of(compile: &CompileReport) -> BTreeMap<String, Value> {
    let mut config = compile.constexprs.clone();
    config.extend(compile.options.clone());
    config
}

/// `_fwd_kernel launched at prefill.py:195`, and `(after an assumed value at x.py:12)` when it
/// was launched after a value was assumed.
pub fn launch_text(launch: &LaunchReport) -> String {
    let text = match &launch.caller {
        Some(site) => format!(
            "{} launched at {}:{}",
            launch.kernel.function,
            file_name(&site.file),
            site.line
        ),
        None => launch.kernel.function.clone(),
    };
    match &launch.assumed {
        Some(site) => format!(
            "{text} (after an assumed value at {}:{})",
            file_name(&site.file),
            site.line
        ),
        None => text,
    }
}

/// The last part of a path, as tables show a launching line's file.
pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn key_of(launch: &LaunchReport) -> SubjectKey {
    let site = launch.caller.as_ref().map_or_else(String::new, |s| {
        format!("{}:{}", file_name(&s.file), s.line)
    });
    SubjectKey::File(format!("{}@{site}", launch.kernel.function))
}

impl CaptureReport {
    fn misses(&self, wanted: &[LaunchVerdict]) -> Vec<Miss> {
        let mut found = Vec::new();
        for target in &self.targets {
            for launch in &target.launches {
                if !wanted.contains(&launch.verdict) {
                    continue;
                }
                let over: Vec<String> = launch
                    .compiles
                    .iter()
                    .filter_map(|&i| target.compiles.get(i)?.result.as_ref())
                    .filter_map(|r| {
                        let v = r
                            .verdicts
                            .iter()
                            .find(|v| v.device == target.device.device)?;
                        Some(format!(
                            "{} > {} (+{})",
                            format_count(r.shared_bytes?),
                            format_count(v.budget),
                            format_count(v.over_by?)
                        ))
                    })
                    .collect();
                // Under pytest, the first test that made it: its annotation goes on the test.
                let tests: Vec<&crate::input::capture::TestOutcome> = launch
                    .calls
                    .iter()
                    .filter_map(|c| target.tests.iter().find(|t| &t.nodeid == c))
                    .collect();
                let test_site = tests.first().and_then(|t| Some((t.file.clone()?, t.line?)));
                let in_tests = match tests.as_slice() {
                    [] => String::new(),
                    [one] => format!(" (in {})", one.nodeid),
                    [one, rest @ ..] => {
                        format!(" (in {} and {} more tests)", one.nodeid, rest.len())
                    }
                };
                let detail = if launch.verdict == LaunchVerdict::NoneFits {
                    format!(
                        "none of the {} configs it would try fits",
                        launch.compiles.len()
                    )
                } else {
                    over.join(", ")
                };
                found.push(Miss {
                    subject: launch_text(launch),
                    key: key_of(launch),
                    device: target.device.device.clone(),
                    detail: format!("{detail}{in_tests}"),
                    entry: None,
                    site: test_site
                        .or_else(|| launch.caller.as_ref().map(|s| (s.file.clone(), s.line))),
                    kernel_site: Some((launch.kernel.file.clone(), launch.kernel.line)),
                });
            }
        }
        found
    }
}

impl Findings for CaptureReport {
    fn judged(&self) -> Vec<Judged> {
        let mut judged = Vec::new();
        for target in &self.targets {
            for compile in &target.compiles {
                let Some(result) = &compile.result else {
                    continue;
                };
                let config = config_of(compile);
                let subject = format!(
                    "{} {}",
                    compile.kernel.function,
                    crate::vocab::describe_config(
                        &config
                            .iter()
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect::<Vec<_>>()
                    )
                );
                let mut keyed = config.clone();
                keyed.insert(
                    "kernel".to_owned(),
                    Value::from(compile.kernel.function.clone()),
                );
                for v in result
                    .verdicts
                    .iter()
                    .filter(|v| v.device == target.device.device)
                {
                    judged.push(Judged {
                        subject: subject.clone(),
                        key: SubjectKey::config(&keyed),
                        device: v.device.clone(),
                        arch: result.arch.clone(),
                        status: result.status,
                        shared_bytes: result.shared_bytes,
                        budget: v.budget,
                        verdict: v.verdict,
                        over_by: v.over_by,
                        threads_per_block: v.threads_per_block,
                        max_threads_per_block: v.max_threads_per_block,
                        spill_bytes: result.resources.as_ref().and_then(|r| r.spill_bytes),
                    });
                }
            }
        }
        judged
    }

    fn failed_jobs(&self) -> (usize, usize) {
        let results = self
            .targets
            .iter()
            .flat_map(|t| &t.compiles)
            .filter_map(|c| c.result.as_ref());
        let (mut failed, mut total) = (0, 0);
        for result in results {
            total += 1;
            if result.status == CompileStatus::Failed {
                failed += 1;
            }
        }
        (failed, total)
    }

    /// A fixed config over the budget: what the engine ships at that launch misses the device.
    fn shipped_misses(&self, _shipped: Option<&crate::fix::ConfigExport>) -> Vec<Miss> {
        self.misses(&[LaunchVerdict::Over, LaunchVerdict::OverThreads])
    }

    /// An autotuned launch none of whose tried configs fits.
    fn none_fits(&self) -> Vec<Miss> {
        self.misses(&[LaunchVerdict::NoneFits])
    }

    fn stopped_calls(&self) -> Vec<(String, String)> {
        let mut found = Vec::new();
        for target in &self.targets {
            for stop in &target.stopped {
                let place = match (&stop.file, stop.line) {
                    (Some(f), Some(l)) => format!("{}:{l}", file_name(f)),
                    _ => "?".to_owned(),
                };
                found.push((
                    target.device.device.clone(),
                    format!(
                        "stopped at {place} on {}: {}",
                        target.device.device, stop.reason
                    ),
                ));
            }
        }
        found
    }

    fn subject(&self) -> crate::model::identity::Subject {
        crate::model::identity::Subject::Replay {
            kernels: self
                .targets
                .iter()
                .flat_map(|t| &t.compiles)
                .map(|c| c.kernel.function.clone())
                .collect(),
        }
    }
}

/// How many launches of the report would crash the engine.
pub fn crash_count(report: &CaptureReport) -> usize {
    report
        .targets
        .iter()
        .flat_map(|t| &t.launches)
        .filter(|l| l.verdict.crashes())
        .count()
}

/// Per kernel (in name order), the devices where a launch of it would crash the engine, in the
/// report's target order.
pub fn crashes_by_kernel(report: &CaptureReport) -> Vec<(String, Vec<String>)> {
    let mut by_kernel: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for target in &report.targets {
        for launch in target.launches.iter().filter(|l| l.verdict.crashes()) {
            let devices = by_kernel.entry(launch.kernel.function.clone()).or_default();
            if !devices.contains(&target.device.device) {
                devices.push(target.device.device.clone());
            }
        }
    }
    by_kernel.into_iter().collect()
}
