//! `tilefit capture SCRIPT.py`: run the engine's own host code once per target under that
//! target's emulated device, capture every launch it makes, compile each distinct launch for the
//! target's arch through the probe pipeline (cache, pool), and judge every launch.
//!
//! The emulation is tilefit's Python package (`compile::package`), written to the run's scratch
//! folder. One [`Pipeline`] serves the whole run: every target's compiles and the fixes of its
//! launches share its workers and its scratch folder. `target` runs one target's process;
//! `compiles` compiles its distinct launches and judges them; `environment` gives each target's
//! script a home, caches and temp dir of its own, so a capture leaves the machine as it found it.

mod compiles;
mod environment;
mod error;
mod merge;
pub mod parts;
mod shard_compiles;
mod target;
mod units;

pub use error::{CaptureError, CaptureRun};
pub use merge::merge;

use crate::compile::Settings;
use crate::compile::toolchain::Toolchain;
use crate::device::emulated::EmulatedDevice;
use crate::device::{DeviceTable, TargetDevice};
use crate::model::capture::{CAPTURE_SCHEMA_VERSION, CaptureReport, TargetCapture};
use crate::model::kind::ReportKind;
use crate::model::probe::ToolInfo;
use crate::run::pipeline::Pipeline;

use target::TargetRecords;

/// How often a target's progress line is printed at most while its tests run.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

pub use super::capture_spec::specs;

/// The newest Triton the emulation was tested with (its patches reach into the driver's and the
/// autotuner's internals, which move between releases).
const NEWEST_TESTED_TRITON: (u32, u32) = (3, 6);

/// A warning when the environment's Triton is newer than [`NEWEST_TESTED_TRITON`].
fn untested_triton(version: &str) -> Option<String> {
    let mut parts = version.split(['.', '+']).map(|p| p.parse::<u32>().ok());
    let (major, minor) = (parts.next()??, parts.next()??);
    ((major, minor) > NEWEST_TESTED_TRITON).then(|| {
        format!(
            "tilefit: warning: the environment's Triton {version} is newer than the newest the capture's emulation was tested with ({}.{}): its internals may have moved; check the report's launches against a real run",
            NEWEST_TESTED_TRITON.0, NEWEST_TESTED_TRITON.1
        )
    })
}

/// `tilefit: [2/4] running SCRIPT as if on rtx-pro-6000 (sm_120)`.
fn starting(
    shown: &str,
    (index, of): (usize, usize),
    target: &TargetDevice,
    emulated: &EmulatedDevice,
    parts: usize,
) -> String {
    let represented = emulated
        .represented_by
        .as_ref()
        .map(|p| format!(", answering as the {p}"))
        .unwrap_or_default();
    let split = if parts > 1 {
        format!(", its tests in {parts} processes")
    } else {
        String::new()
    };
    format!(
        "tilefit: [{}/{of}] running {shown} as if on {} ({}{represented}){split}",
        index + 1,
        target.device,
        target.arch
    )
}

/// The lines to note while the run goes: each target's start, once, and its tests done and left
/// when a line is due.
fn progress_lines(
    (run, shown, emulated, shares, dir): (
        &CaptureRun<'_>,
        &str,
        &[EmulatedDevice],
        &[Vec<usize>],
        &std::path::Path,
    ),
    judged: &[Option<TargetCapture>],
    (progress, shown_start): (&mut units::Progress, &mut [bool]),
) -> Vec<String> {
    let mut lines = Vec::new();
    for (target, parts) in shares.iter().enumerate() {
        if parts.is_empty() || judged[target].is_some() {
            continue;
        }
        if !shown_start[target] {
            shown_start[target] = true;
            lines.push(starting(
                shown,
                (target, run.targets.len()),
                &run.targets[target],
                &emulated[target],
                parts.len(),
            ));
        }
        let counts: Vec<Option<(u64, u64)>> = parts
            .iter()
            .map(|&u| units::progress_of(&units::progress_file(dir, u)))
            .collect();
        lines.extend(progress.line(target, &run.targets[target].device, &counts));
    }
    lines
}

/// Whether a target that was to run has no report, or its run was cancelled.
fn unfinished(judged: &[Option<TargetCapture>], shares: &[Vec<usize>]) -> bool {
    judged
        .iter()
        .zip(shares)
        .any(|(t, parts)| !parts.is_empty() && t.is_none())
        || judged
            .iter()
            .flatten()
            .any(|t| t.script.as_ref().is_some_and(|s| s.end == "cancelled"))
}

