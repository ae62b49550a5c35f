//! The cliff map: one self-contained HTML file (inline CSS and SVG, no scripts, no network) for a
//! probe or a replay. Per kernel, a heatmap of configs x devices colored by the share of each
//! device's per-block budget used (well under, near, over) with the bytes and the verdict written
//! in every cell and the overshoot in a tooltip; then, per arch, a bar chart of every config's
//! bytes against that arch's budget line. Recommendations, compile problems and the inputs
//! (tilefit and Triton versions, spec or cache, date) follow. Colors follow the reader's light or
//! dark scheme and print cleanly; every color is also said in words.

use std::fmt::Write as _;

use super::exporter::Exporter;
use super::layout::{config_rows, devices_by_arch};
use crate::device::TargetDevice;
use crate::judge::gate::NEAR_BUDGET_FRACTION;
use crate::model::naming::varying_axes;
use crate::model::probe::ProbeReport;
use crate::model::replay::ReplayReport;
use crate::model::verdict::{DeviceVerdict, VerdictCode};
use crate::units::format_count;
use crate::vocab::CompileStatus;

/// Self-contained HTML.
pub struct Html;

const STYLE: &str = r#"
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1f2328; --muted: #59636e; --grid: #d1d9e0;
  --ok: #dafbe1; --ok-ink: #116329; --near: #fff1c2; --near-ink: #7d4e00; --over: #ffd7d5; --over-ink: #a0111f;
  --na: #eff2f5; --na-ink: #59636e; --bar-ok: #2da44e; --bar-near: #bf8700; --bar-over: #cf222e; --line: #1f2328; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --grid: #3d444d;
    --ok: #04260f; --ok-ink: #56d364; --near: #3b2300; --near-ink: #e3b341; --over: #490202; --over-ink: #ff7b72;
    --na: #151b23; --na-ink: #9198a1; --bar-ok: #238636; --bar-near: #9e6a03; --bar-over: #da3633; --line: #e6edf3; }
}
@media print {
  :root { --bg: #ffffff; --fg: #000000; --muted: #333333; --line: #000000; }
  body { margin: 0; } section { break-inside: avoid; } .charts { display: block; }
}
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; background: var(--bg); color: var(--fg); margin: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; } h3 { font-size: 15px; margin: 18px 0 6px; }
.muted, figcaption { color: var(--muted); }
dl.inputs { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 8px 0 16px; }
dl.inputs dt { color: var(--muted); } dl.inputs dd { margin: 0; font-family: ui-monospace, monospace; word-break: break-all; }
.legend span { display: inline-block; padding: 1px 8px; margin-right: 8px; border-radius: 3px; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid var(--grid); padding: 3px 8px; vertical-align: top; }
th { text-align: left; font-weight: 600; }
table.map td.cell { text-align: right; white-space: nowrap; }
table.map td.cell small { display: block; font-size: 11px; }
.ok { background: var(--ok); color: var(--ok-ink); } .near { background: var(--near); color: var(--near-ink); }
.over { background: var(--over); color: var(--over-ink); font-weight: 600; } .na { background: var(--na); color: var(--na-ink); }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(640px, 1fr)); gap: 12px 24px; }
figure { margin: 0; overflow-x: auto; } svg text { fill: var(--fg); font: 11px system-ui, sans-serif; }
svg .bar-ok { fill: var(--bar-ok); } svg .bar-near { fill: var(--bar-near); } svg .bar-over { fill: var(--bar-over); }
svg .budget { stroke: var(--line); stroke-width: 1.5; stroke-dasharray: 5 3; }
ul.problems li { font-family: ui-monospace, monospace; font-size: 12px; }
"#;

/// One cell of a heatmap: a result judged against one device.
struct Cell<'a> {
    status: CompileStatus,
    bytes: Option<u64>,
    verdict: Option<&'a DeviceVerdict>,
    error: Option<&'a str>,
    /// Registers, spills and occupancy, when the binary was read.
    resources: Option<String>,
}

/// A compile result as a heatmap cell reads it: status, bytes, verdicts, error.
type ResultView<'a> = (
    CompileStatus,
    Option<u64>,
    &'a [DeviceVerdict],
    Option<&'a crate::compile::OutcomeError>,
    Option<&'a crate::resources::KernelResources>,
);

