//! What `probe` and `replay` share on the way out: the progress bar on stderr, writing the report
//! in the requested formats, and the exit code from the gate and the worker faults.

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tilefit_core::compile::Event;
use tilefit_core::model::verdict::VerdictCode;
use tilefit_core::render::{Exporter, Findings, Html, Json, Markdown, Terminal};
use tilefit_core::units::format_count;

use crate::cli::{FailOn, OutputArgs, OutputFormat};
use crate::failure::hinted;
use std::path::Path;
use tilefit_core::fix::ConfigExport;

use crate::exit_codes;
use crate::output;

/// A progress bar on stderr, drawn only when there is something to compile and stderr is a
/// terminal (indicatif hides itself otherwise).
pub struct Progress {
    bar: ProgressBar,
    /// Without a terminal (CI logs): when the last plain progress line was written.
    last_line: std::cell::Cell<Option<std::time::Instant>>,
}

/// Without a terminal, one progress line this often instead of a bar (or silence).
const PLAIN_PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

impl Progress {
    pub fn new() -> Progress {
        Progress {
            bar: ProgressBar::hidden(),
            last_line: std::cell::Cell::new(None),
        }
    }

    /// Feed one event from the library.
    pub fn event(&self, event: Event) {
        use std::io::IsTerminal as _;
        if !std::io::stderr().is_terminal() {
            if let Event::Compiled { done, total, .. } = event {
                let due = self
                    .last_line
                    .get()
                    .is_none_or(|t| t.elapsed() >= PLAIN_PROGRESS_EVERY);
                if due || done == total {
                    self.last_line.set(Some(std::time::Instant::now()));
                    crate::output::note(&format!("tilefit: {done}/{total} compiled"));
                }
            } else if let Event::Planned { .. } = event {
                self.last_line.set(Some(std::time::Instant::now()));
            }
            return;
        }
        match event {
            Event::Planned { to_compile, .. } if to_compile > 0 => {
                self.bar.set_draw_target(ProgressDrawTarget::stderr());
                self.bar.set_position(0);
                self.bar.set_length(to_compile as u64);
                self.bar.set_style(
                    ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {wide_msg}")
                        .expect("a literal template")
                        .progress_chars("=> "),
                );
            }
            Event::Planned { .. } => {}
            Event::Compiled { done, label, .. } => {
                self.bar.set_position(done as u64);
                self.bar.set_message(label);
            }
        }
    }

    /// Clear the bar before the report prints.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// A cancellation flag raised by SIGINT or SIGTERM: the run stops, reaps its workers and prints
/// what finished, marked incomplete. A second SIGINT ends the process at once.
pub fn cancel_on_signals() -> tilefit_core::cancel::Cancel {
    let cancel = tilefit_core::cancel::Cancel::new();
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Registration only fails for forbidden signals; these two are allowed everywhere.
        let _ = signal_hook::flag::register_conditional_shutdown(signal, 130, cancel.flag());
        let _ = signal_hook::flag::register(signal, cancel.flag());
    }
    cancel
}

/// Write the report: JSON to a file or to stdout (`-`, then stdout carries only JSON), HTML to a
/// file, and the terminal table or Markdown to stdout.
pub fn emit<R>(report: &R, args: &OutputArgs) -> anyhow::Result<()>
where
    Json: Exporter<R>,
    Terminal: Exporter<R>,
    Markdown: Exporter<R>,
    Html: Exporter<R>,
{
    emit_with(report, args, Some(&|| Html.export(report)))
}

/// [`emit`] for a report that has no HTML cliff map (a version matrix: `--html` is refused
/// before the run).
pub fn emit_without_html<R>(report: &R, args: &OutputArgs) -> anyhow::Result<()>
where
    Json: Exporter<R>,
    Terminal: Exporter<R>,
    Markdown: Exporter<R>,
{
    emit_with(report, args, None)
}

