//! The render stage: one [`Exporter`] trait with an implementation per format (terminal text,
//! Markdown, JSON, HTML) for the probe's and the replay's report models (`crate::model`), and the
//! [`Findings`] the gate and the exit code read from either. Exporters return text; the binary
//! decides where it goes. The shared layout (which columns, what a cell says) lives here once, so
//! the formats differ only in how a table is drawn.

mod html;
mod markdown;
mod matrix;
mod replay;
mod sections;
mod terminal;

pub use html::{Html, NEAR_BUDGET_FRACTION};
pub use markdown::Markdown;
pub use terminal::Terminal;

pub(crate) use sections::{
    RESOURCES_HEADING, file_lines, listed_label, listed_table, resources_cell, resources_table,
};

use std::collections::BTreeMap;

use serde_json::Value;

use crate::vocab::CompileStatus;
use crate::device::TargetDevice;
use crate::model::probe::{ProbeReport, ProbeResult, Recommendation};
use crate::model::verdict::VerdictCode;
use crate::resources::KernelResources;
use crate::units::format_count;

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
            "{} extracted from its file ({} module-level names ran{}). ",
            report.kernel.function,
            l.names.len(),
            l.import_error
                .as_ref()
                .map(|e| format!("; the plain import failed: {e}"))
                .unwrap_or_default()
        ),
        _ => String::new(),
    };
    loaded
        + &format!(
            "Triton {} (Python {}{}), {} jobs: {} compiled, {} from cache{}{}, {:.1} s. Bytes are metadata.shared per block; `ok` fits the device's per-block opt-in budget, `OVER +N` misses it by N bytes{}.",
            report.triton_version,
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
    verdicts: &'a [crate::model::verdict::DeviceVerdict],
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

/// What the gate and the exit code read from a finished run: the same for a run just made and a
/// report saved with `--json` and read back (`tilefit report`), so both exit alike.
pub trait Findings {
    /// Every verdict, flattened.
    fn judged(&self) -> Vec<Judged>;
    /// The config files that map to no device or could not be read.
    fn unmapped_files(&self) -> Vec<String> {
        Vec::new()
    }
    /// (jobs whose worker faulted or that an interrupt stopped, all jobs): the FAILED cells.
    fn failed_jobs(&self) -> (usize, usize);
    /// Where the shipped config misses a device: the spec's baseline (or, with `shipped`, the
    /// config an `--emit-configs` export gives the device's arch), and each config file's entries
    /// on the file's own device. Each is (subject, device, detail).
    fn shipped_misses(&self, _shipped: Option<&crate::fix::ConfigExport>) -> Vec<Miss> {
        Vec::new()
    }
    /// Where a device is left with no fitting entry: an autotune list none of whose configs fits,
    /// or a config file none of whose entries fits its own device. Each is (subject, device, detail).
    fn none_fits(&self) -> Vec<Miss> {
        Vec::new()
    }
    /// The kernel's source file and function, when the report is about one kernel (a probe).
    fn kernel_source(&self) -> Option<(String, String)> {
        None
    }
    /// What the report judged, for `--baseline` to refuse another kernel's report.
    fn subject(&self) -> crate::model::identity::Subject;
}

/// A saved report read back (`--baseline`), as the findings the gate compares.
impl From<crate::model::saved::SavedReport> for Box<dyn Findings> {
    fn from(saved: crate::model::saved::SavedReport) -> Box<dyn Findings> {
        match saved {
            crate::model::saved::SavedReport::Probe(report) => report,
            crate::model::saved::SavedReport::Replay(report) => report,
        }
    }
}

/// A finding of the `baseline` and `none-fits` rules: what, on which device, and the detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Miss {
    /// The config, file or list, as the report names it.
    pub subject: String,
    /// The device.
    pub device: String,
    /// Bytes over, or why.
    pub detail: String,
    /// For a config file's entry: the file's path and the entry's key (for an annotation on it).
    pub entry: Option<(String, String)>,
}

/// Whether a verdict means the config cannot run on the device (over a budget or a limit).
fn misses(verdict: VerdictCode) -> bool {
    matches!(
        verdict,
        VerdictCode::OverBudget | VerdictCode::OverThreadLimit
    )
}

impl ProbeReport {
    /// Per recommendation, the config shipped to that device: the export's choice for its arch and
    /// variant when given, else the spec's baseline; with its verdict there.
    fn shipped_on<'a>(
        &'a self,
        rec: &'a Recommendation,
        shipped: Option<&'a crate::fix::ConfigExport>,
    ) -> Option<(
        BTreeMap<String, Value>,
        Option<&'a crate::model::verdict::DeviceVerdict>,
    )> {
        let Some(export) = shipped else {
            let verdict = self
                .results
                .iter()
                .find(|r| r.arch == rec.arch && r.config == rec.baseline)
                .and_then(|r| r.verdicts.iter().find(|v| v.device == rec.device));
            return Some((rec.baseline.clone(), verdict));
        };
        let choice = export
            .by_arch
            .get(&rec.arch)?
            .iter()
            .find(|c| c.variant == rec.variant)?;
        let config = choice.config.clone()?;
        let verdict = self
            .results
            .iter()
            .find(|r| r.arch == rec.arch && config.iter().all(|(k, v)| r.config.get(k) == Some(v)))
            .and_then(|r| r.verdicts.iter().find(|v| v.device == rec.device));
        Some((config, verdict))
    }
}

