//! `tilefit capture SCRIPT.py`: run the engine's own host code once per target under that
//! target's emulated device, capture every launch it makes, compile each distinct launch for the
//! target's arch through the probe pipeline (cache, pool), and judge every launch.
//!
//! The emulation is tilefit's Python package (`python/tilefit/_emulation.py`, `_capture.py`,
//! `_capture_main.py`), embedded here and written to the run's scratch folder, first on the
//! script's `PYTHONPATH`: the script may `from tilefit import emulate` whether or not the package
//! is installed, and always gets this release's.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::compile::script::{self, ScriptEnd};
use crate::compile::toolchain::Toolchain;
use crate::compile::{Event, Scratch, Settings};
use crate::device::emulated::{EmulatedDevice, NotEmulable};
use crate::device::{DeviceTable, TargetDevice};
use crate::input::capture::{self, Records, RecordsError};
use crate::input::spec;
use crate::judge::capture::{launch_verdict, target_failures};
use crate::model::capture::{
    AutotuneCounts, CAPTURE_SCHEMA_VERSION, CaptureReport, CompileReport, LaunchReport,
    LaunchVerdict, ScriptRun, TargetCapture,
};
use crate::model::kind::ReportKind;
use crate::model::probe::ToolInfo;
use crate::model::verdict::VerdictCode;
use crate::plan::capture::{Compile, plan, scope_file_name, spec_toml};

pub use super::capture_spec::specs;

/// The package the emulated process imports, by file name: the folder `python/tilefit`, embedded.
pub const PACKAGE: &[(&str, &str)] = &[
    (
        "__init__.py",
        include_str!("../../../../python/tilefit/__init__.py"),
    ),
    (
        "_autograd.py",
        include_str!("../../../../python/tilefit/_autograd.py"),
    ),
    (
        "_capture.py",
        include_str!("../../../../python/tilefit/_capture.py"),
    ),
    (
        "_capture_main.py",
        include_str!("../../../../python/tilefit/_capture_main.py"),
    ),
    (
        "_choices.py",
        include_str!("../../../../python/tilefit/_choices.py"),
    ),
    (
        "_device.py",
        include_str!("../../../../python/tilefit/_device.py"),
    ),
    (
        "_emulation.py",
        include_str!("../../../../python/tilefit/_emulation.py"),
    ),
    (
        "_errors.py",
        include_str!("../../../../python/tilefit/_errors.py"),
    ),
    (
        "_fit.py",
        include_str!("../../../../python/tilefit/_fit.py"),
    ),
    (
        "_prune.py",
        include_str!("../../../../python/tilefit/_prune.py"),
    ),
    (
        "_scope.py",
        include_str!("../../../../python/tilefit/_scope.py"),
    ),
    (
        "_system.py",
        include_str!("../../../../python/tilefit/_system.py"),
    ),
    (
        "emulate.py",
        include_str!("../../../../python/tilefit/emulate.py"),
    ),
    (
        "pytest_plugin.py",
        include_str!("../../../../python/tilefit/pytest_plugin.py"),
    ),
];

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

/// The exit code `_capture_main` gives when its Python cannot import torch.
const NO_TORCH: i32 = 3;

