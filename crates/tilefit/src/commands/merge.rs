//! `tilefit merge SHARD.json...`: the shards of a sharded probe or replay back into one report,
//! printed and gated like the single run's. Also writes shards (`--shard K/N`) and reads them.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use tilefit_core::input::spec;
use tilefit_core::model::shard::{
    ReplayShardReport, SHARD_SCHEMA_VERSION, ShardOutcome, ShardReport,
};
use tilefit_core::run::{probe, replay};

use super::output;
use crate::cli::MergeArgs;
use crate::failure::hinted;

pub fn run(args: &MergeArgs) -> anyhow::Result<u8> {
    let texts = args
        .shards
        .iter()
        .map(|path| read_shard(path))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if texts[0].0 == "replay-shard" {
        let shards = texts
            .into_iter()
            .map(|(_, json, path)| parse::<ReplayShardReport>(json, &path))
            .collect::<anyhow::Result<Vec<_>>>()?;
        return merge_replay(args, &shards);
    }
    let shards = texts
        .into_iter()
        .map(|(_, json, path)| parse::<ShardReport>(json, &path))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let first = &shards[0];
    let spec_path = args
        .spec
        .clone()
        .unwrap_or_else(|| PathBuf::from(&first.invocation.spec));
    let mut spec = spec::load(&spec_path).map_err(|e| {
        hinted(
            e.to_string(),
            "run the merge where the shards ran (the spec's path is relative to there), or give `--spec`",
        )
    })?;
    if spec.source.module.is_some() {
        // `[kernel] module`: the merge has no Python to find it; the shards recorded the file.
        spec.kernel_file = PathBuf::from(&first.kernel.file);
    }
    let targets = super::probe::fleet(&spec, &first.invocation.targets)?;
    // Only what goes into the jobs' keys is read: nothing is compiled.
    let settings = crate::settings::for_merge(
        first.invocation.full_compile,
        first.invocation.read_resources,
    );
    let report =
        probe::merge(&spec, &targets, &settings, &shards).map_err(super::probe::probe_error)?;
    crate::output::note(&format!(
        "tilefit: merged {} shards: {} jobs",
        shards.len(),
        report.stats.jobs
    ));
    output::emit(&report, &args.output)?;
    if let Some(path) = &args.emit_configs {
        output::emit_configs(&report, path)?;
    }
    output::finish(&report, &args.output)
}

fn merge_replay(args: &MergeArgs, shards: &[ReplayShardReport]) -> anyhow::Result<u8> {
    let first = &shards[0];
    if args.emit_configs.is_some() {
        return Err(hinted(
            "`--emit-configs` needs probe shards: a replay has no alternative configs to recommend",
            "leave `--emit-configs` out",
        ));
    }
    let dirs: Vec<PathBuf> = if args.caches.is_empty() {
        first.invocation.dirs.iter().map(PathBuf::from).collect()
    } else {
        args.caches.clone()
    };
    let (caches, index) = super::replay::index_caches(&dirs)?;
    let targets = super::replay::fleet(&first.invocation.targets)?;
    let settings = crate::settings::for_merge(
        first.invocation.full_compile,
        first.invocation.read_resources,
    );
    let report = replay::merge(&index, &caches, &targets, &settings, shards).map_err(|e| match e {
        replay::ReplayError::Shards(message) => hinted(
            message,
            "merge the `--json` files of every shard of one replay, made from the same caches (give them with `--caches` if they moved)",
        ),
        other @ replay::ReplayError::Worker { .. } => anyhow::Error::new(other),
    })?;
    crate::output::note(&format!(
        "tilefit: merged {} shards: {} recompiles",
        shards.len(),
        report.stats.jobs
    ));
    output::emit(&report, &args.output)?;
    output::finish(&report, &args.output)
}

/// Write a shard's results (`-` for stdout) and say what to do with them; exit 2 if a job failed.
pub fn emit_shard(shard: &ShardReport, path: &str) -> anyhow::Result<u8> {
    write_shard(
        &serde_json::to_string_pretty(shard)?,
        path,
        &shard.shard.describe(),
        &shard.outcomes,
        shard.jobs_total,
    )
}

fn write_shard(
    text: &str,
    path: &str,
    shard: &str,
    outcomes: &[ShardOutcome],
    total: usize,
) -> anyhow::Result<u8> {
    let text = format!("{text}\n");
    if path == "-" {
        crate::output::print(&text)?;
    } else {
        std::fs::write(path, text).with_context(|| format!("writing `{path}`"))?;
    }
    let failed = outcomes
        .iter()
        .filter(|o| o.outcome.status == tilefit_core::vocab::CompileStatus::Failed)
        .count();
    crate::output::note(&format!(
        "tilefit: shard {shard} compiled {} of the run's {total} jobs{}; merge every shard with `tilefit merge`",
        outcomes.len(),
        if failed > 0 {
            format!(" ({failed} FAILED)")
        } else {
            String::new()
        }
    ));
    Ok(if failed > 0 {
        crate::exit_codes::BAD_INPUT_OR_TOOL_FAILURE
    } else {
        crate::exit_codes::OK
    })
}

/// Write a replay shard's results, as [`emit_shard`] does.
pub fn emit_replay_shard(shard: &ReplayShardReport, path: &str) -> anyhow::Result<u8> {
    write_shard(
        &serde_json::to_string_pretty(shard)?,
        path,
        &shard.shard.describe(),
        &shard.outcomes,
        shard.jobs_total,
    )
}

/// Read one shard file: its kind, its JSON, its path. A file that is not a shard is bad input
/// naming the file.
fn read_shard(path: &Path) -> anyhow::Result<(String, serde_json::Value, PathBuf)> {
    let shown = path.display();
    let json = super::output::untrusted_json(path, SHARD_HINT)?;
    let kind = json
        .get("kind")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if kind != "probe-shard" && kind != "replay-shard" {
        return Err(hinted(
            format!("`{shown}` has the kind {kind:?}, not `probe-shard` or `replay-shard`"),
            SHARD_HINT,
        ));
    }
    let version = json
        .get("schema_version")
        .and_then(serde_json::Value::as_u64);
    if version != Some(u64::from(SHARD_SCHEMA_VERSION)) {
        return Err(hinted(
            format!(
                "`{shown}` is a shard of schema {version:?}; this tilefit reads schema {SHARD_SCHEMA_VERSION}"
            ),
            "make every shard and the merge with the same tilefit",
        ));
    }
    Ok((kind, json, path.to_path_buf()))
}

fn parse<T: serde::de::DeserializeOwned>(
    json: serde_json::Value,
    path: &Path,
) -> anyhow::Result<T> {
    serde_json::from_value(json).map_err(|e| {
        hinted(
            format!(
                "`{}` is not a shard this tilefit reads: {e}",
                path.display()
            ),
            SHARD_HINT,
        )
    })
}

const SHARD_HINT: &str = "pass the files written by `tilefit probe SPEC --shard K/N --json FILE` (or `tilefit replay ... --shard K/N`), one per shard";
