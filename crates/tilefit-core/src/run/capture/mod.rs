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
mod target;

pub use error::{CaptureError, CaptureRun};

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
use target::run_target;

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
        let (process, records, children) = run_target(
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
            checks: Vec::new(),
            assumptions: Vec::new(),
            children,
            failure: None,
            script: Some(process),
            failures: Vec::new(),
            scopes: BTreeMap::new(),
        };
        let mut report = match records {
            Ok(records) => judge_target(&pipeline, &records, report, on_event),
            Err(why) => TargetCapture {
                failure: Some(why),
                ..report
            },
        };
        report.failures = target_failures(&report, run.allow_empty, run.allow_stopped);
        on_note(format!(
            "tilefit: [{}/{}] {}: {}, {}, {}",
            index + 1,
            run.targets.len(),
            target.device,
            counted(
                report.launches.iter().map(|l| l.count).sum::<u64>(),
                "launch",
                "launches"
            ),
            counted(report.compiles.len() as u64, "compile", "compiles"),
            counted(report.failures.len() as u64, "failure", "failures")
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
        workers: Some(pipeline.workers()).filter(|w| w.started > 0),
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
