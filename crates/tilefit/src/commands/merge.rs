//! `tilefit merge SHARD.json...`: the shards of a sharded probe back into one report, printed and
//! gated like `probe`'s. Also writes a shard (`probe --shard K/N`) and reads shards back.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use tilefit_core::input::spec;
use tilefit_core::model::shard::{SHARD_SCHEMA_VERSION, ShardReport};
use tilefit_core::run::probe;

use super::output;
use crate::cli::MergeArgs;
use crate::failure::hinted;

pub fn run(args: &MergeArgs) -> anyhow::Result<u8> {
    let shards = args
        .shards
        .iter()
        .map(|path| read_shard(path))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let first = &shards[0];
    let spec_path = args
        .spec
        .clone()
        .unwrap_or_else(|| PathBuf::from(&first.invocation.spec));
    let spec = spec::load(&spec_path).map_err(|e| {
        hinted(
            e.to_string(),
            "run the merge where the shards ran (the spec's path is relative to there), or give `--spec`",
        )
    })?;
    let targets = super::probe::fleet(&spec, &first.invocation.targets)?;
    // Only what goes into the jobs' keys is read: nothing is compiled.
    let settings = crate::settings::for_merge(&first.invocation);
    let report =
        probe::merge(&spec, &targets, &settings, &shards).map_err(super::probe::probe_error)?;
    eprintln!(
        "tilefit: merged {} shards: {} jobs",
        shards.len(),
        report.stats.jobs
    );
    output::emit(&report, &args.output)?;
    if let Some(path) = &args.emit_configs {
        output::emit_configs(&report, path)?;
    }
    output::finish(&report, &args.output)
}

/// Write a shard's results (`-` for stdout) and say what to do with them; exit 2 if a job failed.
pub fn emit_shard(shard: &ShardReport, path: &str) -> anyhow::Result<u8> {
    let text = serde_json::to_string_pretty(shard)? + "\n";
    if path == "-" {
        crate::output::print(&text)?;
    } else {
        std::fs::write(path, text).with_context(|| format!("writing `{path}`"))?;
    }
    let failed = shard
        .outcomes
        .iter()
        .filter(|o| o.outcome.status == tilefit_core::compile::CompileStatus::Failed)
        .count();
    eprintln!(
        "tilefit: shard {} compiled {} of the run's {} jobs{}; merge every shard with `tilefit merge`",
        shard.shard.describe(),
        shard.outcomes.len(),
        shard.jobs_total,
        if failed > 0 {
            format!(" ({failed} FAILED)")
        } else {
            String::new()
        }
    );
    Ok(if failed > 0 {
        crate::exit_codes::BAD_INPUT_OR_TOOL_FAILURE
    } else {
        crate::exit_codes::OK
    })
}

/// Read one shard; a file that is not one is bad input naming the file.
fn read_shard(path: &Path) -> anyhow::Result<ShardReport> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).with_context(|| format!("reading `{shown}`"))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| hinted(format!("`{shown}` is not JSON: {e}"), SHARD_HINT))?;
    let kind = json.get("kind").and_then(serde_json::Value::as_str);
    if kind != Some("probe-shard") {
        return Err(hinted(
            format!("`{shown}` has the kind {kind:?}, not `probe-shard`"),
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
    serde_json::from_value(json).map_err(|e| {
        hinted(
            format!("`{shown}` is not a shard this tilefit reads: {e}"),
            SHARD_HINT,
        )
    })
}

const SHARD_HINT: &str =
    "pass the files written by `tilefit probe SPEC --shard K/N --json FILE`, one per shard";
