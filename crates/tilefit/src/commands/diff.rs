//! `tilefit diff OLD.json NEW.json`: what changed between two probe reports, bytes and verdicts;
//! exit 1 when a config that fit a device no longer does (the gate of a Triton or kernel upgrade).
//! One version-matrix report alone diffs each version against the next.

use anyhow::Context as _;
use tilefit_core::judge::diff::diff;
use tilefit_core::model::diff::ReportDiff;
use tilefit_core::model::matrix::MatrixReport;
use tilefit_core::model::probe::ProbeReport;
use tilefit_core::render::{Exporter, Markdown, Terminal};

use super::output::{self, SavedReport};
use crate::cli::DiffArgs;
use crate::exit_codes;
use crate::failure::hinted;

pub fn run(args: &DiffArgs) -> anyhow::Result<u8> {
    let diffs: Vec<ReportDiff> = match &args.new {
        Some(new) => {
            let (old_report, new_report) = (probe_report(&args.old)?, probe_report(new)?);
            comparable(&old_report, &new_report, &args.old, new)?;
            let d = diff(&old_report, &new_report);
            if d.compared == 0 {
                return Err(hinted(
                    format!(
                        "`{}` and `{}` have no (config, arch) in common: {} and {} results, none comparable",
                        args.old.display(),
                        new.display(),
                        old_report.results.len(),
                        new_report.results.len()
                    ),
                    "diff two reports of the same spec (a Triton or kernel upgrade), saved with `--json`",
                ));
            }
            vec![d]
        }
        None => matrix_report(&args.old)?.diffs,
    };
    match args.json.as_deref() {
        Some("-") => crate::output::print(&(serde_json::to_string_pretty(&diffs)? + "\n"))?,
        Some(path) => std::fs::write(path, serde_json::to_string_pretty(&diffs)? + "\n")
            .with_context(|| format!("writing `{path}`"))?,
        None => {}
    }
    if args.json.as_deref() != Some("-") {
        for d in &diffs {
            let text = if args.markdown {
                Markdown.export(d)
            } else {
                Terminal.export(d)
            };
            crate::output::print(&text)?;
        }
    }
    let breaks: usize = diffs.iter().map(|d| d.breaks().len()).sum();
    if breaks > 0 {
        crate::output::note(&format!(
            "tilefit: {breaks} configs that fit a device no longer do"
        ));
        return Ok(exit_codes::GATE_FAILED);
    }
    Ok(exit_codes::OK)
}

/// Two reports of one kernel, or exit 2 saying what differs (an edited kernel is a note).
fn comparable(
    old: &ProbeReport,
    new: &ProbeReport,
    old_path: &std::path::Path,
    new_path: &std::path::Path,
) -> anyhow::Result<()> {
    use tilefit_core::model::identity::Subject;
    output::same_subject(
        &Subject::of_probe(&old.kernel),
        &Subject::of_probe(&new.kernel),
    )
    .map_err(|what| {
        hinted(
            format!(
                "`{}` and `{}` are not reports of one kernel: {what}",
                old_path.display(),
                new_path.display()
            ),
            "diff two reports of the same spec (a Triton or kernel upgrade), saved with `--json`",
        )
    })
}

fn probe_report(path: &std::path::Path) -> anyhow::Result<ProbeReport> {
    if let Ok(matrix) = matrix_report(path) {
        return Err(hinted(
            format!(
                "`{}` is a version matrix ({} versions), not one probe report",
                path.display(),
                matrix.versions.len()
            ),
            "diff a matrix on its own: `tilefit diff MATRIX.json`",
        ));
    }
    match output::read_report(path)? {
        SavedReport::Probe(report) => Ok(*report),
        SavedReport::Replay(_) => Err(hinted(
            format!("`{}` is a replay report", path.display()),
            "`tilefit diff` compares two probe reports of one spec",
        )),
    }
}

fn matrix_report(path: &std::path::Path) -> anyhow::Result<MatrixReport> {
    let json = super::output::untrusted_json(path, HINT)?;
    if json.get("kind").and_then(serde_json::Value::as_str) != Some("probe-matrix") {
        return Err(hinted(
            format!(
                "`{}` is not a version matrix; give the new report too",
                path.display()
            ),
            HINT,
        ));
    }
    serde_json::from_value(json).map_err(|e| {
        hinted(
            format!(
                "`{}` is not a matrix this tilefit reads: {e}",
                path.display()
            ),
            HINT,
        )
    })
}

const HINT: &str = "pass `tilefit diff OLD.json NEW.json` (two `probe --json` reports) or one `probe --triton A,B --json` matrix";
