//! The report for a terminal: the article's table (configs as rows, devices as columns grouped by
//! arch, bytes with `ok` or `OVER +N`), the recommendations under it, then notes and versions.
//! Plain text, every mark said in words, so it reads the same without color.

use std::fmt::Write as _;

use super::exporter::Exporter;
use super::layout::Table;
use crate::model::probe::ProbeReport;

/// Text for a terminal.
pub struct Terminal;

pub(super) fn draw(table: &Table, indent: &str) -> String {
    // A cell is one line: controls (a newline in a file name or key) as visible escapes.
    let safe = |cells: &[String]| -> Vec<String> {
        cells
            .iter()
            .map(|c| crate::escape::control(c).into_owned())
            .collect()
    };
    let table = &Table {
        header: safe(&table.header),
        rows: table.rows.iter().map(|r| safe(r)).collect(),
        numeric: table.numeric.clone(),
    };
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

/// A plain-text table: a header row and rows, columns padded to their widest cell; columns in
/// `right` right-aligned. The one table drawer of every command's text.
pub(crate) fn table(
    header: &[&str],
    rows: &[Vec<String>],
    right: &[usize],
    indent: &str,
) -> String {
    draw(
        &Table {
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: rows.to_vec(),
            numeric: right.to_vec(),
        },
        indent,
    )
}

impl Exporter<ProbeReport> for Terminal {
    fn export(&self, report: &ProbeReport) -> String {
        let mut out = format!(
            "{} in {}: shared memory per block, compiled for each target arch\n",
            report.kernel.function,
            crate::escape::control(&report.kernel.file)
        );
        let varying = crate::model::naming::varying_axes(report);
        let fixed = super::layout::fixed_settings(report, &varying);
        if !fixed.is_empty() {
            let _ = writeln!(out, "every row: {fixed}");
        }
        out.push('\n');
        let (table, hidden) = super::layout::compact_sweep_table(report);
        out.push_str(&draw(&table, ""));
        if hidden > 0 {
            let _ = writeln!(
                out,
                "({hidden} more configs fit every device they were compiled for; --markdown and --json list every row)"
            );
        }
        if let Some(table) = super::sections::resources_table(report) {
            let _ = writeln!(out, "\n{}", super::sections::RESOURCES_HEADING);
            out.push_str(&draw(&table, ""));
        }
        if let Some((heading, table)) = super::sections::listed_table(report) {
            let _ = writeln!(out, "\n{heading}");
            out.push_str(&draw(&table, "    "));
        }
        let files = super::sections::file_lines(report);
        if !files.is_empty() {
            out.push_str("\nConfig files\n");
            for line in files {
                let _ = writeln!(out, "  {}", crate::escape::control(&line));
            }
        }

        if !report.recommendations.is_empty() {
            let _ = writeln!(
                out,
                "\nRecommended config per device ({})",
                super::layout::rule_text(report)
            );
        }
        for (variant, recommendations) in super::layout::recommendations_by_variant(report) {
            if !variant.is_empty() {
                let _ = writeln!(out, "  {variant}");
            }
            out.push_str(&draw(
                &super::layout::recommendation_table(report, &recommendations),
                "    ",
            ));
        }
        let (needs, keeps) = super::layout::change_summary(report);
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
        let problems = super::layout::problems(report);
        if !problems.is_empty() {
            out.push_str("\nDid not compile, or failed\n");
            for line in problems {
                let _ = writeln!(out, "  {}", crate::escape::control(&line));
            }
        }
        let _ = writeln!(out, "\n{}", super::layout::footer(report));
        out
    }
}
