//! `tilefit probe SPEC.toml`: the session's toolchain and one pipeline, then one library call
//! for the mode (a run, a shard or a job dump) with progress on stderr; the report printed and
//! gated.

use tilefit_core::run::pipeline::Pipeline;
use tilefit_core::run::{probe, shard};

use crate::emit;
use crate::session::probe::{ProbeMode, ProbeSession};

pub fn run(run: &ProbeSession) -> anyhow::Result<u8> {
    let session = &run.session;
    let mut spec = run.spec.clone();
    let toolchain = session.toolchain(spec.triton.as_deref())?;
    spec.resolve_module(&toolchain.python)?;
    // One pipeline for the run: the probe, every `--emit-files` round and its read-back share
    // its workers; the config files are read once, and all of them judge the same values.
    let pipeline = Pipeline::new(&toolchain, &session.settings, "probe");
    let progress = &session.progress;
    progress.note_plans(&toolchain.triton_version, session.settings.jobs);
    let (targets, outputs) = (&run.targets, &run.outputs);
    match &run.mode {
        ProbeMode::DumpJobs(path) => emit::emit_jobs(&pipeline.jobs(&spec, targets)?, path),
        ProbeMode::Shard(part) => {
            let invocation = run.invocation.clone();
            let written = shard::probe_shard(&pipeline, &spec, invocation, targets, *part);
            progress.finish();
            emit::emit_shard(&written?, &outputs.output)
        }
        ProbeMode::Single | ProbeMode::Matrix(_) => {
            let done = probe::probe_run(&pipeline, &mut spec, targets, run.run());
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
