//! What `probe` and `replay` share on the way out: the progress bar on stderr, writing the report
//! in the requested formats, and the exit code from the gate and the worker faults.

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tilefit_core::compile::Event;
use tilefit_core::model::verdict::VerdictCode;
use tilefit_core::render::{Exporter, Findings, Html, Json, Judged, Markdown, Terminal};
use tilefit_core::units::format_count;

use crate::cli::{FailOn, OutputArgs};

use crate::exit_codes;
use crate::output;

/// A progress bar on stderr, drawn only when there is something to compile and stderr is a
/// terminal (indicatif hides itself otherwise).
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    pub fn new() -> Progress {
        Progress {
            bar: ProgressBar::hidden(),
        }
    }

    /// Feed one event from the library.
    pub fn event(&self, event: Event) {
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
    let json = args.json.as_deref();
    match json {
        Some("-") => output::print(&Json.export(report))?,
        Some(path) => std::fs::write(path, Json.export(report))
            .with_context(|| format!("writing `{path}`"))?,
        None => {}
    }
    if let Some(path) = &args.html {
        std::fs::write(path, Html.export(report))
            .with_context(|| format!("writing `{}`", path.display()))?;
        eprintln!("tilefit: wrote the cliff map to {}", path.display());
    }
    if json != Some("-") {
        let text = if args.markdown {
            Markdown.export(report)
        } else {
            Terminal.export(report)
        };
        output::print(&text)?;
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
    eprintln!("tilefit: wrote {what} to {}", path.display());
    Ok(())
}

/// The gate: the findings `--fail-on` asks about, worded on one stderr line. `unmapped` names the
/// config files that map to no device. Returns whether the gate failed.
pub fn gate(fail_on: &[FailOn], judged: &[Judged], unmapped: &[String]) -> bool {
    let mut parts: Vec<String> = Vec::new();
    let mut total = 0;
    for rule in fail_on {
        let mut findings: Vec<String> = Vec::new();
        if *rule == FailOn::UnmappedFiles {
            findings.extend(unmapped.iter().cloned());
        }
        for j in judged {
            let finding = match rule {
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
                FailOn::OverThreadLimit if j.verdict == VerdictCode::OverThreadLimit => {
                    Some(format!(
                        "{} on {} (max {} threads)",
                        j.subject,
                        j.device,
                        j.max_threads_per_block.unwrap_or(0)
                    ))
                }
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
                        used >= *share
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
            if let Some(finding) = finding
                && !findings.contains(&finding)
            {
                findings.push(finding);
            }
        }
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
            FailOn::NearBudget(share) => {
                format!("fit but use {:.0}% or more of the budget", share * 100.0)
            }
        };
        let examples: Vec<&str> = findings.iter().take(3).map(String::as_str).collect();
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
    if parts.is_empty() {
        return false;
    }
    eprintln!(
        "tilefit: gate failed ({total} findings): {}",
        parts.join("; ")
    );
    true
}

/// The exit code of a run: worker faults make it a tool failure (the report is still printed),
/// else the gate decides.
/// The one exit-code policy of probe, replay and report: FAILED cells (worker faults, an
/// interrupt) are exit 2 whatever the gate says, then the gate's findings exit 1. A saved report
/// read back exits as the run that wrote it did.
pub fn finish(report: &impl Findings, fail_on: &[FailOn]) -> u8 {
    let gate_failed = gate(fail_on, &report.judged(), &report.unmapped_files());
    let (failed, total) = report.failed_jobs();
    exit_code(failed, total, gate_failed)
}

fn exit_code(failed: usize, total: usize, gate_failed: bool) -> u8 {
    if failed > 0 {
        eprintln!(
            "tilefit: {failed} of {total} jobs failed (worker faults); their cells say FAILED"
        );
        return exit_codes::BAD_INPUT_OR_TOOL_FAILURE;
    }
    if gate_failed {
        exit_codes::GATE_FAILED
    } else {
        exit_codes::OK
    }
}
