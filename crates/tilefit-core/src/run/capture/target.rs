//! One target's emulated run: the script (or module) started under the target's emulated device,
//! its output streamed, and its records read back as hostile input, or why there are none.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::compile::script::{self, ScriptEnd};
use crate::compile::toolchain::Toolchain;
use crate::device::emulated::EmulatedDevice;
use crate::input::capture::{self, Records, RecordsError};
use crate::input::capture_children;
use crate::model::capture::{ChildRun, ScriptRun};

use crate::device::TargetDevice;
use crate::judge::capture::target_failures;
use crate::model::capture::TargetCapture;
use crate::run::pipeline::Pipeline;
use crate::units::counted;

use super::compiles::{self, judge_target};
use super::parts;
use super::{CaptureError, CaptureRun};

/// The exit code `_capture_main` gives when its Python cannot import torch.
const NO_TORCH: i32 = 3;

/// The records of one target's run and its children's.
pub(super) type TargetRecords = (ScriptRun, Result<Records, String>, Vec<ChildRun>);

/// The emulated run of one target: how its process ended, its records (its child processes'
/// joined) or why there are none, and its children.
pub(super) fn run_target(
    toolchain: &Toolchain,
    (scratch, index, tests, progress): (&Path, usize, Option<&str>, &Path),
    run: &CaptureRun<'_>,
    device: &EmulatedDevice,
    cancel: &crate::cancel::Cancel,
    on_output: &mut dyn FnMut(&str, script::Stream, &str),
) -> Result<TargetRecords, CaptureError> {
    let device_file = scratch.join(format!("device-{index}.json"));
    let records_file = scratch.join(format!("records-{index}.json"));
    let text = serde_json::to_string(device).unwrap_or_default();
    std::fs::write(&device_file, text)
        .map_err(|e| CaptureError::Scratch(device_file.display().to_string(), e))?;
    let python_path = match std::env::var_os("PYTHONPATH") {
        Some(existing) if !existing.is_empty() => {
            let mut joined = scratch.join("py").into_os_string();
            joined.push(":");
            joined.push(existing);
            joined
        }
        _ => scratch.join("py").into_os_string(),
    };
    let mut command = Command::new(&toolchain.python);
    command
        .arg("-m")
        .arg("tilefit._capture_main")
        .arg(&device_file)
        .arg(&records_file)
        .args(match run.module {
            Some(module) => vec!["-m".into(), std::ffi::OsString::from(module)],
            None => vec![run.script.as_os_str().to_owned()],
        })
        .args(run.args)
        .env("PYTHONPATH", python_path)
        .env("PYTHONUNBUFFERED", "1")
        // Triton's and Inductor's caches stay in the scratch (torch's Inductor makes its folder
        // in the user's temp otherwise). Inductor's is the target's own: it compiles
        // `torch.compile`d code for the emulated device, and a graph it cached for one target is
        // not another's.
        .env("TRITON_CACHE_DIR", scratch.join("triton-cache"))
        .env(
            "TORCHINDUCTOR_CACHE_DIR",
            scratch.join(format!("inductor-cache-{index}")),
        )
        // Under pytest, the tilefit plugin writes its tests done and collected here.
        .env("TILEFIT_CAPTURE_PROGRESS", progress);
    super::environment::apply(&mut command, scratch, index, run.writable)
        .map_err(|(dir, e)| CaptureError::Scratch(dir.display().to_string(), e))?;
    // The key the recorder signs its records with, on the process's stdin (never in its
    // environment, which `/proc/self/environ` keeps): a records file the script wrote shows.
    let key = crate::digest::random_key()
        .map_err(|e| CaptureError::Scratch("/dev/urandom".to_owned(), e))?;
    if let Some(tests) = tests {
        // The tests of the suite this process runs (`parts::Selection`).
        command.env("TILEFIT_CAPTURE_TESTS", tests);
    }
    let input = format!("{key}\n");
    let outcome = script::run_with_input(
        command,
        input.as_bytes(),
        run.timeout,
        cancel,
        &mut |stream, line| on_output(&device.key, stream, line),
    );
    let no_torch = outcome.end == ScriptEnd::Exited(NO_TORCH)
        && outcome
            .stderr_tail
            .iter()
            .any(|l| l.contains("cannot import torch"));
    if no_torch {
        return Err(CaptureError::NoTorch {
            python: toolchain.python.display().to_string(),
        });
    }
    let process = script_run(&outcome);
    if let ScriptEnd::CannotStart(why) = &outcome.end {
        return Ok((
            process,
            Err(format!(
                "cannot start {}: {why}",
                toolchain.python.display()
            )),
            Vec::new(),
        ));
    }
    let children_folder = scratch.join(format!("records-{index}.json.d"));
    let children = capture_children::read(&children_folder);
    if !records_file.exists() {
        let children = children.iter().map(child_run_of).collect();
        return Ok((
            process,
            Err("the script's process ended without tilefit's records (os._exit, a crash, a signal or a kill)".to_owned()),
            children,
        ));
    }
    let records = signed(&records_file, &key)
        .and_then(|()| capture::read(&records_file).map_err(|e: RecordsError| e.to_string()));
    let records = match records {
        Ok(records) if !records.complete => {
            Err("the records are not whole: the run did not reach its end (interrupted)".to_owned())
        }
        other => other,
    };
    let mut runs = Vec::new();
    let records = records.map(|mut records| {
        for child in children {
            let run = child_run_of(&child);
            if let Ok(child_records) = child.records {
                capture_children::join(&mut records, child_records, &child.process.name);
            }
            runs.push(run);
        }
        records
    });
    Ok((process, records, runs))
}