/// Why a capture could not run at all (a target's failed run is a note in its report instead).
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The script is not there.
    #[error("cannot read the script `{0}`")]
    Script(String, #[source] std::io::Error),
    /// The Python cannot import torch.
    #[error("the Python that runs the script ({python}) cannot import torch")]
    NoTorch {
        /// The interpreter.
        python: String,
    },
    /// A target the table cannot emulate.
    #[error(transparent)]
    Device(#[from] NotEmulable),
    /// The embedded device table.
    #[error(transparent)]
    Table(#[from] crate::device::TableError),
    /// The scratch folder.
    #[error("cannot write the capture's scratch folder `{0}`")]
    Scratch(String, #[source] std::io::Error),
}

impl crate::hint::Hint for CaptureError {
    fn hint(&self) -> Option<String> {
        match self {
            CaptureError::Script(..) => Some("pass the Python script that calls the engine's host code".to_owned()),
            CaptureError::NoTorch { .. } => Some(
                "install torch into the environment where the engine and Triton are (`pip install torch`: it imports on a machine with no GPU), or pass `--python` of one that has it"
                    .to_owned(),
            ),
            CaptureError::Device(e) => crate::hint::Hint::hint(e),
            CaptureError::Table(_) | CaptureError::Scratch(..) => None,
        }
    }
}

/// What to capture.
pub struct CaptureRun<'a> {
    /// The script; with `module`, ignored.
    pub script: &'a Path,
    /// Run this module as `__main__` instead of a script (`pytest`).
    pub module: Option<&'a str>,
    /// Its arguments.
    pub args: &'a [String],
    /// The targets, each run in its own process.
    pub targets: &'a [TargetDevice],
    /// How long one target's run may take.
    pub timeout: std::time::Duration,
    /// Whether a target with no launch passes (`--allow-empty`).
    pub allow_empty: bool,
}

/// Write the embedded package under `dir` (as `dir/tilefit/...`).
pub fn write_package(dir: &Path) -> std::io::Result<()> {
    let package = dir.join("tilefit");
    std::fs::create_dir_all(&package)?;
    for (name, text) in PACKAGE {
        std::fs::write(package.join(name), text)?;
    }
    Ok(())
}

/// The emulated run of one target: how its process ended, and its records or why there are none.
fn run_target(
    toolchain: &Toolchain,
    (scratch, index): (&Path, usize),
    run: &CaptureRun<'_>,
    device: &EmulatedDevice,
    cancel: &crate::cancel::Cancel,
    on_output: &mut dyn FnMut(&str, script::Stream, &str),
) -> Result<(ScriptRun, Result<Records, String>), CaptureError> {
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
        // Triton's and Inductor's caches stay in the scratch: nothing is compiled for a device,
        // but imports look, and torch's Inductor makes its folder in the user's temp otherwise.
        .env("TRITON_CACHE_DIR", scratch.join("triton-cache"))
        .env("TORCHINDUCTOR_CACHE_DIR", scratch.join("inductor-cache"));
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
        ));
    }
    if !records_file.exists() {
        return Ok((
            process,
            Err("the script's process ended without tilefit's records (os._exit, a crash, a signal or a kill)".to_owned()),
        ));
    }
    let records = capture::read(&records_file).map_err(|e: RecordsError| e.to_string());
    let records = match records {
        Ok(records) if !records.complete => {
            Err("the records are not whole: the run did not reach its end (interrupted)".to_owned())
        }
        other => other,
    };
    Ok((process, records))
}

/// The probe results of one target's compiles, each through its spec (the same TOML
/// `--emit-spec` writes for it), on one pool of workers.
fn compile_all(
    compiles: &[Compile],
    scopes: &BTreeMap<String, String>,
    target: &TargetDevice,
    toolchain: &Toolchain,
    settings: &Settings,
    (scratch, round): (&Path, &str),
    on_event: &mut dyn FnMut(Event),
) -> Vec<CompileReport> {
    let mut reports: Vec<CompileReport> = compiles
        .iter()
        .map(|compile| CompileReport {
            kernel: compile.kernel.clone(),
            args: compile.args.clone(),
            constexprs: compile.constexprs.clone(),
            options: compile.options.clone(),
            globals: compile.globals.clone(),
            result: None,
            error: None,
        })
        .collect();
    let mut specs = Vec::new();
    let mut spec_of = Vec::new();
    let kernels = scratch.join("kernels");
    for (i, compile) in compiles.iter().enumerate() {
        let scope_path = kernels.join(scope_file_name(&compile.kernel));
        let written = compile
            .kernel
            .scope
            .as_ref()
            .and_then(|d| scopes.get(d))
            .ok_or_else(|| "the records hold no scope file for its kernel".to_owned())
            .and_then(|scope| {
                std::fs::create_dir_all(&kernels)
                    .and_then(|()| std::fs::write(&scope_path, scope))
                    .map_err(|e| format!("cannot write {}: {e}", scope_path.display()))
            });
        if let Err(why) = written {
            reports[i].error = Some(why);
            continue;
        }
        let text = spec_toml(
            &[compile],
            std::slice::from_ref(&target.device),
            "captured by tilefit capture",
            &scope_path.display().to_string(),
        );
        let path = scratch.join(format!("spec-{round}-{i}.toml"));
        if let Err(e) = std::fs::write(&path, &text) {
            reports[i].error = Some(format!("cannot write {}: {e}", path.display()));
            continue;
        }
        match spec::parse(&text, &path) {
            Ok(spec) => {
                specs.push(spec);
                spec_of.push(i);
            }
            Err(e) => reports[i].error = Some(crate::hint::chain_text(&e)),
        }
    }
    let results = crate::run::probe::probe_each(
        &specs,
        std::slice::from_ref(target),
        toolchain,
        settings,
        on_event,
    );
    for (i, outcome) in spec_of.into_iter().zip(results) {
        match outcome {
            Ok(probe) => reports[i].result = probe.results.into_iter().next(),
            Err(e) => reports[i].error = Some(crate::hint::chain_text(&e)),
        }
    }
    reports
}

