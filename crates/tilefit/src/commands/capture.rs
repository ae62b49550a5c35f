//! `tilefit capture SCRIPT.py`: the script's host code run once per target under emulation, every
//! launch captured, compiled and judged by the library (`run::capture`); the report printed and
//! gated as a probe's is, and `--emit-spec` writes the probe specs the launches make.

use tilefit_core::compile::Event;
use tilefit_core::hint::Hinted;
use tilefit_core::run::{capture, fleet, toolchains};

use crate::cli::CaptureArgs;
use crate::emit;
use crate::progress::Progress;
use crate::settings;

pub fn run(args: &CaptureArgs) -> anyhow::Result<u8> {
    if args.output.html.is_some() {
        return Err(Hinted::new(
            "`--html` draws a probe's cliff map; a capture has none",
            "use `--json FILE` or `--output-format markdown`",
        )
        .into());
    }
    if args.output.shipped.is_some() {
        return Err(Hinted::new(
            "`--shipped` names the configs an engine ships; a capture judges the configs the script launched",
            "leave `--shipped` out: a launch over budget fails the capture by default",
        )
        .into());
    }
    if args.compile.python.triton.is_some() {
        return Err(Hinted::new(
            "`--triton` picks a managed Triton, which has no torch and none of the engine's packages: a capture runs the script in its own environment",
            "pass `--python` of an environment with torch, the engine and the Triton to judge",
        )
        .into());
    }
    let targets = fleet::of_names(&args.targets)?;
    let settings = settings::from_compile_args(&args.compile, args.worker_script.clone())?;
    let progress = Progress::new();
    let mut on_note = |line: String| progress.note(&line);
    let wanted = settings::wanted(&args.compile.python);
    let toolchain = toolchains::select(&wanted, None, &mut on_note)?;
    let mut on_event = |event: Event| progress.event(event);
    let run = capture::CaptureRun {
        script: args.script.as_deref().unwrap_or(std::path::Path::new("")),
        module: args.module.as_deref(),
        args: &args.script_args,
        targets: &targets,
        timeout: std::time::Duration::from_secs(args.script_timeout),
        allow_empty: args.allow_empty,
    };
    let mut echo = crate::progress::ScriptEcho::new(&progress);
    let report = capture::capture(
        &run,
        &toolchain,
        &settings,
        &mut on_note,
        &mut |target, _, line| echo.line(target, line),
        &mut on_event,
    );
    progress.finish();
    let report = report?;
    if let Some(dir) = &args.emit_spec {
        let specs = capture::specs(&report);
        for (name, text) in &specs {
            tilefit_core::write::write_below(dir, name, text)?;
        }
        crate::output::note(&format!(
            "tilefit: wrote {} probe specs (per device, each kernel's captured configs) to {}",
            specs
                .iter()
                .filter(|(n, _)| std::path::Path::new(n)
                    .extension()
                    .is_some_and(|e| e == "toml"))
                .count(),
            dir.display()
        ));
    }
    emit::finish_capture(&report, &args.output)
}