/// Whether the records file is what the recorder wrote: its signature (`.sig` beside it) is the
/// HMAC of its bytes under the run's key.
fn signed(records: &Path, key: &str) -> Result<(), String> {
    let mut sig = records.as_os_str().to_owned();
    sig.push(".sig");
    let text = std::fs::read(records).map_err(|e| format!("cannot read the records: {e}"))?;
    let said = std::fs::read_to_string(&sig).unwrap_or_default();
    if said.trim() == crate::digest::hmac_sha256(key.as_bytes(), &text) {
        Ok(())
    } else {
        Err("the records file is not the one tilefit's recorder wrote (its signature does not match): something in the run wrote to it".to_owned())
    }
}

/// How the script's process ended, as the report keeps it.
fn script_run(outcome: &script::ScriptOutcome) -> ScriptRun {
    let (end, code, signal) = match &outcome.end {
        ScriptEnd::Exited(code) => ("exited", Some(*code), None),
        ScriptEnd::Signaled(signal) => ("signaled", None, Some(*signal)),
        ScriptEnd::TimedOut(_) => ("timed-out", None, None),
        ScriptEnd::Cancelled => ("cancelled", None, None),
        ScriptEnd::CannotStart(_) => ("cannot-start", None, None),
    };
    ScriptRun {
        end: end.to_owned(),
        code,
        signal,
        seconds: outcome.elapsed.as_secs_f64(),
        lines: outcome.lines,
        stdout_tail: outcome.stdout_tail.clone(),
        stderr_tail: outcome.stderr_tail.clone(),
    }
}

/// What the report keeps of a child.
fn child_run_of(child: &capture_children::Child) -> ChildRun {
    ChildRun {
        process: child.process.clone(),
        launches: child
            .records
            .as_ref()
            .map_or(0, |r| r.launches.len() as u64),
        exit: child
            .exit
            .or_else(|| child.records.as_ref().ok().and_then(|r| r.exit)),
        failure: child.records.as_ref().err().cloned(),
    }
}

/// One target judged from its parts' runs: their records put back into one run's (each part's
/// joined with its children's already), its compiles on the run's pipeline, its failures; in a
/// shard, the records kept in the report for `tilefit merge`.
pub(super) fn judge_parts(
    pipeline: &Pipeline<'_>,
    run: &CaptureRun<'_>,
    (target, emulated): (&TargetDevice, &EmulatedDevice),
    parts: Vec<TargetRecords>,
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
        Some(records) => judge_target(compiles::Compiler::Pipeline(pipeline), records, report),
        None => report,
    };
    report.failures = target_failures(&report, run.allow_empty, run.allow_stopped);
    if run.shard.is_some() {
        report.records = records.and_then(|r| serde_json::to_value(r).ok());
    }
    report
}

/// `tilefit: [2/4] h100: 12 launches, 3 compiles, 0 failures`.
pub(super) fn judged_line((index, of): (usize, usize), report: &TargetCapture) -> String {
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
