//! `tilefit verify`: prediction against the driver, a row per config or kernel, the agreement
//! rate and the resource checks.

use super::{Exporter, Terminal};
use std::fmt::Write as _;

use super::terminal::table as text_table;
use crate::model::verify::{Check, ResourceChecks, Row, VerifyReport};
use crate::units::format_count;

impl Exporter<VerifyReport> for Terminal {
    fn export(&self, report: &VerifyReport) -> String {
        text(report)
    }
}

/// The report as text.
fn text(report: &VerifyReport) -> String {
    let d = &report.device;
    let mut out = format!(
        "{} ({}, driver budget {} bytes per block; the table says {}), Triton {}, {}\n\n",
        d.name,
        d.arch,
        format_count(u64::try_from(d.smem_per_block_optin).unwrap_or(0)),
        format_count(report.table_budget),
        report.triton_version,
        report.source
    );
    let rows: Vec<Vec<String>> = report.rows.iter().map(row_cells).collect();
    out.push_str(&text_table(
        &[
            "config / kernel",
            "bytes",
            "predicted",
            "driver",
            "regs",
            "local B",
            "max threads",
            "blocks/SM",
            "spill B",
            "launch",
            "agree",
        ],
        &rows,
        &[1, 4, 5, 6, 7, 8],
        "",
    ));
    let over = report
        .rows
        .iter()
        .filter(|r| r.predicted == crate::model::verdict::VerdictCode::OverBudget)
        .count();
    let _ = writeln!(
        out,
        "\nAgreement: {}/{} ({:.1}%); {} predicted over the budget, {} predicted to fit.",
        report.agreed,
        report.rows.len(),
        if report.rows.is_empty() {
            100.0
        } else {
            percent(report.agreed, report.rows.len())
        },
        over,
        report.rows.len() - over
    );
    let tally = report.resource_tally();
    if tally.first().is_some_and(|(_, _, checked)| *checked > 0) {
        let _ = writeln!(
            out,
            "Read from the cubin and modelled, against the driver (cuFuncGetAttribute, cuOccupancyMaxActiveBlocksPerMultiprocessor):"
        );
        for (name, agreed, checked) in tally {
            let _ = writeln!(
                out,
                "  {name:<24} {agreed}/{checked} ({:.1}%)",
                percent(agreed, checked)
            );
        }
    }
    if !report.not_compiled.is_empty() {
        let _ = writeln!(
            out,
            "Not compiled for {} (nothing to verify): {}",
            d.arch,
            report.not_compiled.len()
        );
        for line in &report.not_compiled {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}

fn percent(part: usize, whole: usize) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "row counts are small")]
    let ratio = part as f64 / whole.max(1) as f64;
    ratio * 100.0
}

/// The cells of one verification row.
fn row_cells(r: &Row) -> Vec<String> {
    let driver = if r.driver.accepted {
        format!(
            "accepted, {} blocks/SM",
            r.driver.blocks_per_sm.unwrap_or(0)
        )
    } else {
        format!("refused: {}", r.driver.error.as_deref().unwrap_or("?"))
    };
    vec![
        r.subject.clone(),
        format_count(r.shared_bytes),
        r.predicted.as_str().to_owned(),
        driver,
        resource_cell(r, |c| &c.registers_per_thread, || r.driver.registers),
        resource_cell(r, |c| &c.local_bytes_per_thread, || r.driver.local_bytes),
        resource_cell(
            r,
            |c| &c.max_threads_per_block,
            || r.driver.max_threads_per_block,
        ),
        resource_cell(r, |c| &c.blocks_per_sm, || r.driver.blocks_per_sm),
        r.resources
            .as_ref()
            .and_then(|c| c.spill_bytes)
            .map(format_count)
            .unwrap_or_default(),
        r.launch.as_ref().map_or_else(String::new, |l| {
            if l.launched {
                "launched".to_owned()
            } else {
                format!("refused: {}", l.error.as_deref().unwrap_or("?"))
            }
        }),
        if r.agrees {
            "yes".to_owned()
        } else {
            "NO".to_owned()
        },
    ]
}

/// One resource check as a cell: the number where tilefit and the driver agree, both where they
/// do not, the driver's alone where tilefit read nothing.
fn resource_cell(
    row: &Row,
    pick: fn(&ResourceChecks) -> &Check,
    driver: impl Fn() -> Option<i32>,
) -> String {
    match row.resources.as_ref().map(pick) {
        Some(check) if check.agrees => check.predicted.map(|v| v.to_string()).unwrap_or_default(),
        Some(check) => format!(
            "{} vs driver {}",
            check
                .predicted
                .map_or_else(|| "?".to_owned(), |v| v.to_string()),
            check
                .driver
                .map_or_else(|| "?".to_owned(), |v| v.to_string())
        ),
        None => driver().map(|v| v.to_string()).unwrap_or_default(),
    }
}
