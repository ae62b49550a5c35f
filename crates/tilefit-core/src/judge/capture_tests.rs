//! A test suite's capture judged test by test, per target: what JUnit's cases and the test lines
//! of annotations and summaries say. A test fails where one of its launches would crash the
//! engine on the target (a fixed config over the budget, an autotuned launch none of whose
//! configs fits), where one of its launches was not judged or did not compile, where a stop
//! ended it early (unless stops are allowed), where it raised, or where it failed as a test.
//! What fails the target outside every test (the suite's own errors, a process that died) is the
//! suite's own case.

use std::fmt::Write as _;

use crate::model::capture::{FailureCode, LaunchReport, LaunchVerdict, TargetCapture};
use crate::model::probe::ProbeResult;
use crate::model::verdict::{DeviceVerdict, VerdictCode};

use super::capture::launch_text;

/// One test on one target.
#[derive(Debug, Clone, PartialEq)]
pub struct TestVerdict {
    /// The test's node id.
    pub nodeid: String,
    /// Its file and line, when the plugin recorded them.
    pub site: Option<(String, u64)>,
    /// Seconds it ran.
    pub seconds: f64,
    /// Its outcome under emulation.
    pub outcome: String,
    /// Marked to fail and failed: what it expects (JUnit's skipped).
    pub expected_failure: bool,
    /// Why it fails, a line each (empty: it passes).
    pub failures: Vec<TestFailure>,
    /// Launches it made; value checks it passed over.
    pub launches: u64,
    /// Its value checks passed over (not checked).
    pub checks: u64,
}

/// Why a test fails.
#[derive(Debug, Clone, PartialEq)]
pub struct TestFailure {
    /// `over-budget`, `over-thread-limit`, `none-fits`, `not-judged`, `compile-error`,
    /// `stopped`, `script-error` or `test-failed`.
    pub kind: &'static str,
    /// The line: the kernel, the launching line, the bytes and the budget, the fix.
    pub message: String,
    /// Where to point: the launching line, the stop's line, the error's line.
    pub site: Option<(String, u64)>,
}

/// Each compile of the launch with its result and its verdict on the target's device.
fn judged_compiles<'a>(
    target: &'a TargetCapture,
    launch: &'a LaunchReport,
) -> impl Iterator<Item = (&'a ProbeResult, &'a DeviceVerdict)> + 'a {
    launch.compiles.iter().filter_map(|&i| {
        let result = target.compiles.get(i)?.result.as_ref()?;
        let verdict = result
            .verdicts
            .iter()
            .find(|v| v.device == target.device.device)?;
        Some((result, verdict))
    })
}

/// The shared bytes and the budget of the launch's compile that decides its verdict on the
/// target: a fixed config's, or the smallest of an autotuned list's.
fn bytes_of(target: &TargetCapture, launch: &LaunchReport) -> Option<(u64, u64)> {
    judged_compiles(target, launch)
        .filter(|(_, v)| v.verdict == VerdictCode::OverBudget)
        .filter_map(|(r, v)| Some((r.shared_bytes?, v.budget)))
        .min()
}

/// The threads per block and the device's limit of the launch's widest compile over the thread
/// limit on the target.
fn threads_of(target: &TargetCapture, launch: &LaunchReport) -> Option<(u32, u32)> {
    judged_compiles(target, launch)
        .filter(|(_, v)| v.verdict == VerdictCode::OverThreadLimit)
        .filter_map(|(_, v)| Some((v.threads_per_block?, v.max_threads_per_block?)))
        .max()
}

/// A crashing launch's line: what, how far over, and what to change.
pub fn crash_text(target: &TargetCapture, launch: &LaunchReport) -> String {
    let mut text = launch_text(launch);
    let device = &target.device.device;
    let threads =
        threads_of(target, launch).filter(|_| launch.verdict == LaunchVerdict::OverThreads);
    match (bytes_of(target, launch), threads) {
        (_, Some((threads, limit))) => {
            let _ = write!(
                text,
                ": a block of {threads} threads (num_warps x warp size {}), {device} allows {limit}",
                target.device.warp_size
            );
        }
        (Some((bytes, budget)), None) => {
            let _ = write!(
                text,
                ": needs {bytes} bytes of shared memory per block, {device} allows {budget} (over by {})",
                bytes.saturating_sub(budget)
            );
        }
        (None, None) => {
            let _ = write!(text, ": {} on {device}", launch.verdict.as_str());
        }
    }
    if launch.verdict == LaunchVerdict::NoneFits {
        text.push_str("; no config of its autotune list fits");
    }
    match (
        &launch.fix,
        launch.fix.as_ref().and_then(|f| f.fits.first()),
    ) {
        (Some(fix), Some(first)) => {
            let _ = write!(
                text,
                "; fix: {} ({}: {} bytes)",
                fix.pass, first.config, first.shared_bytes
            );
        }
        // No nearer config fits: the fix says what must change instead.
        (Some(fix), None) => {
            let _ = write!(text, "; {}", fix.pass);
        }
        (None, _) => {}
    }
    text
}