fn emit_with<R>(
    report: &R,
    args: &OutputArgs,
    html: Option<&dyn Fn() -> String>,
) -> anyhow::Result<()>
where
    Json: Exporter<R>,
    Terminal: Exporter<R>,
    Markdown: Exporter<R>,
{
    let json = args.json.as_deref();
    match json {
        Some("-") => output::print(&Json.export(report))?,
        Some(path) => std::fs::write(path, Json.export(report))
            .with_context(|| format!("writing `{path}`"))?,
        None => {}
    }
    if let (Some(path), Some(html)) = (&args.html, html) {
        std::fs::write(path, html()).with_context(|| format!("writing `{}`", path.display()))?;
        crate::output::note(&format!(
            "tilefit: wrote the cliff map to {}",
            path.display()
        ));
    }
    if json != Some("-") {
        let text = if args.format() == OutputFormat::Markdown {
            Markdown.export(report)
        } else {
            Terminal.export(report)
        };
        output::print(&text)?;
    }
    if args.summary {
        let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY") else {
            return Err(hinted(
                "`--summary` appends to `$GITHUB_STEP_SUMMARY`, which is not set",
                "use it in a GitHub Actions step, or set GITHUB_STEP_SUMMARY to a file",
            ));
        };
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("opening `{}`", Path::new(&path).display()))?;
        std::io::Write::write_all(
            &mut file,
            format!("{}\n", Markdown.export(report)).as_bytes(),
        )
        .with_context(|| format!("writing `{}`", Path::new(&path).display()))?;
    }
    Ok(())
}

/// Write the recommended config per arch (`--emit-configs`).
pub fn emit_configs(
    report: &tilefit_core::model::probe::ProbeReport,
    path: &std::path::Path,
) -> anyhow::Result<()> {
    let table = tilefit_core::device::DeviceTable::builtin()
        .context("loading the embedded device table")?;
    let export = tilefit_core::fix::ConfigExport::from_probe(report, table);
    let python = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("py"));
    let (text, what) = if python {
        let text = export.python().ok_or_else(|| {
            crate::failure::hinted(
                format!(
                    "`{}` asks for Python, which only an autotuned kernel's pruned configs are written as",
                    path.display()
                ),
                "write the recommended configs as JSON: `--emit-configs configs.json`",
            )
        })?;
        (text, "the autotune configs that fit, per arch, as Python")
    } else if export.autotune.is_some() {
        (
            serde_json::to_string_pretty(&export)? + "\n",
            "the recommended configs and the pruned autotune lists per arch and device",
        )
    } else {
        (
            serde_json::to_string_pretty(&export)? + "\n",
            "the recommended configs per arch",
        )
    };
    std::fs::write(path, text).with_context(|| format!("writing `{}`", path.display()))?;
    crate::output::note(&format!("tilefit: wrote {what} to {}", path.display()));
    Ok(())
}

/// One finding of a rule: a stable key (rule, subject, device: what `--baseline` compares) and the
/// words the gate line uses.
struct Finding {
    key: (String, String, String),
    text: String,
    /// A config file's entry it is about: (path, key).
    entry: Option<(String, String)>,
}

