//! `tilefit merge SHARD.json...` of a sharded probe: the shards back into the single run's report,
//! printed and gated like it. Nothing compiles.

use std::path::PathBuf;

use tilefit_core::hint::Hinted;
use tilefit_core::input::spec;
use tilefit_core::model::shard::ShardReport;
use tilefit_core::run::{fleet, shard};

use crate::cli::MergeArgs;
use crate::emit;

pub fn run(args: &MergeArgs, shards: &[ShardReport]) -> anyhow::Result<u8> {
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
    let settings = crate::settings::for_merge(invocation.full_compile, invocation.read_resources);
    let report = shard::merge(&spec, &targets, &settings, shards)?;
    let note = format!(
        "tilefit: merged {} shards: {} jobs",
        shards.len(),
        report.stats.jobs
    );
    crate::output::note(&note);
    emit::emit(&report, &args.output)?;
    if let Some(path) = &args.emit_configs {
        emit::emit_configs(&report, path)?;
    }
    emit::finish(&report, &args.output)
}