/// One target's records judged: each distinct compile compiled for its arch, each launch given
/// its verdict.
fn judge_target(
    records: &Records,
    mut report: TargetCapture,
    toolchain: &Toolchain,
    settings: &Settings,
    (dir, index): (&Path, usize),
    on_event: &mut dyn FnMut(Event),
) -> TargetCapture {
    let target = report.device.clone();
    let planned = plan(records);
    report.versions.clone_from(&records.versions);
    report.calls = records.calls;
    report.stopped.clone_from(&records.stopped);
    report.errors.clone_from(&records.errors);
    report.tests.clone_from(&records.tests);
    report.scopes.clone_from(&records.scopes);
    report.compiles = compile_all(
        &planned.compiles,
        &records.scopes,
        &target,
        toolchain,
        settings,
        (dir, &index.to_string()),
        on_event,
    );
    report.launches = planned
        .launches
        .iter()
        .map(|(launch, count)| {
            let compiles: Vec<&CompileReport> = launch
                .compiles
                .iter()
                .filter_map(|&i| report.compiles.get(i))
                .collect();
            LaunchReport {
                kernel: launch.kernel.clone(),
                caller: launch.caller.clone(),
                chain: launch.chain.clone(),
                calls: launch.calls.clone(),
                count: *count,
                autotune: launch.autotune.map(|(configs, tried)| AutotuneCounts {
                    configs,
                    tried,
                    keys: launch.autotune_keys.clone(),
                }),
                compiles: launch.compiles.clone(),
                grid: launch.grid.clone(),
                verdict: launch_verdict(
                    launch.autotune.is_some(),
                    launch.unsupported.is_some(),
                    &compiles,
                    &target.device,
                ),
                unsupported: launch.unsupported.clone(),
                fix: None,
            }
        })
        .collect();
    fix_launches(&mut report, toolchain, settings, dir, on_event);
    report
}

/// For every launch that crashes the engine, the nearest configs that fit on its device: the
/// candidates of the over-budget config (of an autotuned list none of whose configs fits, the
/// smallest one's), compiled for the device in one batch, judged, and named with what to pass.
fn fix_launches(
    report: &mut TargetCapture,
    toolchain: &Toolchain,
    settings: &Settings,
    dir: &Path,
    on_event: &mut dyn FnMut(Event),
) {
    let target = report.device.clone();
    let backend = report.emulated.backend.clone();
    let mut wanted: Vec<(usize, Vec<(crate::fix::files::Candidate, Compile)>)> = Vec::new();
    for (at, launch) in report.launches.iter().enumerate() {
        if !matches!(
            launch.verdict,
            LaunchVerdict::Over | LaunchVerdict::NoneFits
        ) {
            continue;
        }
        let smallest = launch
            .compiles
            .iter()
            .filter_map(|&i| report.compiles.get(i))
            .min_by_key(|c| c.result.as_ref().and_then(|r| r.shared_bytes));
        let Some(base) = smallest else { continue };
        let compile = Compile {
            kernel: base.kernel.clone(),
            args: base.args.clone(),
            constexprs: base.constexprs.clone(),
            options: base.options.clone(),
            globals: base.globals.clone(),
        };
        wanted.push((at, crate::fix::launch::candidates(&compile, &backend)));
    }
    if wanted.is_empty() {
        return;
    }
    let all: Vec<Compile> = wanted
        .iter()
        .flat_map(|(_, c)| c.iter().map(|(_, compile)| compile.clone()))
        .collect();
    let results = compile_all(
        &all,
        &report.scopes,
        &target,
        toolchain,
        settings,
        (dir, &format!("{}-fix", target.device)),
        on_event,
    );
    let mut next = results.iter();
    for (at, candidates) in wanted {
        let bytes: Vec<Option<u64>> = candidates
            .iter()
            .map(|_| {
                let result = next.next()?.result.as_ref()?;
                let fits = result
                    .verdicts
                    .iter()
                    .any(|v| v.device == target.device && v.verdict == VerdictCode::Fits);
                fits.then_some(result.shared_bytes).flatten()
            })
            .collect();
        let autotuned = report.launches[at]
            .autotune
            .as_ref()
            .map(|a| a.keys.as_slice());
        report.launches[at].fix = crate::fix::launch::fix_of(autotuned, &candidates, &bytes);
    }
}

