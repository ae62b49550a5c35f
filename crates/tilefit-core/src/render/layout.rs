//! The layout every format shares, defined once: which columns a sweep table has, what a cell
//! says, the recommendation and problem lists and the footer. Each exporter only draws it.

use crate::device::TargetDevice;
use crate::model::naming::listed_label;
use crate::model::naming::{config_text, value_text, varying_axes};
use crate::model::probe::{ProbeReport, ProbeResult, Recommendation};
use crate::model::verdict::VerdictCode;
use crate::units::format_count;
use crate::vocab::CompileStatus;

/// A table as rows of cells, drawn by each format in its own way.
pub(crate) struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Columns holding numbers (right-aligned where the format can).
    pub numeric: Vec<usize>,
}

/// Settings shared by every row: swept axes with one value, and the effective num_warps and
/// num_stages when they were not swept.
pub(crate) fn fixed_settings(report: &ProbeReport, varying: &[String]) -> String {
    let Some(first) = report
        .results
        .iter()
        .find(|r| r.status == CompileStatus::Ok)
        .or(report.results.first())
    else {
        return String::new();
    };
    first
        .config
        .iter()
        .filter(|(axis, _)| !varying.contains(axis))
        .filter(|(axis, value)| {
            report
                .results
                .iter()
                .all(|r| r.config.get(*axis).is_none_or(|v| v == *value))
        })
        .map(|(axis, value)| format!("{axis}={}", value_text(value)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The text of one (result, device) cell.
pub(crate) fn cell(result: &ProbeResult, device: &TargetDevice) -> String {
    verdict_cell(result.status, result.shared_bytes, &result.verdicts, device)
}

/// `89,088 ok`, `102,400 OVER +1,024`, `unsupported`, `compile error`, `FAILED`.
pub(crate) fn verdict_cell(
    status: CompileStatus,
    shared_bytes: Option<u64>,
    verdicts: &[crate::model::verdict::DeviceVerdict],
    device: &TargetDevice,
) -> String {
    let verdict = verdicts.iter().find(|v| v.device == device.device);
    match (status, verdict) {
        (CompileStatus::Ok, Some(v)) => {
            let bytes = format_count(shared_bytes.unwrap_or(0));
            match v.verdict {
                VerdictCode::Fits => format!("{bytes} ok"),
                VerdictCode::OverThreadLimit => format!(
                    "{bytes} THREADS {}>{}",
                    format_count(u64::from(v.threads_per_block.unwrap_or(0))),
                    format_count(u64::from(v.max_threads_per_block.unwrap_or(0)))
                ),
                _ => format!("{bytes} OVER +{}", format_count(v.over_by.unwrap_or(0))),
            }
        }
        (CompileStatus::UnsupportedOnTarget, _) => "unsupported".to_owned(),
        (CompileStatus::CompileError, _) => "compile error".to_owned(),
        _ => "FAILED".to_owned(),
    }
}

/// The header cells and the budget row of a table whose columns are devices grouped by arch.
pub(crate) fn device_columns(
    devices: &[&TargetDevice],
    first: &[&str],
) -> (Vec<String>, Vec<String>) {
    let mut header: Vec<String> = first.iter().map(|s| (*s).to_owned()).collect();
    header.extend(devices.iter().map(|d| format!("{} {}", d.device, d.arch)));
    let mut budget_row = vec!["budget/block".to_owned()];
    budget_row.extend(first.iter().skip(1).map(|_| String::new()));
    budget_row.extend(devices.iter().map(|d| format_count(d.smem_per_block_optin)));
    (header, budget_row)
}

/// The sweep table: configs as rows, devices as columns grouped by arch (fleet order).
pub(crate) fn sweep_table(report: &ProbeReport) -> Table {
    let varying = varying_axes(report);
    let devices = devices_by_arch(&report.targets);
    let (header, budget_row) = device_columns(&devices, &["config"]);
    let mut rows = vec![budget_row];
    rows.extend(config_grid(report, &varying, &devices, |r, d| {
        Some(cell(r, d))
    }));
    Table {
        header,
        rows,
        numeric: (1..=devices.len()).collect(),
    }
}

/// Config-file sweeps run to thousands of configs: on a terminal, past this many rows, only the
/// rows that miss or fail somewhere are drawn.
const COMPACT_AFTER_ROWS: usize = 40;

/// The sweep table for a terminal, and how many rows it left out (configs that fit everywhere
/// they were compiled, in a config-file sweep longer than [`COMPACT_AFTER_ROWS`]).
pub(crate) fn compact_sweep_table(report: &ProbeReport) -> (Table, usize) {
    let mut table = sweep_table(report);
    let from_files = report
        .listed
        .as_ref()
        .is_some_and(|l| l.kind == crate::input::spec::ListKind::ConfigFiles);
    if !from_files || table.rows.len() <= COMPACT_AFTER_ROWS + 1 {
        return (table, 0);
    }
    let before = table.rows.len();
    let mut rows = table.rows.into_iter();
    let budget = rows.next();
    table.rows = budget
        .into_iter()
        .chain(rows.filter(|row| {
            row.iter()
                .skip(1)
                .any(|cell| cell != "-" && !cell.ends_with(" ok"))
        }))
        .collect();
    let hidden = before - table.rows.len();
    (table, hidden)
}

/// One row per config of the sweep (its label; `(the one config)` when the sweep has one), one
/// cell per device: what `cell` says of the config's result for the device's arch, `-` where there
/// is no result or `cell` says nothing.
pub(crate) fn config_grid(
    report: &ProbeReport,
    varying: &[String],
    devices: &[&TargetDevice],
    cell: impl Fn(&ProbeResult, &TargetDevice) -> Option<String>,
) -> Vec<Vec<String>> {
    config_rows(report, varying)
        .into_iter()
        .map(|(label, in_row)| {
            let mut row = vec![if label.is_empty() {
                "(the one config)".to_owned()
            } else {
                label
            }];
            row.extend(devices.iter().map(|device| {
                in_row
                    .iter()
                    .find(|r| r.arch == device.arch)
                    .and_then(|r| cell(r, device))
                    .unwrap_or_else(|| "-".to_owned())
            }));
            row
        })
        .collect()
}

/// The results of a probe grouped by config, in sweep order, each group with its config's label
/// (only the varying axes; empty when the sweep has one config).
pub(crate) fn config_rows<'a>(
    report: &'a ProbeReport,
    varying: &[String],
) -> Vec<(String, Vec<&'a ProbeResult>)> {
    let mut indices: Vec<usize> = report.results.iter().map(|r| r.config_index).collect();
    indices.dedup();
    indices
        .into_iter()
        .map(|index| {
            let in_row: Vec<&ProbeResult> = report
                .results
                .iter()
                .filter(|r| r.config_index == index)
                .collect();
            let label = in_row
                .first()
                .map(|r| config_text(&r.config, varying))
                .unwrap_or_default();
            // A listed config is also named by its number (`#N`), which the per-device table uses.
            let label = if report.listed.is_some() {
                format!("{} {label}", listed_label(report, index))
            } else {
                label
            };
            (label, in_row)
        })
        .collect()
}

/// The fleet, grouped so devices of one arch sit side by side, arch order as first listed.
pub(crate) fn devices_by_arch(targets: &[TargetDevice]) -> Vec<&TargetDevice> {
    let mut archs: Vec<&str> = Vec::new();
    for device in targets {
        if !archs.contains(&device.arch.as_str()) {
            archs.push(&device.arch);
        }
    }
    archs
        .iter()
        .flat_map(|arch| targets.iter().filter(move |d| d.arch == *arch))
        .collect()
}

/// One row per (variant, device) recommendation.
pub(crate) fn recommendation_table(
    report: &ProbeReport,
    recommendations: &[&Recommendation],
) -> Table {
    let varying = varying_axes(report);
    let choice_axes: Vec<String> = varying
        .iter()
        .filter(|a| !report.rule.per.contains(a))
        .cloned()
        .collect();
    let rows = recommendations
        .iter()
        .map(|r| {
            let (config, bytes, headroom) = match &r.config {
                Some(config) => (
                    config_text(config, &choice_axes),
                    r.shared_bytes.map(format_count).unwrap_or_default(),
                    r.headroom.map(format_count).unwrap_or_default(),
                ),
                None => (
                    "none of the swept configs fits".to_owned(),
                    String::new(),
                    String::new(),
                ),
            };
            let baseline = if !r.baseline_fits {
                match (r.baseline_verdict, r.baseline_over_by) {
                    (VerdictCode::OverBudget, Some(over)) => {
                        format!("OVER +{}: NEEDS CHANGE", format_count(over))
                    }
                    (verdict, _) => format!("{}: NEEDS CHANGE", verdict.as_str()),
                }
            } else if r.changed {
                "fits (the rule ranks the recommended one higher)".to_owned()
            } else {
                "fits: keep it".to_owned()
            };
            vec![
                r.device.clone(),
                r.arch.clone(),
                config,
                bytes,
                headroom,
                baseline,
            ]
        })
        .collect();
    Table {
        header: [
            "device",
            "arch",
            "recommended",
            "bytes",
            "headroom",
            "baseline",
        ]
        .map(str::to_owned)
        .to_vec(),
        rows,
        numeric: vec![3, 4],
    }
}

/// Recommendations grouped by variant, in order.
pub(crate) fn recommendations_by_variant(
    report: &ProbeReport,
) -> Vec<(String, Vec<&Recommendation>)> {
    let mut groups: Vec<(String, Vec<&Recommendation>)> = Vec::new();
    for r in &report.recommendations {
        let label = config_text(&r.variant, &report.rule.per);
        match groups.iter_mut().find(|(l, _)| *l == label) {
            Some((_, members)) => members.push(r),
            None => groups.push((label, vec![r])),
        }
    }
    groups
}

/// One line on the rule.
pub(crate) fn rule_text(report: &ProbeReport) -> String {
    let varying = varying_axes(report);
    let mut parts = Vec::new();
    if !report.rule.per.is_empty() {
        parts.push(format!("one per {}", report.rule.per.join(", ")));
    }
    if report.rule.prefer.is_empty() {
        parts.push("first listed config that fits".to_owned());
    } else {
        parts.push(format!(
            "prefer {} among configs that fit",
            report.rule.prefer.join(", ")
        ));
    }
    let baseline = report
        .recommendations
        .first()
        .map(|r| {
            config_text(
                &r.baseline,
                &varying
                    .iter()
                    .filter(|a| !report.rule.per.contains(a))
                    .cloned()
                    .collect::<Vec<_>>(),
            )
        })
        .unwrap_or_default();
    if !baseline.is_empty() {
        parts.push(format!("baseline {baseline}"));
    }
    parts.join("; ")
}

/// Devices whose baseline does not fit, and those whose does.
pub(crate) fn change_summary(report: &ProbeReport) -> (Vec<String>, Vec<String>) {
    let mut needs = Vec::new();
    let mut keeps = Vec::new();
    for (variant, recommendations) in recommendations_by_variant(report) {
        for r in recommendations {
            let label = if variant.is_empty() {
                r.device.clone()
            } else {
                format!("{} ({variant})", r.device)
            };
            if r.needs_change {
                needs.push(label);
            } else {
                keeps.push(label);
            }
        }
    }
    (needs, keeps)
}

/// Distinct compile problems per arch, for the notes under the table.
pub(crate) fn problems(report: &ProbeReport) -> Vec<String> {
    let varying = varying_axes(report);
    distinct_problems(report.results.iter().map(|r| {
        (
            r.arch.as_str(),
            config_text(&r.config, &varying),
            r.error.as_ref(),
        )
    }))
}

/// One line per distinct (arch, error message): `ARCH SUBJECT: MESSAGE (KIND)`, first subject.
pub(crate) fn distinct_problems<'a>(
    results: impl Iterator<Item = (&'a str, String, Option<&'a crate::compile::OutcomeError>)>,
) -> Vec<String> {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    let mut lines = Vec::new();
    for (arch, subject, error) in results {
        let Some(error) = error else { continue };
        if seen.contains(&(arch, error.message.as_str())) {
            continue;
        }
        seen.push((arch, &error.message));
        lines.push(format!(
            "{arch} {subject}: {} ({})",
            error.one_line(),
            error.kind
        ));
    }
    lines
}

/// The closing line: versions, counts, time.
pub(crate) fn footer(report: &ProbeReport) -> String {
    let s = &report.stats;
    let loaded = match &report.kernel.loaded {
        Some(l) if l.how == "extract" => format!(
            "{} extracted from its file ({} module-level names ran{}{}). ",
            report.kernel.function,
            l.names.len(),
            l.import_error
                .as_ref()
                .map(|e| format!("; the plain import failed: {e}"))
                .unwrap_or_default(),
            if l.peeled.is_empty() {
                String::new()
            } else {
                format!(
                    "; {} taken off the kernel (they do not evaluate here), compiling the @triton.jit function they wrap",
                    l.peeled.join(", ")
                )
            }
        ),
        _ => String::new(),
    };
    loaded
        + &format!(
            "Triton {}{} (Python {}{}), {} jobs: {} compiled, {} from cache{}{}, {:.1} s. Bytes are metadata.shared per block; `ok` fits the device's per-block opt-in budget, `OVER +N` misses it by N bytes{}.",
            report.triton_version,
            if report.triton_env.is_empty() {
                String::new()
            } else {
                let set: Vec<String> = report
                    .triton_env
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                format!(" with {}", crate::escape::control(&set.join(" ")))
            },
            report.python_version,
            if report.toolchain == Some(crate::compile::toolchain::Origin::Environment) {
                ", the environment's"
            } else {
                ""
            },
            s.jobs,
            s.compiled,
            s.cached,
            if s.recomputed > 0 {
                format!(" ({} broken cache entries recomputed)", s.recomputed)
            } else {
                String::new()
            },
            if s.failed > 0 {
                format!(", {} FAILED", s.failed)
            } else {
                String::new()
            },
            s.seconds,
            if report.results.iter().any(|r| r
                .verdicts
                .iter()
                .any(|v| v.verdict == VerdictCode::OverThreadLimit))
            {
                "; `THREADS T>M`: the block has T threads (num_warps x the warp size), more than the M a block may have on the device (or its registers leave): the launch fails; lower num_warps"
            } else {
                ""
            }
        )
}
