//! `tilefit capture SCRIPT.py`: run the engine's own host code once per target under that
//! target's emulated device, capture every launch it makes, compile each distinct launch for the
//! target's arch through the probe pipeline (cache, pool), and judge every launch.
//!
//! The emulation is tilefit's Python package (`compile::package`), written to the run's scratch
//! folder. One [`Pipeline`] serves the whole run: every target's compiles and the fixes of its
//! launches share its workers and its scratch folder. `target` runs one target's process;
//! `compiles` compiles its distinct launches and judges them.

mod compiles;
mod error;
mod merge;
pub mod parts;
mod target;
mod units;

pub use error::{CaptureError, CaptureRun};
pub use merge::merge;

use std::collections::BTreeMap;

use crate::compile::script;
use crate::compile::toolchain::Toolchain;
use crate::compile::{Event, Settings};
use crate::device::emulated::EmulatedDevice;
use crate::device::{DeviceTable, TargetDevice};
use crate::judge::capture::target_failures;
use crate::model::capture::{CAPTURE_SCHEMA_VERSION, CaptureReport, TargetCapture};
use crate::model::kind::ReportKind;
use crate::model::probe::ToolInfo;
use crate::run::pipeline::Pipeline;
use crate::units::counted;

use compiles::judge_target;
use parts::Selection;
use target::TargetRecords;
use units::Unit;

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

/// The processes of the run, and each target's among them (by index; none for a target another
/// shard runs). A pytest run's tests are split: over the shards (each shard runs its share of
/// every target's tests), then over the processes of this machine (`jobs` at once: a target's
/// share in as many parts as leave no core idle). A script's run is one process per target; its
/// shards split the targets.
fn plan_units(run: &CaptureRun<'_>, jobs: usize) -> (Vec<Unit>, Vec<Vec<usize>>) {
    let (shard, shards) = run.shard.map_or((0, 1), |s| (s.index - 1, s.count));
    let split = run.module == Some("pytest");
    let mine: Vec<usize> = (0..run.targets.len())
        .filter(|&t| split || t % shards == shard)
        .collect();
    let parts = if split {
        jobs.div_ceil(mine.len().max(1)).max(1)
    } else {
        1
    };
    let mut units = Vec::new();
    let mut shares = vec![Vec::new(); run.targets.len()];
    for &target in &mine {
        for part in 0..parts {
            shares[target].push(units.len());
            units.push(Unit {
                target,
                selection: Selection {
                    offset: target,
                    shards,
                    shard,
                    parts,
                    part,
                },
                split,
            });
        }
    }
    (units, shares)
}

/// One target judged from its parts' runs: their records put back into one run's (each part's
/// joined with its children's already), its compiles on the run's pipeline, its failures; in a
/// shard, the records kept in the report for `tilefit merge`.
fn judge_parts(
    pipeline: &Pipeline<'_>,
    run: &CaptureRun<'_>,
    (target, emulated): (&TargetDevice, &EmulatedDevice),
    parts: Vec<TargetRecords>,
    on_event: &mut dyn FnMut(Event),
) -> TargetCapture {
    let mut processes = Vec::new();
    let mut records = Vec::new();
    let mut children = Vec::new();
    let mut failure = None;
    for (process, part, kids) in parts {
        processes.push(process);
        children.extend(kids);
        match part {
            Ok(part) => records.push(part),
            Err(why) => failure = failure.or(Some(why)),
        }
    }
    let records = failure.is_none().then(|| parts::merge(records));
    let report = TargetCapture {
        device: target.clone(),
        emulated: emulated.clone(),
        versions: BTreeMap::new(),
        calls: 0,
        stopped: Vec::new(),
        errors: Vec::new(),
        launches: Vec::new(),
        compiles: Vec::new(),
        tests: Vec::new(),
        checks: Vec::new(),
        assumptions: Vec::new(),
        children,
        failure,
        script: parts::combine_runs(processes),
        failures: Vec::new(),
        scopes: BTreeMap::new(),
        records: None,
    };
    let mut report = match &records {
        Some(records) => judge_target(
            compiles::Compiler::Pipeline(pipeline, on_event),
            records,
            report,
        ),
        None => report,
    };
    report.failures = target_failures(&report, run.allow_empty, run.allow_stopped);
    if run.shard.is_some() {
        report.records = records.and_then(|r| serde_json::to_value(r).ok());
    }
    report
}

/// `tilefit: [2/4] h100: 12 launches, 3 compiles, 0 failures`.
fn judged_line((index, of): (usize, usize), report: &TargetCapture) -> String {
    format!(
        "tilefit: [{}/{of}] {}: {}, {}, {}",
        index + 1,
        report.device.device,
        counted(
            report.launches.iter().map(|l| l.count).sum::<u64>(),
            "launch",
            "launches"
        ),
        counted(report.compiles.len() as u64, "compile", "compiles"),
        counted(report.failures.len() as u64, "failure", "failures")
    )
}

/// Run the capture.
pub fn capture(
    run: &CaptureRun<'_>,
    toolchain: &Toolchain,
    settings: &Settings,
    on_note: &mut dyn FnMut(String),
    on_output: &mut dyn FnMut(&str, script::Stream, &str),
    on_event: &mut dyn FnMut(Event),
) -> Result<CaptureReport, CaptureError> {
    if run.module.is_none() {
        std::fs::metadata(run.script)
            .map_err(|e| CaptureError::Script(run.script.display().to_string(), e))?;
    }
    let shown = match run.module {
        Some(module) => format!("-m {module}"),
        None => run.script.display().to_string(),
    };
    let table = DeviceTable::builtin()?;
    if let Some(warning) = untested_triton(&toolchain.triton_version) {
        on_note(warning);
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
    let (units, shares) = plan_units(run, settings.jobs);
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
                    on_output(&emulated[target].key, stream, &line);
                }
                Some(units::Message::Done(unit, result)) => {
                    let target = units[unit].target;
                    let part = shares[target].iter().position(|&u| u == unit).unwrap_or(0);
                    ended[target][part] = Some(result?);
                    if ended[target].iter().all(Option::is_some) {
                        let parts = std::mem::take(&mut ended[target]).into_iter().flatten();
                        let report = judge_parts(
                            &pipeline,
                            run,
                            (&run.targets[target], &emulated[target]),
                            parts.collect(),
                            on_event,
                        );
                        on_note(judged_line((target, run.targets.len()), &report));
                        judged[target] = Some(report);
                    }
                }
                None => {}
            }
            for (target, parts) in shares.iter().enumerate() {
                if parts.is_empty() || judged[target].is_some() {
                    continue;
                }
                if !shown_start[target] {
                    shown_start[target] = true;
                    on_note(starting(
                        &shown,
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
                if let Some(line) = progress.line(target, &run.targets[target].device, &counts) {
                    on_note(line);
                }
            }
        }
        Ok(())
    })?;
    let incomplete = settings.cancel.is_cancelled()
        || judged
            .iter()
            .zip(&shares)
            .any(|(t, parts)| !parts.is_empty() && t.is_none())
        || judged
            .iter()
            .flatten()
            .any(|t| t.script.as_ref().is_some_and(|s| s.end == "cancelled"));
    let targets: Vec<TargetCapture> = judged.into_iter().flatten().collect();
    Ok(CaptureReport {
        schema_version: CAPTURE_SCHEMA_VERSION,
        kind: ReportKind::Capture,
        tool: ToolInfo::current(),
        triton_version: toolchain.triton_version.clone(),
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
