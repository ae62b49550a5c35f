//! `tilefit report RESULTS.json`: render a report saved with `--json` again, in any format,
//! and apply the gate, without compiling anything.

use anyhow::Context as _;
use serde_json::Value;
use tilefit_core::model::probe::ProbeReport;
use tilefit_core::model::replay::ReplayReport;

use super::output;
use crate::cli::ReportArgs;
use crate::failure::hinted;

pub fn run(args: &ReportArgs) -> anyhow::Result<u8> {
    let shown = args.results.display().to_string();
    let text =
        std::fs::read_to_string(&args.results).with_context(|| format!("reading `{shown}`"))?;
    let json: Value = serde_json::from_str(&text).map_err(|e| {
        hinted(
            format!("`{shown}` is not JSON: {e}"),
            "pass a file written by `tilefit probe --json FILE` or `tilefit replay --json FILE`",
        )
    })?;
    let not_a_report = |e: serde_json::Error| {
        hinted(
            format!("`{shown}` is not a tilefit report this version reads: {e}"),
            "re-run the probe or replay with this tilefit to save a fresh report",
        )
    };
    if json.get("schema_version").and_then(Value::as_u64) != Some(1) {
        return Err(hinted(
            format!("`{shown}` has no `schema_version: 1`"),
            "this tilefit reads reports of schema_version 1",
        ));
    }
    let code = match json.get("kind").and_then(Value::as_str) {
        Some("probe") => {
            let report: ProbeReport = serde_json::from_value(json).map_err(not_a_report)?;
            output::emit(&report, &args.output)?;
            if let Some(path) = &args.emit_configs {
                output::emit_configs(&report, path)?;
            }
            output::finish(&report, &args.output)?
        }
        Some("replay") => {
            if args.emit_configs.is_some() {
                return Err(hinted(
                    "`--emit-configs` needs a probe report: a replay has no alternative configs to recommend",
                    "run `tilefit probe` on a spec that sweeps the kernel's configs",
                ));
            }
            let report: ReplayReport = serde_json::from_value(json).map_err(not_a_report)?;
            output::emit(&report, &args.output)?;
            output::finish(&report, &args.output)?
        }
        other => {
            return Err(hinted(
                format!("`{shown}` has the kind {other:?}, not `probe` or `replay`"),
                "pass a file written by `tilefit probe --json FILE` or `tilefit replay --json FILE`",
            ));
        }
    };
    Ok(code)
}
