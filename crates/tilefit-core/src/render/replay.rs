//! The replay report in the terminal and in Markdown: kernel variants as rows, the arch and bytes
//! the workload compiled them for beside the fleet's devices grouped by arch, then what tells the
//! variants apart, what was skipped and why, and the versions that produced and replayed them.

use std::fmt::Write as _;

use super::exporter::Exporter;
use super::layout::{Table, device_columns, devices_by_arch, verdict_cell};
use super::markdown::Markdown;
use super::terminal::Terminal;
use crate::device::TargetDevice;
use crate::judge::findings::Findings as _;
use crate::model::replay::{KernelVariant, ReplayReport, ReplayResult};
use crate::units::format_count;

/// The cells of one kernel variant: `cell` of its result for each device's arch, `-` where there
/// is none or `cell` says nothing.
fn device_cells(
    report: &ReplayReport,
    index: usize,
    devices: &[&TargetDevice],
    cell: impl Fn(&ReplayResult, &TargetDevice) -> Option<String>,
) -> Vec<String> {
    devices
        .iter()
        .map(|device| {
            report
                .results
                .iter()
                .find(|r| r.kernel.index == index && r.arch == device.arch)
                .and_then(|r| cell(r, device))
                .unwrap_or_else(|| "-".to_owned())
        })
        .collect()
}

fn table(report: &ReplayReport) -> Table {
    let devices = devices_by_arch(&report.targets);
    let (header, budget_row) = device_columns(&devices, &["kernel", "compiled for"]);
    let mut rows = vec![budget_row];
    for (index, variant) in report.kernels.iter().enumerate() {
        let original = format!(
            "{} {}",
            variant.original_arch,
            variant
                .original_shared_bytes
                .map(format_count)
                .unwrap_or_default()
        );
        let mut row = vec![format!("{} #{}", variant.name, variant.id), original];
        row.extend(device_cells(report, index, &devices, |r, device| {
            Some(verdict_cell(r.status, r.shared_bytes, &r.verdicts, device))
        }));
        rows.push(row);
    }
    let numeric = (2..2 + devices.len()).collect();
    Table {
        header,
        rows,
        numeric,
    }
}

/// Registers, spills and occupancy per (kernel, device), when the binaries were read.
fn resources_table(report: &ReplayReport) -> Option<Table> {
    if report.results.iter().all(|r| r.resources.is_none()) {
        return None;
    }
    let devices = devices_by_arch(&report.targets);
    let (header, _) = device_columns(&devices, &["kernel"]);
    let rows = report
        .kernels
        .iter()
        .enumerate()
        .map(|(index, variant)| {
            let mut row = vec![format!("{} #{}", variant.name, variant.id)];
            row.extend(device_cells(report, index, &devices, |r, device| {
                super::sections::resources_cell(r.resources.as_ref(), &r.verdicts, device)
            }));
            row
        })
        .collect();
    Some(Table {
        header,
        rows,
        numeric: Vec::new(),
    })
}