/// `tilefit: [2/4] running SCRIPT as if on rtx-pro-6000 (sm_120)`.
fn starting(
    shown: &str,
    (index, of): (usize, usize),
    target: &TargetDevice,
    emulated: &EmulatedDevice,
) -> String {
    let represented = emulated
        .represented_by
        .as_ref()
        .map(|p| format!(", answering as the {p}"))
        .unwrap_or_default();
    format!(
        "tilefit: [{}/{of}] running {shown} as if on {} ({}{represented})",
        index + 1,
        target.device,
        target.arch
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
    let scratch = Scratch::new(&settings.cache_dir, "capture");
    let dir = scratch.path().to_path_buf();
    write_package(&dir.join("py"))
        .map_err(|e| CaptureError::Scratch(dir.display().to_string(), e))?;
    // Every target is checked before any runs: one that cannot be emulated is refused with the
    // value it lacks, before any work.
    let emulated: Vec<EmulatedDevice> = run
        .targets
        .iter()
        .map(|target| EmulatedDevice::of(table, target))
        .collect::<Result<_, _>>()?;
    let mut targets = Vec::new();
    let mut incomplete = false;
    for (index, (target, emulated)) in run.targets.iter().zip(emulated).enumerate() {
        if settings.cancel.is_cancelled() {
            incomplete = true;
            break;
        }
        on_note(starting(
            &shown,
            (index, run.targets.len()),
            target,
            &emulated,
        ));
        let (process, records) = run_target(
            toolchain,
            (&dir, index),
            run,
            &emulated,
            &settings.cancel,
            on_output,
        )?;
        let report = TargetCapture {
            device: target.clone(),
            emulated,
            versions: BTreeMap::new(),
            calls: 0,
            stopped: Vec::new(),
            errors: Vec::new(),
            launches: Vec::new(),
            compiles: Vec::new(),
            tests: Vec::new(),
            failure: None,
            script: Some(process),
            failures: Vec::new(),
            scopes: BTreeMap::new(),
        };
        let mut report = match records {
            Ok(records) => judge_target(
                &records,
                report,
                toolchain,
                settings,
                (&dir, index),
                on_event,
            ),
            Err(why) => TargetCapture {
                failure: Some(why),
                ..report
            },
        };
        report.failures = target_failures(&report, run.allow_empty);
        on_note(format!(
            "tilefit: [{}/{}] {}: {} launches, {} compiles, {} failures",
            index + 1,
            run.targets.len(),
            target.device,
            report.launches.iter().map(|l| l.count).sum::<u64>(),
            report.compiles.len(),
            report.failures.len()
        ));
        incomplete |= report.script.as_ref().is_some_and(|s| s.end == "cancelled");
        targets.push(report);
    }
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
    })
}

#[cfg(test)]
mod tests {
    use super::{PACKAGE, untested_triton};

    #[test]
    fn a_triton_newer_than_the_tested_ones_is_warned_of() {
        assert!(untested_triton("3.6.0").is_none());
        assert!(untested_triton("3.5.1").is_none());
        assert!(untested_triton("3.7.1").unwrap().contains("3.7.1"));
        assert!(untested_triton("4.0.0+git1234").is_some());
        assert!(untested_triton("nonsense").is_none());
    }

    #[test]
    fn the_embedded_package_is_the_whole_folder() {
        let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/../../python/tilefit");
        let mut files: Vec<String> = std::fs::read_dir(folder)
            .unwrap()
            .filter_map(|e| {
                let path = e.ok()?.path();
                let python = path.extension().is_some_and(|x| x == "py");
                python.then(|| path.file_name().unwrap().to_string_lossy().into_owned())
            })
            .collect();
        files.sort();
        let embedded: Vec<String> = PACKAGE.iter().map(|(n, _)| (*n).to_owned()).collect();
        assert_eq!(
            embedded, files,
            "list every file of python/tilefit in run::capture::PACKAGE"
        );
    }
}
