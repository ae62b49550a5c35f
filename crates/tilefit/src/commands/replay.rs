//! `tilefit replay [DIR...]`: index the Triton caches, pick a toolchain per recorded Triton
//! version, recompile every kernel for the fleet's archs (or one shard of them), print the report,
//! apply the gate; a shipped package's kernels are judged as recorded. `--list` prints what the
//! caches hold.

use tilefit_core::render::{Exporter, Terminal};
use tilefit_core::run::{replay, replay_shard, toolchains};

use crate::cli::ReplayArgs;
use crate::emit;
use crate::session::replay::ReplaySession;

pub fn run(args: &ReplayArgs) -> anyhow::Result<u8> {
    let run = ReplaySession::of(args)?;
    let (inputs, targets) = (&run.inputs, &run.targets);
    let Some(session) = &run.session else {
        crate::output::print(&Terminal.export(&inputs.index))?;
        crate::output::print(&Terminal.export(&inputs.packages))?;
        return Ok(crate::exit_codes::OK);
    };
    let (progress, settings) = (&session.progress, &session.settings);
    let toolchains = toolchains::for_caches(&inputs.index, &session.wanted, &**progress)?;
    crate::output::note(&inputs.summary(targets.len()));
    if let Some(shard) = run.shard {
        let invocation = run.invocation(session);
        let written = replay_shard::replay_shard(
            &inputs.index,
            invocation,
            targets,
            &toolchains,
            settings,
            shard,
        );
        progress.finish();
        return emit::emit_shard(&written?, run.output);
    }
    let report = replay::replay(
        &inputs.index,
        &inputs.caches,
        &inputs.packages,
        targets,
        &toolchains,
        settings,
    );
    progress.finish();
    let report = report?;
    emit::emit(&report, run.output)?;
    emit::finish(&report, run.output)
}
