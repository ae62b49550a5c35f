//! Reports: one model ([`ProbeReport`]) behind every format, and one [`Exporter`] trait with an
//! implementation per format (terminal text, Markdown, JSON). Exporters return text; the binary
//! decides where it goes. The shared layout (which columns, what a cell says) lives here once, so
//! the formats differ only in how a table is drawn.

mod html;
mod markdown;
mod replay;
mod terminal;

pub use html::{Html, NEAR_BUDGET_FRACTION};
pub use markdown::Markdown;
pub use terminal::Terminal;

use serde_json::Value;

use crate::probe::{ProbeReport, ProbeResult, Recommendation, TargetDevice};
use crate::resources::KernelResources;
use crate::units::format_count;
use crate::verdict::{CompileStatus, VerdictCode};

/// Renders a report (a probe's or a replay's) in one format.
pub trait Exporter<R> {
    /// The whole report as text.
    fn export(&self, report: &R) -> String;
}

/// The report as pretty JSON (`schema_version` 1).
pub struct Json;

impl<R: serde::Serialize> Exporter<R> for Json {
    fn export(&self, report: &R) -> String {
        let mut text = serde_json::to_string_pretty(report).expect("reports serialize");
        text.push('\n');
        text
    }
}

/// A table as rows of cells, drawn by each format in its own way.
pub(crate) struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Columns holding numbers (right-aligned where the format can).
    pub numeric: Vec<usize>,
}

fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `BLOCK_N=64 num_stages=2`, only the given axes, in report order.
pub fn config_text(config: &std::collections::BTreeMap<String, Value>, axes: &[String]) -> String {
    axes.iter()
        .filter_map(|axis| {
            config
                .get(axis)
                .map(|v| format!("{axis}={}", value_text(v)))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Axes with more than one value: the ones a row label needs.
pub fn varying_axes(report: &ProbeReport) -> Vec<String> {
    report
        .axes
        .iter()
        .filter(|axis| {
            let mut values = report.results.iter().filter_map(|r| r.config.get(*axis));
            let first = values.next();
            values.any(|v| Some(v) != first)
        })
        .cloned()
        .collect()
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
    verdicts: &[crate::verdict::DeviceVerdict],
    device: &TargetDevice,
) -> String {
    let verdict = verdicts.iter().find(|v| v.device == device.device);
    match (status, verdict) {
        (CompileStatus::Ok, Some(v)) => {
            let bytes = format_count(shared_bytes.unwrap_or(0));
            match v.verdict {
                VerdictCode::Fits => format!("{bytes} ok"),
                VerdictCode::OverThreadLimit => format!(
                    "{bytes} THREADS max {}",
                    v.max_threads_per_block.unwrap_or(0)
                ),
                _ => format!("{bytes} OVER +{}", format_count(v.over_by.unwrap_or(0))),
            }
        }
        (CompileStatus::UnsupportedOnTarget, _) => "unsupported".to_owned(),
        (CompileStatus::CompileError, _) => "compile error".to_owned(),
        _ => "FAILED".to_owned(),
    }
}

/// What one (result, device) cell of the resources table says: registers, spills or local
/// memory, and resident blocks per SM with what limits them. `None` when the binary was not read.
pub(crate) fn resources_cell(
    resources: Option<&KernelResources>,
    verdicts: &[crate::verdict::DeviceVerdict],
    device: &TargetDevice,
) -> Option<String> {
    let r = resources?;
    let mut parts = vec![match &r.amd {
        Some(amd) => format!("{} VGPRs {} SGPRs", r.registers_per_thread, amd.sgprs),
        None => format!("{} regs", r.registers_per_thread),
    }];
    match (r.spill_bytes, &r.amd) {
        (Some(bytes), _) if bytes > 0 => parts.push(format!("spills {} B", format_count(bytes))),
        (_, Some(amd)) if amd.vgpr_spills + amd.sgpr_spills > 0 => parts.push(format!(
            "spills {} VGPRs {} SGPRs",
            amd.vgpr_spills, amd.sgpr_spills
        )),
        _ if r.local_bytes_per_thread > 0 => parts.push(format!(
            "local {} B",
            format_count(r.local_bytes_per_thread)
        )),
        _ => {}
    }
    if let Some(v) = verdicts.iter().find(|v| v.device == device.device)
        && let (Some(blocks), Some(limiter)) = (v.blocks_per_sm, v.occupancy_limiter)
    {
        parts.push(format!("{blocks} blk/SM ({})", limiter.short()));
    }
    Some(parts.join(", "))
}

/// Registers, spills and occupancy per (config, device), when the binaries were read
/// (`--resources full`).
pub(crate) fn resources_table(report: &ProbeReport) -> Option<Table> {
    if report.results.iter().all(|r| r.resources.is_none()) {
        return None;
    }
    let varying = varying_axes(report);
    let devices = devices_by_arch(&report.targets);
    let mut header = vec!["config".to_owned()];
    header.extend(devices.iter().map(|d| format!("{} {}", d.device, d.arch)));
    let rows = config_rows(report, &varying)
        .into_iter()
        .map(|(label, in_row)| {
            let mut row = vec![if label.is_empty() {
                "(the one config)".to_owned()
            } else {
                label
            }];
            for device in &devices {
                row.push(
                    in_row
                        .iter()
                        .find(|r| r.arch == device.arch)
                        .and_then(|r| resources_cell(r.resources.as_ref(), &r.verdicts, device))
                        .unwrap_or_else(|| "-".to_owned()),
                );
            }
            row
        })
        .collect();
    Some(Table {
        header,
        rows,
        numeric: Vec::new(),
    })
}

/// The heading of the resources table.
pub(crate) const RESOURCES_HEADING: &str = "Registers per thread, spills and resident blocks per SM (read from each binary; blocks from NVIDIA's occupancy model, limited by smem, regs, threads or blocks)";

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
    for (label, in_row) in config_rows(report, &varying) {
        let mut row = vec![if label.is_empty() {
            "(the one config)".to_owned()
        } else {
            label
        }];
        for device in &devices {
            row.push(
                in_row
                    .iter()
                    .find(|r| r.arch == device.arch)
                    .map_or_else(|| "-".to_owned(), |r| cell(r, device)),
            );
        }
        rows.push(row);
    }
    Table {
        header,
        rows,
        numeric: (1..=devices.len()).collect(),
    }
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
    results: impl Iterator<Item = (&'a str, String, Option<&'a crate::probe::OutcomeError>)>,
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
            error.message, error.kind
        ));
    }
    lines
}

