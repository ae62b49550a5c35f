//! The report as GitHub-flavoured Markdown: compact tables that fit a step summary or a pull
//! request comment. Same content as the terminal report; only the drawing differs.

use std::fmt::Write as _;

use super::exporter::Exporter;
use super::layout::Table;
use crate::model::probe::ProbeReport;

/// Markdown for GitHub.
pub struct Markdown;

/// A cell's or a line's text for GitHub-flavoured Markdown: the one Markdown escaper
/// ([`crate::escape::markdown`]): `|` would end the cell, `<`, `>` and `&` would be read as HTML
/// (`!tt.ptr<bf16>` would lose its `<bf16>` as an unknown tag), a newline would start a heading.
pub(super) fn escape(cell: &str) -> String {
    crate::escape::markdown(cell)
}

pub(super) fn draw(table: &Table) -> String {
    let mut out = format!(
        "| {} |\n",
        table
            .header
            .iter()
            .map(|h| escape(h))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let divider: Vec<&str> = (0..table.header.len())
        .map(|i| {
            if table.numeric.contains(&i) {
                "---:"
            } else {
                "---"
            }
        })
        .collect();
    let _ = writeln!(out, "|{}|", divider.join("|"));
    for row in &table.rows {
        let _ = writeln!(
            out,
            "| {} |",
            row.iter()
                .map(|c| escape(c))
                .collect::<Vec<_>>()
                .join(" | ")
        );
    }
    out
}

impl Exporter<ProbeReport> for Markdown {
    fn export(&self, report: &ProbeReport) -> String {
        let mut out = format!(
            "### tilefit: `{}` shared memory per block\n\n",
            report.kernel.function
        );
        let varying = crate::model::naming::varying_axes(report);
        let fixed = super::layout::fixed_settings(report, &varying);
        if !fixed.is_empty() {
            let _ = writeln!(out, "Every row: `{fixed}`\n");
        }
        out.push_str(&draw(&super::layout::sweep_table(report)));
        if let Some(table) = super::sections::resources_table(report) {
            let _ = writeln!(out, "\n**{}**\n", super::sections::RESOURCES_HEADING);
            out.push_str(&draw(&table));
        }
        if let Some((heading, table)) = super::sections::listed_table(report) {
            let _ = writeln!(out, "\n**{heading}**\n");
            out.push_str(&draw(&table));
        }
        let files = super::sections::file_lines(report);
        if !files.is_empty() {
            out.push_str("\n**Config files**\n\n");
            for line in files {
                let _ = writeln!(out, "- {}", escape(&line));
            }
        }
        if !report.recommendations.is_empty() {
            let _ = writeln!(
                out,
                "\n**Recommended config per device** ({})\n",
                super::layout::rule_text(report)
            );
        }
        for (variant, recommendations) in super::layout::recommendations_by_variant(report) {
            if !variant.is_empty() {
                let _ = writeln!(out, "`{variant}`\n");
            }
            out.push_str(&draw(&super::layout::recommendation_table(
                report,
                &recommendations,
            )));
            out.push('\n');
        }
        let (needs, _) = super::layout::change_summary(report);
        if !needs.is_empty() {
            let _ = writeln!(
                out,
                "**Needs a change from the baseline:** {}\n",
                needs.join(", ")
            );
        }
        let problems = super::layout::problems(report);
        if !problems.is_empty() {
            out.push_str("<details><summary>Did not compile, or failed</summary>\n\n");
            for line in problems {
                let _ = writeln!(out, "- {}", escape(&line));
            }
            out.push_str("\n</details>\n\n");
        }
        let _ = writeln!(out, "<sub>{}</sub>", escape(&super::layout::footer(report)));
        out
    }
}