/// What one rule finds in a report.
fn findings_of(
    rule: FailOn,
    report: &dyn Findings,
    shipped: Option<&ConfigExport>,
) -> Vec<Finding> {
    let name = rule.name();
    let finding = |subject: &str, device: &str, text: String| Finding {
        key: (name.clone(), subject.to_owned(), device.to_owned()),
        text,
        entry: None,
    };
    let mut found: Vec<Finding> = Vec::new();
    match rule {
        FailOn::UnmappedFiles => {
            for file in report.unmapped_files() {
                found.push(finding(&file, "", file.clone()));
            }
        }
        FailOn::Baseline => {
            for miss in report.shipped_misses(shipped) {
                let text = format!("{} on {} {}", miss.subject, miss.device, miss.detail);
                found.push(Finding {
                    entry: miss.entry.clone(),
                    ..finding(&miss.subject, &miss.device, text.trim_end().to_owned())
                });
            }
        }
        FailOn::NoneFits => {
            for miss in report.none_fits() {
                let text = format!("{} on {} ({})", miss.subject, miss.device, miss.detail);
                found.push(Finding {
                    entry: miss.entry.clone(),
                    ..finding(&miss.subject, &miss.device, text)
                });
            }
        }
        _ => {}
    }
    for j in report.judged() {
        let text = match rule {
            FailOn::OverBudget if j.verdict == VerdictCode::OverBudget => Some(format!(
                "{} on {} +{}",
                j.subject,
                j.device,
                format_count(j.over_by.unwrap_or(0))
            )),
            FailOn::CompileError
                if matches!(
                    j.verdict,
                    VerdictCode::CompileError | VerdictCode::UnsupportedOnTarget
                ) =>
            {
                Some(format!("{} on {} ({})", j.subject, j.device, j.arch))
            }
            FailOn::OverThreadLimit if j.verdict == VerdictCode::OverThreadLimit => Some(format!(
                "{} on {} (max {} threads)",
                j.subject,
                j.device,
                j.max_threads_per_block.unwrap_or(0)
            )),
            FailOn::Spills => j.spill_bytes.filter(|b| *b > 0).map(|bytes| {
                format!(
                    "{} on {} ({} bytes)",
                    j.subject,
                    j.arch,
                    format_count(bytes)
                )
            }),
            FailOn::NearBudget(share) if j.verdict == VerdictCode::Fits => j
                .shared_bytes
                .filter(|bytes| {
                    #[expect(
                        clippy::cast_precision_loss,
                        reason = "byte counts are far below 2^52"
                    )]
                    let used = *bytes as f64 / j.budget.max(1) as f64;
                    used >= share
                })
                .map(|bytes| {
                    format!(
                        "{} on {} ({} of {} bytes)",
                        j.subject,
                        j.device,
                        format_count(bytes),
                        format_count(j.budget)
                    )
                }),
            _ => None,
        };
        if let Some(text) = text {
            // Spills are per arch; every other rule per device.
            let device = if rule == FailOn::Spills {
                &j.arch
            } else {
                &j.device
            };
            found.push(finding(&j.subject, device, text));
        }
    }
    let mut seen = std::collections::HashSet::new();
    found.retain(|f| seen.insert(f.key.clone()));
    found
}

/// What the gate compares and against what.
pub struct Gate<'a> {
    /// The rules.
    pub fail_on: &'a [FailOn],
    /// The configs shipped per arch (`--shipped`, an `--emit-configs` export), for `baseline`.
    pub shipped: Option<ConfigExport>,
    /// A report saved before (`--baseline OLD.json`): only findings it does not have fail.
    pub old: Option<Box<dyn Findings>>,
}