/// The closing line: versions, counts, time.
pub(crate) fn footer(report: &ProbeReport) -> String {
    let s = &report.stats;
    format!(
        "Triton {} (Python {}), {} jobs: {} compiled, {} from cache{}{}, {:.1} s. Bytes are metadata.shared per block; `ok` fits the device's per-block opt-in budget, `OVER +N` misses it by N bytes{}.",
        report.triton_version,
        report.python_version,
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
            "; `THREADS max N`: its registers leave the driver N threads per block, fewer than num_warps x 32"
        } else {
            ""
        }
    )
}

/// One (subject, device) verdict, flattened: what a CI gate looks at, for probe and replay alike.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// The config (probe) or kernel variant (replay), as the report names it.
    pub subject: String,
    /// The device as the user wrote it.
    pub device: String,
    /// The arch compiled for.
    pub arch: String,
    /// How the compile went.
    pub status: CompileStatus,
    /// Bytes per block, when compiled.
    pub shared_bytes: Option<u64>,
    /// The device's budget.
    pub budget: u64,
    /// The verdict.
    pub verdict: VerdictCode,
    /// Bytes over, when over.
    pub over_by: Option<u64>,
    /// Threads per block the driver allows at the kernel's registers (`--resources full`).
    pub max_threads_per_block: Option<u32>,
    /// Spill bytes, when the binary was read (`--resources full`).
    pub spill_bytes: Option<u64>,
}

/// The flattened verdicts of one result.
fn judged_of<'a>(
    subject: String,
    arch: &'a str,
    status: CompileStatus,
    shared_bytes: Option<u64>,
    verdicts: &'a [crate::verdict::DeviceVerdict],
    resources: Option<&'a KernelResources>,
) -> impl Iterator<Item = Judged> + 'a {
    verdicts.iter().map(move |v| Judged {
        subject: subject.clone(),
        device: v.device.clone(),
        arch: arch.to_owned(),
        status,
        shared_bytes,
        budget: v.budget,
        verdict: v.verdict,
        over_by: v.over_by,
        max_threads_per_block: v.max_threads_per_block,
        spill_bytes: resources.and_then(|r| r.spill_bytes),
    })
}

impl ProbeReport {
    /// Every verdict, flattened.
    pub fn judged(&self) -> Vec<Judged> {
        let varying = varying_axes(self);
        self.results
            .iter()
            .flat_map(|r| {
                judged_of(
                    config_text(&r.config, &varying),
                    &r.arch,
                    r.status,
                    r.shared_bytes,
                    &r.verdicts,
                    r.resources.as_ref(),
                )
            })
            .collect()
    }
}

impl crate::replay::ReplayReport {
    /// Every verdict, flattened.
    pub fn judged(&self) -> Vec<Judged> {
        self.results
            .iter()
            .flat_map(|r| {
                judged_of(
                    format!("{} #{}", r.kernel.name, r.kernel.id),
                    &r.arch,
                    r.status,
                    r.shared_bytes,
                    &r.verdicts,
                    r.resources.as_ref(),
                )
            })
            .collect()
    }
}