impl<'a> Cell<'a> {
    /// The cell of a result for one device; no result at all reads as FAILED.
    fn of(result: Option<ResultView<'a>>, device: &TargetDevice) -> Cell<'a> {
        let Some((status, bytes, verdicts, error, resources)) = result else {
            return Cell {
                status: CompileStatus::Failed,
                bytes: None,
                verdict: None,
                error: None,
                resources: None,
            };
        };
        Cell {
            status,
            bytes,
            verdict: verdicts.iter().find(|v| v.device == device.device),
            error: error.map(|e| e.message.as_str()),
            resources: super::sections::resources_cell(resources, verdicts, device),
        }
    }
}

/// A heatmap: labelled rows of cells, one cell per device (devices grouped by arch).
struct Grid<'a> {
    title: String,
    devices: Vec<&'a TargetDevice>,
    rows: Vec<(String, Vec<Cell<'a>>)>,
}

fn escape(text: &str) -> String {
    crate::escape::html(text)
}

#[expect(clippy::cast_precision_loss, reason = "byte counts are far below 2^52")]
fn fraction(bytes: u64, budget: u64) -> f64 {
    bytes as f64 / budget.max(1) as f64
}

/// CSS class, short word and tooltip of a cell. The word says what the color says.
fn describe(cell: &Cell<'_>, device: &TargetDevice) -> (&'static str, String, String) {
    let budget = device.smem_per_block_optin;
    match (cell.status, cell.bytes, cell.verdict) {
        (CompileStatus::Ok, Some(bytes), Some(v)) => {
            let share = fraction(bytes, budget);
            let mut tooltip = format!(
                "{} bytes of {}'s {} ({:.0}% of its per-block budget)",
                format_count(bytes),
                device.device,
                format_count(budget),
                share * 100.0
            );
            if let Some(resources) = &cell.resources {
                let _ = write!(tooltip, "; {resources}");
            }
            if v.verdict == VerdictCode::OverThreadLimit {
                let max = v.max_threads_per_block.unwrap_or(0);
                let threads = v.threads_per_block.unwrap_or(0);
                (
                    "over",
                    format!("THREADS {threads}>{max}"),
                    format!(
                        "{tooltip}: the block has {threads} threads (num_warps x the warp size), more than the {max} a block may have on the device (or its registers leave); lower num_warps"
                    ),
                )
            } else if v.verdict == VerdictCode::OverBudget {
                let over = v.over_by.unwrap_or(0);
                (
                    "over",
                    format!("OVER +{}", format_count(over)),
                    format!("{tooltip}: over by {} bytes", format_count(over)),
                )
            } else if share >= NEAR_BUDGET_FRACTION {
                ("near", format!("near, {:.0}%", share * 100.0), tooltip)
            } else {
                ("ok", format!("ok, {:.0}%", share * 100.0), tooltip)
            }
        }
        (CompileStatus::UnsupportedOnTarget, ..) => (
            "na",
            "unsupported".to_owned(),
            cell.error
                .unwrap_or("not supported on this arch")
                .to_owned(),
        ),
        (CompileStatus::CompileError, ..) => (
            "na",
            "compile error".to_owned(),
            cell.error.unwrap_or("did not compile").to_owned(),
        ),
        _ => (
            "na",
            "FAILED".to_owned(),
            cell.error
                .unwrap_or("the compile did not finish")
                .to_owned(),
        ),
    }
}

/// A table of text cells, first column as row headers.
fn plain_table(table: &super::layout::Table) -> String {
    let mut out = String::from("<table>\n<thead><tr>");
    for h in &table.header {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &table.rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let tag = if i == 0 { "th" } else { "td" };
            let _ = write!(out, "<{tag}>{}</{tag}>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
    out
}

fn heatmap(grid: &Grid<'_>) -> String {
    let mut out = String::from("<table class=\"map\">\n<thead><tr><th>config</th>");
    for device in &grid.devices {
        let _ = write!(
            out,
            "<th>{}<br><span class=\"muted\">{} &middot; {} B</span></th>",
            escape(&device.device),
            escape(&device.arch),
            format_count(device.smem_per_block_optin)
        );
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (label, cells) in &grid.rows {
        let _ = write!(out, "<tr><th>{}</th>", escape(label));
        for (cell, device) in cells.iter().zip(&grid.devices) {
            let (class, word, tooltip) = describe(cell, device);
            let bytes = cell.bytes.map(format_count).unwrap_or_default();
            let _ = write!(
                out,
                "<td class=\"cell {class}\" title=\"{}\">{bytes}<small>{}</small></td>",
                escape(&tooltip),
                escape(&word)
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
    out
}

/// Per arch: every row's bytes as a bar, the arch's budget as a dashed line.
fn budget_charts(grid: &Grid<'_>) -> String {
    let mut out = String::from("<div class=\"charts\">\n");
    let mut seen: Vec<&str> = Vec::new();
    for (column, device) in grid.devices.iter().enumerate() {
        if seen.contains(&device.arch.as_str()) {
            continue;
        }
        seen.push(&device.arch);
        let names: Vec<&str> = grid
            .devices
            .iter()
            .filter(|d| d.arch == device.arch)
            .map(|d| d.device.as_str())
            .collect();
        let budget = device.smem_per_block_optin;
        let largest = grid
            .rows
            .iter()
            .filter_map(|(_, cells)| cells[column].bytes)
            .max()
            .unwrap_or(0)
            .max(budget);
        // Room for the longest label at about 7 px a character (11 px sans-serif).
        let longest = grid
            .rows
            .iter()
            .map(|(label, _)| label.chars().count())
            .max()
            .unwrap_or(10);
        #[expect(clippy::cast_precision_loss, reason = "label lengths are small")]
        let label_width = 12.0 + 7.2 * longest as f64;
        let (chart_width, row_height, right_margin) = (300.0, 16.0, 110.0);
        #[expect(
            clippy::cast_precision_loss,
            reason = "row counts and byte counts are small"
        )]
        let height = row_height * grid.rows.len() as f64 + 34.0;
        let scale = |bytes: u64| fraction(bytes, largest) * chart_width;
        let mut svg = format!(
            "<svg role=\"img\" viewBox=\"0 0 {w} {height}\" width=\"{w}\" height=\"{height}\" aria-label=\"{arch}: shared memory per config against the {budget} byte budget\">\n",
            w = label_width + chart_width + right_margin,
            arch = escape(&device.arch),
            budget = format_count(budget)
        );
        for (i, (label, cells)) in grid.rows.iter().enumerate() {
            #[expect(clippy::cast_precision_loss, reason = "row counts are small")]
            let y = 20.0 + row_height * i as f64;
            let _ = write!(
                svg,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                label_width - 6.0,
                y + 11.0,
                escape(label)
            );
            let cell = &cells[column];
            let (class, word, tooltip) = describe(cell, device);
            if let Some(bytes) = cell.bytes {
                let _ = write!(
                    svg,
                    "<rect class=\"bar-{class}\" x=\"{label_width}\" y=\"{y}\" width=\"{:.1}\" height=\"{}\"><title>{}</title></rect><text x=\"{:.1}\" y=\"{}\">{}</text>",
                    scale(bytes).max(1.0),
                    row_height - 4.0,
                    escape(&tooltip),
                    label_width + scale(bytes) + 4.0,
                    y + 11.0,
                    escape(&word)
                );
            } else {
                let _ = write!(
                    svg,
                    "<text x=\"{}\" y=\"{}\">{}</text>",
                    label_width + 2.0,
                    y + 11.0,
                    escape(&word)
                );
            }
            svg.push('\n');
        }
        let x = label_width + scale(budget);
        let _ = write!(
            svg,
            "<line class=\"budget\" x1=\"{x:.1}\" y1=\"14\" x2=\"{x:.1}\" y2=\"{:.1}\"/><text x=\"{x:.1}\" y=\"11\" text-anchor=\"middle\">budget {}</text>\n</svg>",
            height - 10.0,
            format_count(budget)
        );
        let _ = writeln!(
            out,
            "<figure>{svg}<figcaption>{} ({}): bars are bytes per block, the dashed line is the per-block budget; red bars are over it, amber ones within {:.0}% of it.</figcaption></figure>",
            escape(&names.join(", ")),
            escape(&device.arch),
            (1.0 - NEAR_BUDGET_FRACTION) * 100.0
        );
    }
    out.push_str("</div>\n");
    out
}

fn page(title: &str, inputs: &[(&str, String)], body: &str) -> String {
    let mut out = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n<dl class=\"inputs\">\n",
        escape(title),
        escape(title)
    );
    for (name, value) in inputs {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", escape(name), escape(value));
    }
    out.push_str("</dl>\n<p class=\"legend\">Each cell: bytes of shared memory per block, and the verdict in words. <span class=\"ok\">ok: under 90% of the budget</span><span class=\"near\">near: 90-100%</span><span class=\"over\">OVER: Triton raises OutOfResources</span><span class=\"na\">unsupported / compile error / FAILED</span> Hover a cell for the share of the budget and the overshoot.</p>\n");
    out.push_str(body);
    out.push_str("</body>\n</html>\n");
    out
}

/// Today's date and time in UTC, for the inputs list.
fn generated_at() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = i64::try_from(seconds / 86_400).unwrap_or(0);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let of_day = seconds % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        of_day / 3600,
        of_day % 3600 / 60
    )
}

impl Exporter<ProbeReport> for Html {
    fn export(&self, report: &ProbeReport) -> String {
        let varying = varying_axes(report);
        let devices = devices_by_arch(&report.targets);
        let rows = config_rows(report, &varying)
            .into_iter()
            .map(|(label, in_row)| {
                let cells = devices
                    .iter()
                    .map(|device| {
                        let result = in_row.iter().find(|r| r.arch == device.arch);
                        Cell::of(
                            result.map(|r| {
                                (
                                    r.status,
                                    r.shared_bytes,
                                    r.verdicts.as_slice(),
                                    r.error.as_ref(),
                                    r.resources.as_ref(),
                                )
                            }),
                            device,
                        )
                    })
                    .collect();
                (label, cells)
            })
            .collect();
        let grid = Grid {
            title: report.kernel.function.clone(),
            devices,
            rows,
        };
        let mut body = format!("<section>\n<h2>{}</h2>\n", escape(&grid.title));
        let fixed = super::layout::fixed_settings(report, &varying);
        if !fixed.is_empty() {
            let _ = writeln!(body, "<p class=\"muted\">Every row: {}</p>", escape(&fixed));
        }
        body.push_str(&heatmap(&grid));
        body.push_str("<h3>Against each budget line</h3>\n");
        body.push_str(&budget_charts(&grid));
        if let Some(table) = super::sections::resources_table(report) {
            let _ = writeln!(
                body,
                "<h3>{}</h3>",
                escape(super::sections::RESOURCES_HEADING)
            );
            body.push_str(&plain_table(&table));
        }
        if let Some((heading, table)) = super::sections::listed_table(report) {
            let _ = writeln!(body, "<h3>{}</h3>", escape(&heading));
            body.push_str(&plain_table(&table));
        }
        let files = super::sections::file_lines(report);
        if !files.is_empty() {
            body.push_str(&list_section("Config files", &files));
        }
        body.push_str("</section>\n");
        body.push_str(&recommendations(report));
        body.push_str(&problem_list(&super::layout::problems(report)));
        let inputs = [
            ("tilefit", report.tool.version.clone()),
            (
                "Triton",
                format!(
                    "{} (Python {})",
                    report.triton_version, report.python_version
                ),
            ),
            ("spec", report.spec.clone()),
            (
                "kernel",
                format!(
                    "{} in {} (sha256 {})",
                    report.kernel.function, report.kernel.file, report.kernel.source_sha256
                ),
            ),
            (
                "jobs",
                format!(
                    "{} ({} compiled, {} from cache)",
                    report.stats.jobs, report.stats.compiled, report.stats.cached
                ),
            ),
            ("generated", generated_at()),
        ];
        page(
            &format!(
                "tilefit: {} shared memory per block",
                report.kernel.function
            ),
            &inputs,
            &body,
        )
    }
}

fn recommendations(report: &ProbeReport) -> String {
    if report.recommendations.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<section>\n<h2>Recommended config per device</h2>\n<p class=\"muted\">{}</p>\n",
        escape(&super::layout::rule_text(report))
    );
    for (variant, recommendations) in super::layout::recommendations_by_variant(report) {
        if !variant.is_empty() {
            let _ = writeln!(out, "<h3>{}</h3>", escape(&variant));
        }
        let table = super::layout::recommendation_table(report, &recommendations);
        out.push_str("<table>\n<tr>");
        for header in &table.header {
            let _ = write!(out, "<th>{}</th>", escape(header));
        }
        out.push_str("</tr>\n");
        for (row, r) in table.rows.iter().zip(&recommendations) {
            let class = if r.needs_change {
                " class=\"over\""
            } else {
                ""
            };
            let _ = write!(out, "<tr{class}>");
            for cell in row {
                let _ = write!(out, "<td>{}</td>", escape(cell));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
    }
    out.push_str("</section>\n");
    out
}

fn problem_list(lines: &[String]) -> String {
    if lines.is_empty() {
        return String::new();
    }
    list_section("Did not compile, or failed", lines)
}

fn list_section(title: &str, lines: &[String]) -> String {
    let mut out = format!(
        "<section>\n<h2>{}</h2>\n<ul class=\"problems\">\n",
        escape(title)
    );
    for line in lines {
        let _ = writeln!(out, "<li>{}</li>", escape(line));
    }
    out.push_str("</ul>\n</section>\n");
    out
}

/// The heatmap of one kernel name's variants in a replay.
fn replay_grid<'a>(report: &'a ReplayReport, name: &str, devices: &[&'a TargetDevice]) -> Grid<'a> {
    let rows = report
        .kernels
        .iter()
        .enumerate()
        .filter(|(_, k)| k.name == name)
        .map(|(index, kernel)| {
            let options: Vec<String> = kernel
                .options
                .iter()
                .filter(|(k, _)| k.as_str() == "num_warps" || k.as_str() == "num_stages")
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let label = format!(
                "#{} {}: {} {} B",
                kernel.id,
                options.join(" "),
                kernel.original_arch,
                kernel
                    .original_shared_bytes
                    .map(format_count)
                    .unwrap_or_default()
            );
            let cells = devices
                .iter()
                .map(|device| {
                    let result = report
                        .results
                        .iter()
                        .find(|r| r.kernel.index == index && r.arch == device.arch);
                    Cell::of(
                        result.map(|r| {
                            (
                                r.status,
                                r.shared_bytes,
                                r.verdicts.as_slice(),
                                r.error.as_ref(),
                                r.resources.as_ref(),
                            )
                        }),
                        device,
                    )
                })
                .collect();
            (label, cells)
        })
        .collect();
    Grid {
        title: name.to_owned(),
        devices: devices.to_vec(),
        rows,
    }
}

impl Exporter<ReplayReport> for Html {
    fn export(&self, report: &ReplayReport) -> String {
        let devices = devices_by_arch(&report.targets);
        let mut names: Vec<&str> = Vec::new();
        for kernel in &report.kernels {
            if !names.contains(&kernel.name.as_str()) {
                names.push(&kernel.name);
            }
        }
        let mut body = String::new();
        for name in names {
            let grid = replay_grid(report, name, &devices);
            let source = report
                .kernels
                .iter()
                .find(|k| k.name == name)
                .and_then(|k| k.source.clone())
                .unwrap_or_default();
            let _ = writeln!(
                body,
                "<section>\n<h2>{} <span class=\"muted\">{}</span></h2>\n<p class=\"muted\">Rows: kernel variants (id, options, the arch and bytes the workload compiled them for).</p>",
                escape(&grid.title),
                escape(&source)
            );
            body.push_str(&heatmap(&grid));
            body.push_str("<h3>Against each budget line</h3>\n");
            body.push_str(&budget_charts(&grid));
            body.push_str("</section>\n");
        }
        body.push_str(&problem_list(&super::replay::problems(report)));
        let skipped: Vec<String> = report
            .skipped
            .iter()
            .map(|s| format!("{}: {}", s.path.display(), s.reason))
            .collect();
        if !skipped.is_empty() {
            body.push_str(&list_section("Skipped cache entries", &skipped));
        }
        let versions = report
            .versions
            .iter()
            .map(|g| {
                format!(
                    "{} produced by {}, replayed by {}",
                    g.kernels,
                    g.produced_by.as_deref().unwrap_or("?"),
                    g.replayed_with
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        let inputs = [
            ("tilefit", report.tool.version.clone()),
            ("Triton", versions),
            ("caches", report.caches.join(", ")),
            (
                "entries",
                format!(
                    "{} scanned, {} kernel variants, {} skipped",
                    report.stats.entries_scanned, report.stats.kernels, report.stats.skipped
                ),
            ),
            ("generated", generated_at()),
        ];
        page("tilefit replay: shared memory per block", &inputs, &body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_escaped() {
        assert_eq!(
            escape("<a href=\"x\">&</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;"
        );
    }

    #[test]
    fn the_date_is_a_date() {
        let date = generated_at();
        assert_eq!(date.len(), "2026-11-30 02:10 UTC".len(), "{date}");
        assert!(date.starts_with("20"), "{date}");
    }
}
