//! `tilefit replay [DIR...]`: index the Triton caches, pick a toolchain per recorded Triton
//! version, recompile every kernel for the fleet's archs (or one shard of them), print the report,
//! apply the gate; a shipped package's kernels are judged as recorded. `--list` prints what the
//! caches hold.

use tilefit_core::compile::toolchain;
use tilefit_core::render::{Exporter, Terminal};
use tilefit_core::run::{fleet, replay, replay_shard, toolchains};

use crate::cli::ReplayArgs;
use crate::emit;
use crate::session::{self, Session};

pub fn run(args: &ReplayArgs) -> anyhow::Result<u8> {
    let shard = session::shard(args.shard.as_deref(), args.output.json.as_deref())?;
    let inputs = replay::inputs(&args.dirs, &toolchain::default_cache_dir(), shard.is_some())?;
    let (caches, index) = (&inputs.caches, &inputs.index);
    if args.list {
        crate::output::print(&Terminal.export(index))?;
        crate::output::print(&Terminal.export(&inputs.packages))?;
        return Ok(crate::exit_codes::OK);
    }
    let targets = fleet::of_names(&args.targets)?;
    let session = Session::new(&args.compile, None)?;
    let (progress, settings) = (&session.progress, &session.settings);
    let toolchains = toolchains::for_caches(index, &session.wanted, &**progress)?;
    crate::output::note(&inputs.summary(targets.len()));
    if let Some(shard) = shard {
        let invocation = crate::settings::replay_invocation(args, caches, settings);
        let written =
            replay_shard::replay_shard(index, invocation, &targets, &toolchains, settings, shard);
        progress.finish();
        return emit::emit_shard(&written?, &args.output);
    }
    let report = replay::replay(
        index,
        caches,
        &inputs.packages,
        &targets,
        &toolchains,
        settings,
    );
    progress.finish();
    let report = report?;
    emit::emit(&report, &args.output)?;
    emit::finish(&report, &args.output)
}