/// `#5`: an autotune config's place in the kernel's list, or a config file config's number among
/// the distinct configs of the files.
fn listed_label(report: &ProbeReport, config_index: usize) -> String {
    let Some(listed) = &report.listed else {
        return String::new();
    };
    let autotune: Vec<String> = listed
        .origins
        .get(config_index)
        .into_iter()
        .flatten()
        .filter_map(|o| o.strip_prefix("autotune "))
        .map(str::to_owned)
        .collect();
    if autotune.is_empty() {
        format!("#{}", config_index % listed.distinct.max(1))
    } else {
        autotune.join("/")
    }
}

/// The heading and the per-device table of a sweep from listed configs: how many fit, which
/// miss and by how much, and the devices where none fits.
pub(crate) fn listed_table(report: &ProbeReport) -> Option<(String, Table)> {
    let listed = report.listed.as_ref()?;
    let heading = match listed.kind {
        crate::spec::ListKind::Autotune => format!(
            "The @triton.autotune configs per device ({} listed; #N is a config's place in the list)",
            listed.distinct
        ),
        crate::spec::ListKind::ConfigFiles => format!(
            "The config files' configs per device ({} distinct, #N as in the rows above; each checked on every device)",
            listed.distinct
        ),
    };
    let with_variant = listed.per_device.iter().any(|d| !d.variant.is_empty());
    let rows = listed
        .per_device
        .iter()
        .map(|fit| {
            let mut row = vec![fit.device.clone(), fit.arch.clone()];
            if with_variant {
                let axes: Vec<String> = fit.variant.keys().cloned().collect();
                row.push(config_text(&fit.variant, &axes));
            }
            row.push(format!("{}/{}", fit.fits.len(), fit.total));
            let mut misses: Vec<String> = fit
                .over
                .iter()
                .map(|(index, over)| {
                    format!("{} +{}", listed_label(report, *index), format_count(*over))
                })
                .collect();
            if !fit.other.is_empty() {
                misses.push(format!("{} did not compile", fit.other.len()));
            }
            let verdict = if fit.none_fits() {
                match listed.kind {
                    crate::spec::ListKind::Autotune => {
                        "NONE FITS: the autotuner has nothing to choose from".to_owned()
                    }
                    crate::spec::ListKind::ConfigFiles => "NONE FITS".to_owned(),
                }
            } else if misses.is_empty() {
                "all fit".to_owned()
            } else {
                format!("{} miss", fit.total - fit.fits.len())
            };
            row.push(verdict);
            row.push(misses.join(", "));
            row
        })
        .collect();
    let mut header: Vec<String> = vec!["device".into(), "arch".into()];
    if with_variant {
        header.push("variant".into());
    }
    header.extend(["fit".into(), "verdict".into(), "over budget (by)".into()]);
    let fit_column = header.len() - 3;
    Some((
        heading,
        Table {
            header,
            rows,
            numeric: vec![fit_column],
        },
    ))
}

/// One line per config file: the device it maps to and its configs' verdicts there, or why it
/// maps to none; then the files that could not be read.
pub(crate) fn file_lines(report: &ProbeReport) -> Vec<String> {
    let Some(listed) = &report.listed else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    for file in &listed.files {
        let line = match (&file.device, &file.unresolved) {
            (Some(device), _) => {
                let over: Vec<String> = file
                    .entries
                    .iter()
                    .filter(|e| e.verdict == Some(VerdictCode::OverBudget))
                    .map(|e| {
                        format!(
                            "{} ({}) needs {} bytes, OVER +{}",
                            e.key,
                            listed_label(report, e.config_index),
                            format_count(e.shared_bytes.unwrap_or(0)),
                            format_count(e.over_by.unwrap_or(0))
                        )
                    })
                    .collect();
                let fits = file
                    .entries
                    .iter()
                    .filter(|e| e.verdict == Some(VerdictCode::Fits))
                    .count();
                let arch = file.arch.as_deref().unwrap_or("?");
                if over.is_empty() {
                    format!(
                        "{} -> {device} ({arch}): {fits}/{} configs fit",
                        file.file,
                        file.entries.len()
                    )
                } else {
                    format!(
                        "{} -> {device} ({arch}): {fits}/{} configs fit; OVER on its own device: {}",
                        file.file,
                        file.entries.len(),
                        over.join("; ")
                    )
                }
            }
            (None, Some(reason)) => format!("{}: NO DEVICE: {reason}", file.file),
            (None, None) => format!("{}: no device", file.file),
        };
        lines.push(line);
    }
    for problem in &listed.file_problems {
        let name = problem.path.file_name().map_or_else(
            || problem.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        lines.push(format!("{name}: SKIPPED: {}", problem.problem));
    }
    lines
}
