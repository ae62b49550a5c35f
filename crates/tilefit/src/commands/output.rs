//! What `probe` and `replay` share on the way out: the progress bar on stderr, writing the report
//! in the requested formats, and the exit code from the gate and the worker faults.

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tilefit_core::probe::ProbeEvent;
use tilefit_core::report::{Exporter, Json, Markdown, Terminal};

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
    pub fn event(&self, event: ProbeEvent) {
        match event {
            ProbeEvent::Planned { to_compile, .. } if to_compile > 0 => {
                self.bar.set_draw_target(ProgressDrawTarget::stderr());
                self.bar.set_position(0);
                self.bar.set_length(to_compile as u64);
                self.bar.set_style(
                    ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {wide_msg}")
                        .expect("a literal template")
                        .progress_chars("=> "),
                );
            }
            ProbeEvent::Planned { .. } => {}
            ProbeEvent::Compiled { done, label, .. } => {
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

/// Write the report: JSON to a file or to stdout (`-`, then stdout carries only JSON), and the
/// terminal table or Markdown to stdout.
pub fn emit<R>(report: &R, json: Option<&str>, markdown: bool) -> anyhow::Result<()>
where
    Json: Exporter<R>,
    Terminal: Exporter<R>,
    Markdown: Exporter<R>,
{
    match json {
        Some("-") => output::print(&Json.export(report))?,
        Some(path) => std::fs::write(path, Json.export(report))
            .with_context(|| format!("writing `{path}`"))?,
        None => {}
    }
    if json != Some("-") {
        let text = if markdown {
            Markdown.export(report)
        } else {
            Terminal.export(report)
        };
        output::print(&text)?;
    }
    Ok(())
}

/// The exit code of a run: worker faults make it a tool failure (the report is still printed),
/// else the gate decides.
pub fn exit_code(failed: usize, total: usize, gate_failed: bool) -> u8 {
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
