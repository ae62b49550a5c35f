//! `tilefit merge SHARD.json...`: the shards of a sharded probe or replay back into one report,
//! printed and gated like the single run's. Nothing compiles.

use std::path::PathBuf;

use tilefit_core::compile::toolchain;
use tilefit_core::hint::Hinted;
use tilefit_core::input::{caches, spec};
use tilefit_core::model::read::{self, Shards};
use tilefit_core::run::{fleet, probe, replay};

use crate::cli::MergeArgs;
use crate::emit;

pub fn run(args: &MergeArgs) -> anyhow::Result<u8> {
    match read::shards(&args.shards)? {
        Shards::Probe(shards) => {
            let first = &shards[0];
            let spec_path = args
                .spec
                .clone()
                .unwrap_or_else(|| first.invocation.spec.clone().into());
            let mut spec = spec::load(&spec_path).map_err(|e| {
                Hinted::new(
                    format!("the shards' spec `{}` does not load", spec_path.display()),
                    "run the merge where the shards ran (the spec's path is relative to there), or give `--spec`",
                )
                .caused_by(e)
            })?;
            if spec.source.module.is_some() {
                // `[kernel] module`: the merge has no Python to find it; the shards recorded the file.
                spec.kernel_file = PathBuf::from(&first.kernel.file);
            }
            let targets = fleet::of_spec(&spec, &first.invocation.targets)?;
            let invocation = &first.invocation;
            // Only what goes into the jobs' keys is read: nothing is compiled.
            let settings =
                crate::settings::for_merge(invocation.full_compile, invocation.read_resources);
            let report = probe::merge(&spec, &targets, &settings, &shards)?;
            let n = shards.len();
            crate::output::note(&format!(
                "tilefit: merged {n} shards: {} jobs",
                report.stats.jobs
            ));
            emit::emit(&report, &args.output)?;
            if let Some(path) = &args.emit_configs {
                emit::emit_configs(&report, path)?;
            }
            emit::finish(&report, &args.output)
        }
        Shards::Replay(shards) => {
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
            let settings =
                crate::settings::for_merge(invocation.full_compile, invocation.read_resources);
            let report = replay::merge(&index, &caches, &targets, &settings, &shards)?;
            let n = shards.len();
            crate::output::note(&format!(
                "tilefit: merged {n} shards: {} recompiles",
                report.stats.jobs
            ));
            emit::emit(&report, &args.output)?;
            emit::finish(&report, &args.output)
        }
    }
}