impl<'a> Gate<'a> {
    /// The gate of `--fail-on`, `--shipped` and `--baseline`, with the files read.
    pub fn from_args(args: &'a OutputArgs) -> anyhow::Result<Gate<'a>> {
        let shipped = match &args.shipped {
            None => None,
            Some(path) => {
                let json = untrusted_json(
                    path,
                    "pass a file written by `tilefit probe --emit-configs FILE.json`",
                )?;
                Some(serde_json::from_value(json).map_err(|e| {
                    hinted(
                        format!("`{}` is not a tilefit config export: {e}", path.display()),
                        "pass a file written by `tilefit probe --emit-configs FILE.json`",
                    )
                })?)
            }
        };
        let old = match &args.baseline {
            None => None,
            Some(path) => Some(read_report(path)?.into()),
        };
        Ok(Gate {
            fail_on: &args.fail_on,
            shipped,
            old,
        })
    }
}

pub use tilefit_core::model::saved::SavedReport;

/// A JSON file from elsewhere (a shard, a matrix, an export), parsed and its strings checked; a
/// bad one is bad input naming the file and the field, with `hint`.
pub fn untrusted_json(path: &Path, hint: &str) -> anyhow::Result<serde_json::Value> {
    use tilefit_core::input::untrusted::{UntrustedError, read_json};
    read_json(path).map_err(|e| match e {
        UntrustedError::Io { .. } => anyhow::Error::new(e),
        _ => hinted(e.to_string(), e.field_hint().unwrap_or(hint)),
    })
}

/// Read a saved probe or replay report (the library's typed reader); a file that is not one is
/// bad input naming the file, with the reader's hint.
pub fn read_report(path: &Path) -> anyhow::Result<SavedReport> {
    SavedReport::read(path).map_err(|e| hinted(e.to_string(), e.hint()))
}

/// The findings of `rules` that `--baseline` does not already have, with their rule.
fn new_findings(
    gate: &Gate<'_>,
    rules: &[FailOn],
    report: &dyn Findings,
) -> (Vec<(FailOn, Vec<Finding>)>, usize) {
    let mut known = 0;
    let mut out = Vec::new();
    for &rule in rules {
        let mut findings = findings_of(rule, report, gate.shipped.as_ref());
        if let Some(old) = &gate.old {
            let before: std::collections::HashSet<(String, String, String)> =
                findings_of(rule, old.as_ref(), gate.shipped.as_ref())
                    .into_iter()
                    .map(|f| f.key)
                    .collect();
            let all = findings.len();
            findings.retain(|f| !before.contains(&f.key));
            known += all - findings.len();
        }
        out.push((rule, findings));
    }
    (out, known)
}

/// The gate: the findings `--fail-on` asks about (less those `--baseline` already had), worded on
/// one stderr line. Returns whether the gate failed.
pub fn gate(gate: &Gate<'_>, report: &dyn Findings) -> bool {
    let mut parts: Vec<String> = Vec::new();
    let mut total = 0;
    let (by_rule, known) = new_findings(gate, gate.fail_on, report);
    for (rule, findings) in by_rule {
        if findings.is_empty() {
            continue;
        }
        total += findings.len();
        let what = match rule {
            FailOn::OverBudget => "over budget".to_owned(),
            FailOn::CompileError => "do not compile".to_owned(),
            FailOn::OverThreadLimit => "need more threads than their registers allow".to_owned(),
            FailOn::Spills => "spill registers to local memory".to_owned(),
            FailOn::UnmappedFiles => "config files map to no device".to_owned(),
            FailOn::Baseline => "shipped configs miss a device".to_owned(),
            FailOn::NoneFits => "lists leave a device with no config that fits".to_owned(),
            FailOn::NearBudget(share) => {
                format!("fit but use {:.0}% or more of the budget", share * 100.0)
            }
        };
        let examples: Vec<&str> = findings.iter().take(3).map(|f| f.text.as_str()).collect();
        let more = if findings.len() > examples.len() {
            ", ..."
        } else {
            ""
        };
        parts.push(format!(
            "{} {what}: {}{more}",
            findings.len(),
            examples.join(", ")
        ));
    }
    if known > 0 {
        crate::output::note(&format!(
            "tilefit: {known} findings are in the baseline report and do not fail the gate"
        ));
    }
    if parts.is_empty() {
        return false;
    }
    crate::output::note(&format!(
        "tilefit: gate failed ({total} findings): {}",
        parts.join("; ")
    ));
    true
}

/// The one exit-code policy of probe, replay and report: FAILED cells (worker faults, an
/// interrupt) are exit 2 whatever the gate says, then the gate's findings exit 1. A saved report
/// read back exits as the run that wrote it did.
pub fn finish(report: &dyn Findings, args: &OutputArgs) -> anyhow::Result<u8> {
    let rules = Gate::from_args(args)?;
    if let (Some(old), Some(path)) = (&rules.old, &args.baseline) {
        same_subject(&old.subject(), &report.subject()).map_err(|what| {
            hinted(
                format!(
                    "`--baseline {}` is not a report of what this run judged: {what}",
                    path.display()
                ),
                "pass the report a run of the same spec (or the same caches) saved with `--json`",
            )
        })?;
    }
    if args.format() == OutputFormat::Github {
        annotate(&rules, report)?;
    }
    let gate_failed = gate(&rules, report);
    let (failed, total) = report.failed_jobs();
    Ok(exit_code(failed, total, gate_failed))
}

/// Whether two reports are about the same thing (`--baseline`, `diff`): an edited kernel is a
/// note on stderr; another subject is `Err` with what differs.
pub fn same_subject(
    old: &tilefit_core::model::identity::Subject,
    new: &tilefit_core::model::identity::Subject,
) -> Result<(), String> {
    use tilefit_core::model::identity::Comparison;
    match old.compare(new) {
        Comparison::Same => Ok(()),
        Comparison::Edited(note) => {
            crate::output::note(&format!("tilefit: note: {note}"));
            Ok(())
        }
        Comparison::Different(what) => Err(what),
    }
}

fn exit_code(failed: usize, total: usize, gate_failed: bool) -> u8 {
    if failed > 0 {
        crate::output::note(&format!(
            "tilefit: {failed} of {total} jobs failed (worker faults); their cells say FAILED"
        ));
        return exit_codes::BAD_INPUT_OR_TOOL_FAILURE;
    }
    if gate_failed {
        exit_codes::GATE_FAILED
    } else {
        exit_codes::OK
    }
}

/// At most this many annotations per run; the rest are counted.
const MAX_ANNOTATIONS: usize = 10;

use tilefit_core::escape::{workflow_data as escape_data, workflow_property as escape_property};

/// A path as the repository names it: relative to `GITHUB_WORKSPACE`, else to the working folder.
fn repository_relative(path: &str) -> String {
    let path = Path::new(path);
    let roots = [
        std::env::var_os("GITHUB_WORKSPACE").map(std::path::PathBuf::from),
        std::env::current_dir().ok(),
    ];
    for root in roots.into_iter().flatten() {
        if let Ok(relative) = path.strip_prefix(&root) {
            return relative.display().to_string();
        }
    }
    path.display().to_string()
}

/// The 1-based line in `path` of a config file's entry (`"256": {`), or of the decorator above
/// `def function(` (`@triton.autotune` when `autotune`, else `@triton.jit`).
fn line_of(path: &str, entry: Option<&str>, function: Option<(&str, bool)>) -> Option<usize> {
    let text = std::fs::read_to_string(path).ok()?;
    let lines: Vec<&str> = text.lines().collect();
    if let Some(key) = entry.filter(|k| !k.is_empty()) {
        let quoted = format!("\"{key}\"");
        return lines
            .iter()
            .position(|l| l.trim_start().starts_with(&quoted))
            .map(|i| i + 1);
    }
    let (function, autotune) = function?;
    let def = lines.iter().position(|l| {
        l.trim_start()
            .strip_prefix("def ")
            .is_some_and(|rest| rest.trim_start().starts_with(&format!("{function}(")))
    })?;
    let wanted = if autotune { "autotune" } else { "jit" };
    (0..def)
        .rev()
        .take_while(|&i| !lines[i].trim_start().starts_with("def "))
        .find(|&i| lines[i].trim_start().starts_with('@') && lines[i].contains(wanted))
        .or(Some(def))
        .map(|i| i + 1)
}

/// `::error file=...,line=...,title=...::message` for the findings reviewers must see: the rules of
/// `--fail-on`, or without it the ones that crash engines (`baseline`, `none-fits`,
/// `unmapped-files`). At most [`MAX_ANNOTATIONS`], then a count of the rest.
fn annotate(gate: &Gate<'_>, report: &dyn Findings) -> anyhow::Result<()> {
    let default = [FailOn::Baseline, FailOn::NoneFits, FailOn::UnmappedFiles];
    let rules: &[FailOn] = if gate.fail_on.is_empty() {
        &default
    } else {
        gate.fail_on
    };
    let kernel = report.kernel_source();
    let (by_rule, _) = new_findings(gate, rules, report);
    let mut lines = Vec::new();
    let mut rest = 0;
    for (rule, findings) in &by_rule {
        for finding in findings {
            if lines.len() == MAX_ANNOTATIONS {
                rest += 1;
                continue;
            }
            let (file, line) = match (&finding.entry, &kernel) {
                (Some((path, key)), _) => (Some(path.clone()), line_of(path, Some(key), None)),
                (None, Some((path, function))) => {
                    let autotune = *rule == FailOn::NoneFits;
                    (
                        Some(path.clone()),
                        line_of(path, None, Some((function, autotune))),
                    )
                }
                (None, None) => (None, None),
            };
            let mut properties = Vec::new();
            if let Some(file) = file {
                properties.push(format!(
                    "file={}",
                    escape_property(&repository_relative(&file))
                ));
            }
            if let Some(line) = line {
                properties.push(format!("line={line}"));
            }
            properties.push(format!(
                "title={}",
                escape_property(&format!("tilefit {}", rule.name()))
            ));
            lines.push(format!(
                "::error {}::{}",
                properties.join(","),
                escape_data(&finding.text)
            ));
        }
    }
    if rest > 0 {
        lines.push(format!("::warning title=tilefit::{rest} more findings are not annotated (at most {MAX_ANNOTATIONS} per run)"));
    }
    if !lines.is_empty() {
        output::print_raw(&(lines.join("\n") + "\n"))?;
    }
    Ok(())
}