fn site_of(file: Option<&String>, line: Option<u64>) -> Option<(String, u64)> {
    Some((file?.clone(), line?))
}

/// Every test of the target, judged (in the suite's order).
pub fn test_verdicts(target: &TargetCapture) -> Vec<TestVerdict> {
    target
        .tests
        .iter()
        .map(|test| {
            let id = test.nodeid.as_str();
            let ours = |call: &Option<String>| call.as_deref() == Some(id);
            let expected_failure = test.outcome == "xfailed";
            let mut failures = Vec::new();
            for launch in target
                .launches
                .iter()
                .filter(|l| l.calls.iter().any(|c| c == id))
            {
                let site = launch.caller.as_ref().map(|s| (s.file.clone(), s.line));
                let (kind, message) = match launch.verdict {
                    LaunchVerdict::Over => ("over-budget", crash_text(target, launch)),
                    LaunchVerdict::OverThreads => ("over-thread-limit", crash_text(target, launch)),
                    LaunchVerdict::NoneFits => ("none-fits", crash_text(target, launch)),
                    LaunchVerdict::NotJudged => (
                        "not-judged",
                        format!(
                            "{} was not judged: {}",
                            launch_text(launch),
                            launch
                                .unsupported
                                .as_deref()
                                .unwrap_or("a compile gave no result")
                        ),
                    ),
                    LaunchVerdict::CompileError => (
                        "compile-error",
                        format!("{}: a compile failed", launch_text(launch)),
                    ),
                    _ => continue,
                };
                failures.push(TestFailure {
                    kind,
                    message,
                    site,
                });
            }
            // Its stops, errors and failure as the target's failures judged them (a stop is one
            // unless stops are allowed; an error of a test marked to fail is not).
            for failure in target.failures.iter().filter(|f| ours(&f.call)) {
                let (kind, site) = match failure.code {
                    FailureCode::StoppedEarly => (
                        "stopped",
                        target
                            .stopped
                            .iter()
                            .find(|s| ours(&s.call) && s.ended)
                            .and_then(|s| site_of(s.file.as_ref(), s.line)),
                    ),
                    FailureCode::ScriptError => (
                        "script-error",
                        target
                            .errors
                            .iter()
                            .find(|e| ours(&e.call))
                            .and_then(|e| site_of(e.file.as_ref(), e.line)),
                    ),
                    FailureCode::TestFailed => {
                        ("test-failed", site_of(test.file.as_ref(), test.line))
                    }
                    _ => continue,
                };
                failures.push(TestFailure {
                    kind,
                    message: failure.message.clone(),
                    site,
                });
            }
            TestVerdict {
                nodeid: test.nodeid.clone(),
                site: site_of(test.file.as_ref(), test.line),
                seconds: test.seconds.unwrap_or(0.0),
                outcome: test.outcome.clone(),
                expected_failure,
                failures,
                launches: test.launches,
                checks: test.checks,
            }
        })
        .collect()
}

/// The target's failures that belong to no test: the suite's own (its collection, its process,
/// its children outside a test).
pub fn suite_failures(target: &TargetCapture) -> Vec<String> {
    // pytest's status 1 says a test failed: that test's case says which.
    let a_test_failed = target.tests.iter().any(|t| t.outcome == "failed")
        && target.script.as_ref().is_some_and(|s| s.code == Some(1));
    target
        .failures
        .iter()
        .filter(|f| !(a_test_failed && f.code == FailureCode::ExitStatus))
        .filter(|f| {
            f.call
                .as_ref()
                .is_none_or(|call| !target.tests.iter().any(|t| &t.nodeid == call))
        })
        .map(|f| f.message.clone())
        .collect()
}
