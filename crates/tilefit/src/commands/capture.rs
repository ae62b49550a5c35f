//! `tilefit capture SCRIPT.py`: the script's host code run once per target under emulation, every
//! launch captured, compiled and judged by the library (`run::capture`); the report printed and
//! gated as a probe's is, and `--emit-spec` writes the probe specs the launches make.

use tilefit_core::run::capture;

use crate::cli::CaptureArgs;
use crate::emit;
use crate::session::capture::CaptureSession;

pub fn run(args: &CaptureArgs) -> anyhow::Result<u8> {
    let run = CaptureSession::of(args)?;
    let session = &run.session;
    let toolchain = session.toolchain(None)?;
    let report = capture::capture(&run.run(), &toolchain, &session.settings);
    session.progress.finish();
    let report = report?;
    // The report and its JSON first: a spec that cannot be written loses neither.
    let code = emit::finish_capture(&report, &run.output, run.junit.as_deref())?;
    Ok(match &run.emit_spec {
        Some(dir) => code.max(emit::emit_specs(capture::specs(&report), dir)),
        None => code,
    })
}