/// Run the capture.
pub fn capture(
    run: &CaptureRun<'_>,
    toolchain: &Toolchain,
    settings: &Settings,
) -> Result<CaptureReport, CaptureError> {
    if run.module.is_none() {
        std::fs::metadata(run.script)
            .map_err(|e| CaptureError::Script(run.script.display().to_string(), e))?;
    }
    let shown = match run.module {
        Some(module) => format!("-m {module}"),
        None => run.script.display().to_string(),
    };
    let (table, reporter) = (DeviceTable::builtin()?, &settings.reporter);
    if let Some(warning) = untested_triton(&toolchain.triton_version) {
        reporter.note(&warning);
    }
    // One pipeline for the whole run: every target's compiles and fixes share its workers, and
    // its scratch folder holds the package, the records and the kernels' scope files.
    let pipeline = Pipeline::new(toolchain, settings, "capture");
    let dir = pipeline.scratch().to_path_buf();
    crate::compile::package::write_package(&dir.join("py"))
        .map_err(|e| CaptureError::Scratch(dir.display().to_string(), e))?;
    // Every target is checked before any runs: one that cannot be emulated is refused with the
    // value it lacks, before any work.
    let emulated: Vec<EmulatedDevice> = run
        .targets
        .iter()
        .map(|target| EmulatedDevice::of(table, target))
        .collect::<Result<_, _>>()?;
    let (units, shares) = units::plan(run, settings.jobs);
    let (sender, receiver) = std::sync::mpsc::channel();
    let mut judged: Vec<Option<TargetCapture>> = vec![None; run.targets.len()];
    let mut ended: Vec<Vec<Option<TargetRecords>>> =
        shares.iter().map(|parts| vec![None; parts.len()]).collect();
    let mut progress = units::Progress::new(run.targets.len(), PROGRESS_EVERY);
    let mut shown_start = vec![false; run.targets.len()];
    std::thread::scope(|scope| -> Result<(), CaptureError> {
        let (units, devices) = (&units, &emulated);
        let dir = &dir;
        scope.spawn(move || {
            units::run_all(
                toolchain,
                dir,
                run,
                (units, devices),
                (settings.jobs, &settings.cancel),
                &sender,
            );
        });
        loop {
            let message = match receiver.recv_timeout(std::time::Duration::from_millis(500)) {
                Ok(message) => Some(message),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            };
            match message {
                Some(units::Message::Line(unit, stream, line)) => {
                    let target = units[unit].target;
                    reporter.output(&emulated[target].key, stream, &line);
                }
                Some(units::Message::Done(unit, result)) => {
                    let target = units[unit].target;
                    let part = shares[target].iter().position(|&u| u == unit).unwrap_or(0);
                    ended[target][part] = Some((*result)?);
                    if ended[target].iter().all(Option::is_some) {
                        let parts = std::mem::take(&mut ended[target]).into_iter().flatten();
                        let report = target::judge_parts(
                            &pipeline,
                            run,
                            (&run.targets[target], &emulated[target]),
                            parts.collect(),
                        );
                        reporter.note(&target::judged_line((target, run.targets.len()), &report));
                        judged[target] = Some(report);
                    }
                }
                None => {}
            }
            for line in progress_lines(
                (run, &shown, &emulated, &shares, dir),
                &judged,
                (&mut progress, &mut shown_start),
            ) {
                reporter.note(&line);
            }
        }
        Ok(())
    })?;
    let incomplete = settings.cancel.is_cancelled() || unfinished(&judged, &shares);
    let targets: Vec<TargetCapture> = judged.into_iter().flatten().collect();
    Ok(CaptureReport {
        schema_version: CAPTURE_SCHEMA_VERSION,
        kind: ReportKind::Capture,
        tool: ToolInfo::current(),
        triton_version: toolchain.triton_version.clone(),
        triton_env: toolchain.env.clone(),
        python_version: toolchain.python_version.clone(),
        script: shown,
        script_args: run.args.to_vec(),
        targets,
        incomplete,
        workers: Some(pipeline.workers()).filter(|w| w.started > 0),
        shard: run.shard,
        allow_empty: run.allow_empty,
        allow_stopped: run.allow_stopped,
    })
}

#[cfg(test)]
mod tests {
    use super::untested_triton;

    #[test]
    fn a_triton_newer_than_the_tested_ones_is_warned_of() {
        assert!(untested_triton("3.6.0").is_none());
        assert!(untested_triton("3.5.1").is_none());
        assert!(untested_triton("3.7.1").unwrap().contains("3.7.1"));
        assert!(untested_triton("4.0.0+git1234").is_some());
        assert!(untested_triton("nonsense").is_none());
    }
}
