//! `tilefit probe SPEC.toml`: the session's toolchain and one pipeline, then one library call
//! for the mode (a run, a shard or a job dump) with progress on stderr; the report printed and
//! gated.

use tilefit_core::compile::Event;
use tilefit_core::run::pipeline::Pipeline;
use tilefit_core::run::{probe, shard};

use crate::emit;
use crate::session::ProbeMode;
use crate::session::ProbeSession;

pub fn run(run: &ProbeSession) -> anyhow::Result<u8> {
    let session = &run.session;
    let mut spec = run.spec.clone();
    let toolchain = session.toolchain(spec.triton.as_deref())?;
    spec.resolve_module(&toolchain.python)?;
    // One pipeline for the run: the probe, every `--emit-files` round and its read-back share
    // its workers; the config files are read once, and all of them judge the same values.
    let pipeline = Pipeline::new(&toolchain, &session.settings, "probe");
    let (progress, jobs) = (&session.progress, session.settings.jobs);
    let mut on_event =
        |event: Event| progress.event_noting_plans(event, &toolchain.triton_version, jobs);
    let mut on_note = |line: String| session.note(&line);
    let (targets, outputs) = (&run.targets, &run.outputs);
    match &run.mode {
        ProbeMode::DumpJobs(path) => emit::emit_jobs(&pipeline.jobs(&spec, targets)?, path),
        ProbeMode::Shard(part) => {
            let invocation = run.invocation.clone();
            let written =
                shard::probe_shard(&pipeline, &spec, invocation, targets, *part, &mut on_event);
            progress.finish();
            emit::emit_shard(&written?, &outputs.output)
        }
        ProbeMode::Single | ProbeMode::Matrix(_) => {
            let done = probe::probe_run(
                &pipeline,
                &mut spec,
                targets,
                run.run(),
                &mut on_note,
                &mut on_event,
            );
            progress.finish();
            let (mut report, fixed) = done?;
            emit::finish_probe(
                &mut report,
                fixed.zip(outputs.emit_files.as_deref()),
                outputs,
            )
        }
    }
}
