//! A Triton version matrix and a report diff, drawn: the sweep table with one column group per
//! Triton version (each version's devices under it), each version's recommendations, and what
//! changed from one version to the next. Terminal and Markdown draw the same tables.

use std::fmt::Write as _;

use super::exporter::Exporter;
use super::layout::Table;
use super::markdown::Markdown;
use super::terminal::Terminal;
use crate::model::diff::ReportDiff;
use crate::model::matrix::MatrixReport;
use crate::units::format_count;

/// The sweep tables of every version side by side: the first column is the config (every version
/// probes the same spec, so the rows line up), then each version's device columns, headed
/// `Triton X.Y.Z <device>`.
fn matrix_table(report: &MatrixReport) -> Option<Table> {
    let tables: Vec<(String, Table)> = report
        .versions
        .iter()
        .map(|r| (r.triton_version.clone(), super::layout::sweep_table(r)))
        .collect();
    let (_, first) = tables.first()?;
    let mut header = vec![first.header[0].clone()];
    let mut rows: Vec<Vec<String>> = first.rows.iter().map(|r| vec![r[0].clone()]).collect();
    let mut numeric = Vec::new();
    for (version, table) in &tables {
        for column in table.header.iter().skip(1) {
            numeric.push(header.len());
            header.push(format!("Triton {version} {column}"));
        }
        for (row, theirs) in rows.iter_mut().zip(&table.rows) {
            row.extend(theirs.iter().skip(1).cloned());
        }
    }
    Some(Table {
        header,
        rows,
        numeric,
    })
}

/// One line per change: `BLOCK_N=64 num_stages=2 on sm_120: 155,648 -> 157,696 bytes (+2,048, x1.01);
/// rtx-pro-6000 fits -> over-budget`.
pub(crate) fn diff_lines(diff: &ReportDiff) -> Vec<String> {
    let bytes = |b: Option<u64>| b.map_or_else(|| "no size".to_owned(), format_count);
    diff.changes
        .iter()
        .map(|change| {
            let config = change
                .config
                .iter()
                .map(|(k, v)| match v {
                    serde_json::Value::String(s) => format!("{k}={s}"),
                    other => format!("{k}={other}"),
                })
                .collect::<Vec<_>>()
                .join(" ");
            let mut line = format!("{config} on {}: ", change.arch);
            if change.old_bytes == change.new_bytes {
                let _ = write!(line, "{} bytes", bytes(change.new_bytes));
            } else {
                let _ = write!(
                    line,
                    "{} -> {} bytes",
                    bytes(change.old_bytes),
                    bytes(change.new_bytes)
                );
                if let (Some(old), Some(new)) = (change.old_bytes, change.new_bytes) {
                    let sign = if new > old { "+" } else { "-" };
                    let _ = write!(line, " ({sign}{}", format_count(new.abs_diff(old)));
                    if old > 0 {
                        #[allow(clippy::cast_precision_loss)]
                        let factor = new as f64 / old as f64;
                        let _ = write!(line, ", x{factor:.2}");
                    }
                    line.push(')');
                }
            }
            for flip in &change.flips {
                let _ = write!(
                    line,
                    "; {} {} -> {}{}",
                    flip.device,
                    flip.old.as_str(),
                    flip.new.as_str(),
                    if flip.breaks() { " (BREAKS)" } else { "" }
                );
            }
            line
        })
        .collect()
}

/// The heading of a diff: how many results were compared and how many changed.
pub(crate) fn diff_heading(diff: &ReportDiff) -> String {
    let mut heading = format!(
        "Triton {} -> {}: {} of {} results changed",
        diff.old_triton,
        diff.new_triton,
        diff.changes.len(),
        diff.compared
    );
    let breaks = diff.breaks().len();
    if breaks > 0 {
        let _ = write!(heading, ", {breaks} from fits to over");
    }
    if diff.only_old + diff.only_new > 0 {
        let _ = write!(
            heading,
            " ({} only in the old report, {} only in the new)",
            diff.only_old, diff.only_new
        );
    }
    if !diff.named.is_empty() {
        let _ = write!(
            heading,
            ": {}",
            crate::escape::control(&diff.named.join("; "))
        );
    }
    heading
}

fn export_matrix(
    report: &MatrixReport,
    draw: &dyn Fn(&Table, &str) -> String,
    markdown: bool,
) -> String {
    let Some(first) = report.versions.first() else {
        return "an empty version matrix\n".to_owned();
    };
    let versions: Vec<&str> = report
        .versions
        .iter()
        .map(|r| r.triton_version.as_str())
        .collect();
    let heading = if markdown { "### " } else { "" };
    let mut out = format!(
        "{heading}{} in {}: shared memory per block under Triton {}\n\n",
        first.kernel.function,
        crate::escape::control(&first.kernel.file),
        versions.join(", ")
    );
    if let Some(table) = matrix_table(report) {
        out.push_str(&draw(&table, ""));
    }
    for version in &report.versions {
        if version.recommendations.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "\n{heading}Recommended config per device under Triton {} ({})",
            version.triton_version,
            super::layout::rule_text(version)
        );
        for (variant, recommendations) in super::layout::recommendations_by_variant(version) {
            if !variant.is_empty() {
                let _ = writeln!(out, "  {variant}");
            }
            out.push_str(&draw(
                &super::layout::recommendation_table(version, &recommendations),
                "    ",
            ));
        }
    }
    for diff in &report.diffs {
        let _ = writeln!(out, "\n{heading}{}", diff_heading(diff));
        for line in diff_lines(diff) {
            let _ = writeln!(out, "  {}{line}", if markdown { "- " } else { "" });
        }
    }
    for version in &report.versions {
        let _ = writeln!(out, "\n{}", super::layout::footer(version));
    }
    out
}

impl Exporter<MatrixReport> for Terminal {
    fn export(&self, report: &MatrixReport) -> String {
        export_matrix(report, &super::terminal::draw, false)
    }
}

impl Exporter<MatrixReport> for Markdown {
    fn export(&self, report: &MatrixReport) -> String {
        export_matrix(report, &|table, _| super::markdown::draw(table), true)
    }
}

impl Exporter<ReportDiff> for Terminal {
    fn export(&self, diff: &ReportDiff) -> String {
        let mut out = diff_heading(diff) + "\n";
        for line in diff_lines(diff) {
            let _ = writeln!(out, "  {line}");
        }
        out
    }
}

impl Exporter<ReportDiff> for Markdown {
    fn export(&self, diff: &ReportDiff) -> String {
        let mut out = format!("### {}\n\n", diff_heading(diff));
        for line in diff_lines(diff) {
            let _ = writeln!(out, "- {}", super::markdown::escape(&line));
        }
        out
    }
}
