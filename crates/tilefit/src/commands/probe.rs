//! `tilefit probe SPEC.toml`: one session and one pipeline, then one library call for the mode (a
//! run, a shard or a job dump) with progress on stderr; the report printed and gated.

use tilefit_core::compile::Event;
use tilefit_core::input::spec;
use tilefit_core::run::pipeline::Pipeline;
use tilefit_core::run::{fleet, probe, shard};

use crate::cli::ProbeArgs;
use crate::emit;
use crate::session::Session;
use crate::settings::{self, ProbeMode};

pub fn run(args: &ProbeArgs, mode: ProbeMode) -> anyhow::Result<u8> {
    let mut spec = spec::load(&args.spec)?;
    let targets = fleet::of_spec(&spec, &args.targets)?;
    let session = Session::new(&args.compile, args.worker_script.clone())?;
    let toolchain = session.toolchain(&args.compile.python, spec.triton.as_deref())?;
    spec.resolve_module(&toolchain.python)?;
    // One pipeline for the run: the probe, every `--emit-files` round and its read-back share
    // its workers; the config files are read once, and all of them judge the same values.
    let pipeline = Pipeline::new(&toolchain, &session.settings, "probe");
    let (progress, jobs) = (&session.progress, session.settings.jobs);
    let mut on_event =
        |event: Event| progress.event_noting_plans(event, &toolchain.triton_version, jobs);
    let mut on_note = |line: String| session.note(&line);
    match mode {
        ProbeMode::DumpJobs(path) => emit::emit_jobs(&pipeline.jobs(&spec, &targets)?, &path),
        ProbeMode::Shard(part) => {
            let invocation = settings::invocation(args, &session.settings);
            let written =
                shard::probe_shard(&pipeline, &spec, invocation, &targets, part, &mut on_event);
            progress.finish();
            emit::emit_shard(&written?, &args.output)
        }
        ProbeMode::Single | ProbeMode::Matrix(_) => {
            let run = settings::probe_run(args);
            let done = probe::probe_run(
                &pipeline,
                &mut spec,
                &targets,
                run,
                &mut on_note,
                &mut on_event,
            );
            progress.finish();
            let (mut report, fixed) = done?;
            emit::finish_probe(&mut report, fixed.zip(args.emit_files.as_deref()), args)
        }
    }
}