impl Findings for ProbeReport {
    /// The config files that map to no device or could not be read, each with why: where an
    /// engine would fall back to its default configs.
    fn unmapped_files(&self) -> Vec<String> {
        let Some(listed) = &self.listed else {
            return Vec::new();
        };
        let unresolved = listed.files.iter().filter_map(|f| {
            f.unresolved
                .as_ref()
                .filter(|_| f.device.is_none())
                .map(|_| f.file.clone())
        });
        let unreadable = listed
            .file_problems
            .iter()
            .filter(|p| p.entry.is_none())
            .map(|p| {
                p.path.file_name().map_or_else(
                    || p.path.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                )
            });
        unresolved.chain(unreadable).collect()
    }

    fn failed_jobs(&self) -> (usize, usize) {
        let failed = self
            .results
            .iter()
            .filter(|r| r.status == CompileStatus::Failed)
            .count();
        (failed, self.results.len())
    }

    fn kernel_source(&self) -> Option<(String, String)> {
        Some((self.kernel.file.clone(), self.kernel.function.clone()))
    }

    fn subject(&self) -> crate::model::identity::Subject {
        crate::model::identity::Subject::of_probe(&self.kernel)
    }

    fn shipped_misses(&self, shipped: Option<&crate::fix::ConfigExport>) -> Vec<Miss> {
        let varying = varying_axes(self);
        let mut found = Vec::new();
        for rec in &self.recommendations {
            let Some((config, verdict)) = self.shipped_on(rec, shipped) else {
                continue;
            };
            if let Some(v) = verdict.filter(|v| misses(v.verdict)) {
                found.push(Miss {
                    entry: None,
                    subject: config_text(&config, &varying),
                    device: rec.device.clone(),
                    detail: v.over_by.map_or_else(
                        || v.verdict.as_str().to_owned(),
                        |b| format!("+{}", format_count(b)),
                    ),
                });
            }
        }
        if let Some(listed) = &self.listed {
            for file in &listed.files {
                let Some(device) = &file.device else { continue };
                for entry in file
                    .entries
                    .iter()
                    .filter(|e| e.verdict.is_some_and(misses))
                {
                    found.push(Miss {
                        entry: Some((file.path.clone(), entry.key.clone())),
                        subject: format!("{}: {}", file.file, entry.key),
                        device: device.clone(),
                        detail: entry
                            .over_by
                            .map_or_else(String::new, |b| format!("+{}", format_count(b))),
                    });
                }
            }
        }
        found
    }

    fn none_fits(&self) -> Vec<Miss> {
        let Some(listed) = &self.listed else {
            return Vec::new();
        };
        let mut found = Vec::new();
        if listed.kind == crate::input::spec::ListKind::Autotune {
            for fit in listed.per_device.iter().filter(|f| f.none_fits()) {
                let variant = fit
                    .variant
                    .iter()
                    .map(|(k, v)| {
                        format!(
                            "{k}={}",
                            v.as_str().map_or_else(|| v.to_string(), str::to_owned)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(" ");
                found.push(Miss {
                    entry: None,
                    subject: format!(
                        "the autotune list{}",
                        if variant.is_empty() {
                            String::new()
                        } else {
                            format!(" ({variant})")
                        }
                    ),
                    device: fit.device.clone(),
                    detail: format!("0 of {} fit", fit.total),
                });
            }
        }
        for file in &listed.files {
            let Some(device) = &file.device else { continue };
            if !file.entries.is_empty()
                && file.entries.iter().all(|e| e.verdict.is_some())
                && !file
                    .entries
                    .iter()
                    .any(|e| e.verdict == Some(VerdictCode::Fits))
            {
                found.push(Miss {
                    entry: Some((file.path.clone(), String::new())),
                    subject: file.file.clone(),
                    device: device.clone(),
                    detail: format!("0 of {} entries fit", file.entries.len()),
                });
            }
        }
        found
    }

    fn judged(&self) -> Vec<Judged> {
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

impl Findings for crate::model::replay::ReplayReport {
    fn subject(&self) -> crate::model::identity::Subject {
        crate::model::identity::Subject::of_replay(self)
    }

    fn failed_jobs(&self) -> (usize, usize) {
        let failed = self
            .results
            .iter()
            .filter(|r| r.status == CompileStatus::Failed)
            .count();
        (failed, self.results.len())
    }

    fn judged(&self) -> Vec<Judged> {
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
