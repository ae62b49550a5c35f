//! `tilefit capture SCRIPT.py`: the script's host code run once per target under emulation, every
//! launch captured, compiled and judged by the library (`run::capture`); the report printed and
//! gated as a probe's is, and `--emit-spec` writes the probe specs the launches make.

use tilefit_core::compile::Event;
use tilefit_core::run::{capture, fleet};

use crate::cli::CaptureArgs;
use crate::emit;
use crate::session::{self, Session};

pub fn run(args: &CaptureArgs) -> anyhow::Result<u8> {
    session::capture_conflicts(args)?;
    let targets = fleet::of_names(&args.targets)?;
    let shard = session::shard(args.shard.as_deref(), args.output.json.as_deref())?;
    let session = Session::new(&args.compile, args.worker_script.clone())?;
    let toolchain = session.toolchain(None)?;
    let progress = &session.progress;
    let mut on_note = |line: String| session.note(&line);
    let mut on_event = |event: Event| progress.event(event);
    let run = capture::CaptureRun {
        script: args.script.as_deref().unwrap_or(std::path::Path::new("")),
        module: args.module.as_deref(),
        args: &args.script_args,
        targets: &targets,
        timeout: std::time::Duration::from_secs(args.script_timeout),
        allow_empty: args.allow_empty,
        allow_stopped: args.allow_stopped,
        shard,
        writable: &args.allow_writes,
    };
    let mut echo = crate::progress::ScriptEcho::new(progress);
    let report = capture::capture(
        &run,
        &toolchain,
        &session.settings,
        &mut on_note,
        &mut |target, _, line| echo.line(target, line),
        &mut on_event,
    );
    progress.finish();
    let report = report?;
    // The report and its JSON first: a spec that cannot be written loses neither.
    let code = emit::finish_capture(&report, &args.output, args.junit.as_deref())?;
    Ok(match &args.emit_spec {
        Some(dir) => code.max(emit::emit_specs(capture::specs(&report), dir)),
        None => code,
    })
}
