//! `tilefit merge SHARD.json...` of a sharded replay: the caches indexed again (where the shards
//! ran, or `--caches`), and every recompile's outcome taken from its shard. Nothing compiles.

use std::path::PathBuf;

use tilefit_core::compile::toolchain;
use tilefit_core::hint::Hinted;
use tilefit_core::input::caches;
use tilefit_core::model::shard::ReplayShardReport;
use tilefit_core::run::{fleet, replay_shard};

use crate::cli::MergeArgs;
use crate::emit;

pub fn run(args: &MergeArgs, shards: &[ReplayShardReport]) -> anyhow::Result<u8> {
    let first = &shards[0];
    if args.emit_configs.is_some() {
        return Err(Hinted::new(
            "`--emit-configs` needs probe shards: a replay has no alternative configs to recommend",
            "leave `--emit-configs` out",
        )
        .into());
    }
    let dirs: Vec<PathBuf> = if args.caches.is_empty() {
        first.invocation.dirs.iter().map(PathBuf::from).collect()
    } else {
        args.caches.clone()
    };
    let (caches, index) = caches::index(&dirs, &toolchain::default_cache_dir())?;
    let targets = fleet::of_names(&first.invocation.targets)?;
    let invocation = &first.invocation;
    let settings = crate::settings::for_merge(invocation.full_compile, invocation.read_resources);
    let report = replay_shard::merge(&index, &caches, &targets, &settings, shards)?;
    let note = format!(
        "tilefit: merged {} shards: {} recompiles",
        shards.len(),
        report.stats.jobs
    );
    crate::output::note(&note);
    emit::emit(&report, &args.output)?;
    emit::finish(&report, &args.output)
}