/// What tells a variant apart from the others of the same name: its options, and the arguments
/// whose type or divisibility differ among them.
fn distinguishing(report: &ReplayReport, variant: &KernelVariant) -> String {
    let siblings: Vec<&KernelVariant> = report
        .kernels
        .iter()
        .filter(|k| k.name == variant.name)
        .collect();
    // num_warps and num_stages always; other options only where the variants differ.
    let mut parts: Vec<String> = variant
        .options
        .iter()
        .filter(|(k, v)| {
            k.as_str() == "num_warps"
                || k.as_str() == "num_stages"
                || siblings.iter().any(|s| s.options.get(*k) != Some(*v))
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if !variant.tile_ranges.is_empty() {
        let ranges: Vec<String> = variant.tile_ranges.iter().map(u64::to_string).collect();
        parts.push(format!("tile ranges {}", ranges.join("/")));
    }
    for arg in &variant.args {
        let differs = siblings.iter().any(|s| {
            s.args
                .iter()
                .find(|a| a.name == arg.name)
                .is_none_or(|a| a.ty != arg.ty || a.divisible_by_16 != arg.divisible_by_16)
        });
        if differs {
            let hint = if arg.divisible_by_16 {
                " (divisible by 16)"
            } else {
                ""
            };
            parts.push(format!("{}: {}{hint}", arg.name, arg.ty));
        }
    }
    parts.join(", ")
}

/// A shipped kernel's line: where its package records it, what its binary holds, and its whole
/// config (nothing else tells it apart: it was not recompiled).
fn shipped_line(variant: &KernelVariant, shipped: &crate::model::replay::Shipped) -> String {
    let options: Vec<String> = variant
        .options
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!(
        "#{} {} ({} in {}; as shipped: `{}` holds {}, compiled for {}): {}",
        variant.id,
        variant.name,
        variant.source.as_deref().unwrap_or("the wrapper"),
        shipped.package,
        shipped.binary,
        shipped.images.join(", "),
        variant.original_arch,
        options.join(", ")
    )
}

fn variant_lines(report: &ReplayReport) -> Vec<String> {
    report
        .kernels
        .iter()
        .map(|v| {
            if let Some(shipped) = &v.shipped {
                return shipped_line(v, shipped);
            }
            format!(
                "#{} {} ({}; Triton {}): {}{}",
                v.id,
                v.name,
                v.source
                    .as_deref()
                    .unwrap_or("source location not recorded"),
                v.triton_version
                    .as_deref()
                    .unwrap_or("version not recorded"),
                distinguishing(report, v),
                if v.copies > 1 {
                    format!(" [{} identical entries]", v.copies)
                } else {
                    String::new()
                }
            )
        })
        .collect()
}

/// Distinct compile problems per arch.
pub(crate) fn problems(report: &ReplayReport) -> Vec<String> {
    super::layout::distinct_problems(report.results.iter().map(|r| {
        (
            r.arch.as_str(),
            format!("{} #{}", r.kernel.name, r.kernel.id),
            r.error.as_ref(),
        )
    }))
}

fn versions_line(report: &ReplayReport) -> String {
    report
        .versions
        .iter()
        .map(|g| {
            let produced = g.produced_by.as_deref().unwrap_or("an unrecorded version");
            if g.produced_by.as_deref() == Some(g.replayed_with.as_str()) {
                format!("{} kernels produced and replayed by Triton {}", g.kernels, g.replayed_with)
            } else {
                format!(
                    "{} kernels produced by Triton {produced}, replayed by Triton {} (bytes may differ from that version's)",
                    g.kernels, g.replayed_with
                )
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// How many results were judged as shipped, not recompiled.
fn shipped_results(report: &ReplayReport) -> usize {
    report
        .results
        .iter()
        .filter(|r| r.replayed_with == crate::judge::shipped::AS_SHIPPED)
        .count()
}

/// What the table's bytes are: recompiles, and a package's bytes as recorded.
fn what_bytes(report: &ReplayReport) -> &'static str {
    match (
        report.kernels.iter().any(|k| k.shipped.is_some()),
        report.kernels.iter().any(|k| k.shipped.is_none()),
    ) {
        (true, true) => {
            "recompiled from their IR for each target arch (a package's kernels: as its host code asks, on the archs its binary loads on)"
        }
        (true, false) => {
            "as each package's host code asks, on the archs its binary loads on (not recompiled)"
        }
        _ => "recompiled from their IR for each target arch",
    }
}

fn footer(report: &ReplayReport) -> String {
    let s = &report.stats;
    let shipped = shipped_results(report);
    let mut shipped_note = if shipped > 0 {
        format!(" {shipped} (kernel, arch) pairs judged as shipped.")
    } else {
        String::new()
    };
    if s.unreadable_shipped > 0 {
        let _ = write!(
            shipped_note,
            " {} shipped kernels could not be read (see Skipped): the run FAILS.",
            s.unreadable_shipped
        );
    }
    format!(
        "{} cache entries scanned: {} kernel variants, {} other entries, {} skipped. {} recompiles: {} compiled, {} from cache{}, {:.1} s.{shipped_note}",
        s.entries_scanned,
        s.kernels,
        s.other_entries,
        s.skipped,
        s.jobs - shipped,
        s.compiled,
        s.cached,
        if s.failed > 0 {
            format!(", {} FAILED", s.failed)
        } else {
            String::new()
        },
        s.seconds
    )
}

impl Exporter<ReplayReport> for Terminal {
    fn export(&self, report: &ReplayReport) -> String {
        let mut out = format!(
            "Kernels from {}: shared memory per block, {}\n{}\n\n",
            crate::escape::log_text(&report.caches.join(", ")),
            what_bytes(report),
            versions_line(report)
        );
        out.push_str(&super::terminal::draw(&table(report), ""));
        if let Some(table) = resources_table(report) {
            let _ = writeln!(out, "\n{}", super::sections::RESOURCES_HEADING);
            out.push_str(&super::terminal::draw(&table, ""));
        }
        out.push_str("\nVariants\n");
        for line in variant_lines(report) {
            let _ = writeln!(out, "  {}", crate::escape::control(&line));
        }
        let problems = problems(report);
        if !problems.is_empty() {
            out.push_str("\nDid not compile, or failed\n");
            for line in problems {
                let _ = writeln!(out, "  {line}");
            }
        }
        if !report.skipped.is_empty() {
            out.push_str("\nSkipped\n");
            for skipped in &report.skipped {
                let _ = writeln!(
                    out,
                    "  {}: {}",
                    crate::escape::control(&skipped.path.display().to_string()),
                    crate::escape::control(&skipped.reason)
                );
            }
        }
        let over = report
            .judged()
            .iter()
            .filter(|j| j.verdict == crate::model::verdict::VerdictCode::OverBudget)
            .count();
        if over > 0 {
            let _ = writeln!(out, "\nOver budget: {over} (kernel, device) pairs");
        }
        let _ = writeln!(out, "\n{}", footer(report));
        out
    }
}

impl Exporter<ReplayReport> for Markdown {
    fn export(&self, report: &ReplayReport) -> String {
        let mut out = format!(
            "### tilefit replay: {} kernel variants\n\n{}{}\n\n",
            report.kernels.len(),
            if report.kernels.iter().any(|k| k.shipped.is_some()) {
                format!("Shared memory per block, {}. ", what_bytes(report))
            } else {
                String::new()
            },
            versions_line(report)
        );
        out.push_str(&super::markdown::draw(&table(report)));
        if let Some(table) = resources_table(report) {
            let _ = writeln!(out, "\n**{}**\n", super::sections::RESOURCES_HEADING);
            out.push_str(&super::markdown::draw(&table));
        }
        out.push_str("\n<details><summary>Variants</summary>\n\n");
        for line in variant_lines(report) {
            let _ = writeln!(out, "- {}", super::markdown::escape(&line));
        }
        out.push_str("\n</details>\n\n");
        let problems = problems(report);
        if !problems.is_empty() {
            out.push_str("<details><summary>Did not compile, or failed</summary>\n\n");
            for line in problems {
                let _ = writeln!(out, "- {}", super::markdown::escape(&line));
            }
            out.push_str("\n</details>\n\n");
        }
        if !report.skipped.is_empty() {
            out.push_str("<details><summary>Skipped</summary>\n\n");
            for skipped in &report.skipped {
                let _ = writeln!(
                    out,
                    "- `{}`: {}",
                    skipped.path.display(),
                    super::markdown::escape(&skipped.reason)
                );
            }
            out.push_str("\n</details>\n\n");
        }
        let _ = writeln!(
            out,
            "<sub>{}</sub>",
            super::markdown::escape(&footer(report))
        );
        out
    }
}
