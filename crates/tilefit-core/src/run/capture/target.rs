//! One target's emulated run: the script (or module) started under the target's emulated device,
//! its output streamed, and its records read back as hostile input, or why there are none.

use std::path::Path;
use std::process::Command;

use crate::compile::script::{self, ScriptEnd};
use crate::compile::toolchain::Toolchain;
use crate::device::emulated::EmulatedDevice;
use crate::input::capture::{self, Records, RecordsError};
use crate::input::capture_children;
use crate::model::capture::{ChildRun, ScriptRun};

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
    if let Some(tests) = tests {
        // The tests of the suite this process runs (`parts::Selection`).
        command.env("TILEFIT_CAPTURE_TESTS", tests);
    }
    let outcome = script::run(command, run.timeout, cancel, &mut |stream, line| {
        on_output(&device.key, stream, line);
    });
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
    let (end, code, signal) = match &outcome.end {
        ScriptEnd::Exited(code) => ("exited", Some(*code), None),
        ScriptEnd::Signaled(signal) => ("signaled", None, Some(*signal)),
        ScriptEnd::TimedOut(_) => ("timed-out", None, None),
        ScriptEnd::Cancelled => ("cancelled", None, None),
        ScriptEnd::CannotStart(_) => ("cannot-start", None, None),
    };
    let process = ScriptRun {
        end: end.to_owned(),
        code,
        signal,
        seconds: outcome.elapsed.as_secs_f64(),
        lines: outcome.lines,
        stdout_tail: outcome.stdout_tail.clone(),
        stderr_tail: outcome.stderr_tail.clone(),
    };
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
    let records = capture::read(&records_file).map_err(|e: RecordsError| e.to_string());
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
