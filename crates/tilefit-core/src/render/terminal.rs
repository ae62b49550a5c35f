//! The report for a terminal: the article's table (configs as rows, devices as columns grouped by
//! arch, bytes with `ok` or `OVER +N`), the recommendations under it, then notes and versions.
//! Plain text, every mark said in words, so it reads the same without color.

use std::fmt::Write as _;

use super::{Exporter, Table};
use crate::model::probe::ProbeReport;

/// Text for a terminal.
pub struct Terminal;

pub(super) fn draw(table: &Table, indent: &str) -> String {
    let columns = table.header.len();
    let mut widths: Vec<usize> = table.header.iter().map(|h| h.chars().count()).collect();
    for row in &table.rows {
        for (i, cell) in row.iter().enumerate().take(columns) {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut out = String::from(indent);
        for (i, cell) in cells.iter().enumerate() {
            let pad = " ".repeat(widths[i] - cell.chars().count());
            if table.numeric.contains(&i) {
                out.push_str(&pad);
                out.push_str(cell);
            } else {
                out.push_str(cell);
                out.push_str(&pad);
            }
            out.push_str("  ");
        }
        out.trim_end().to_owned() + "\n"
    };
    let mut out = line(&table.header);
    for row in &table.rows {
        out.push_str(&line(row));
    }
    out
}

impl Exporter<ProbeReport> for Terminal {
    fn export(&self, report: &ProbeReport) -> String {
        let mut out = format!(
            "{} in {}: shared memory per block, compiled for each target arch\n",
            report.kernel.function,
            crate::escape::control(&report.kernel.file)
        );
        let varying = super::varying_axes(report);
        let fixed = super::fixed_settings(report, &varying);
        if !fixed.is_empty() {
            let _ = writeln!(out, "every row: {fixed}");
        }
        out.push('\n');
        let (table, hidden) = super::compact_sweep_table(report);
        out.push_str(&draw(&table, ""));
        if hidden > 0 {
            let _ = writeln!(
                out,
                "({hidden} more configs fit every device they were compiled for; --markdown and --json list every row)"
            );
        }
        if let Some(table) = super::resources_table(report) {
            let _ = writeln!(out, "\n{}", super::RESOURCES_HEADING);
            out.push_str(&draw(&table, ""));
        }
        if let Some((heading, table)) = super::listed_table(report) {
            let _ = writeln!(out, "\n{heading}");
            out.push_str(&draw(&table, "    "));
        }
        let files = super::file_lines(report);
        if !files.is_empty() {
            out.push_str("\nConfig files\n");
            for line in files {
                let _ = writeln!(out, "  {line}");
            }
        }

        if !report.recommendations.is_empty() {
            let _ = writeln!(
                out,
                "\nRecommended config per device ({})",
                super::rule_text(report)
            );
        }
        for (variant, recommendations) in super::recommendations_by_variant(report) {
            if !variant.is_empty() {
                let _ = writeln!(out, "  {variant}");
            }
            out.push_str(&draw(
                &super::recommendation_table(report, &recommendations),
                "    ",
            ));
        }
        let (needs, keeps) = super::change_summary(report);
        if !needs.is_empty() {
            let _ = writeln!(
                out,
                "\nNeeds a change from the baseline: {}",
                needs.join(", ")
            );
        }
        if !keeps.is_empty() {
            let _ = writeln!(
                out,
                "Baseline fits (no change needed): {}",
                keeps.join(", ")
            );
        }
        let problems = super::problems(report);
        if !problems.is_empty() {
            out.push_str("\nDid not compile, or failed\n");
            for line in problems {
                let _ = writeln!(out, "  {line}");
            }
        }
        let _ = writeln!(out, "\n{}", super::footer(report));
        out
    }
}
