//! Progress on stderr while a run compiles: a bar on a terminal, a plain line every few seconds
//! in a CI log; notes printed above the bar; SIGINT/SIGTERM wired to the run's cancel flag.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tilefit_core::compile::Event;

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

    /// [`Progress::event`], with a note when a plan has jobs to compile: how many, with which
    /// Triton, on how many workers.
    pub fn event_noting_plans(&self, event: Event, triton: &str, workers: usize) {
        if let Event::Planned {
            jobs,
            cached,
            to_compile,
        } = &event
            && *to_compile > 0
        {
            self.note(&format!(
                "tilefit: {jobs} jobs ({cached} cached); compiling {to_compile} with Triton {triton} on {workers} workers"
            ));
        }
        self.event(event);
    }

    /// Clear the bar before the report prints.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// A note on stderr, above the bar.
    pub fn note(&self, line: &str) {
        self.bar.suspend(|| crate::output::note(line));
    }
}

/// A captured script's output, echoed live on stderr with its target as a prefix, bounded: after
/// [`ScriptEcho::MAX_LINES`] lines of one target the rest is counted, not shown (the report keeps
/// the tail).
pub struct ScriptEcho<'a> {
    progress: &'a Progress,
    shown: std::collections::HashMap<String, u64>,
}

impl<'a> ScriptEcho<'a> {
    /// Lines shown per target.
    pub const MAX_LINES: u64 = 2000;

    pub fn new(progress: &'a Progress) -> ScriptEcho<'a> {
        ScriptEcho {
            progress,
            shown: std::collections::HashMap::new(),
        }
    }

    pub fn line(&mut self, target: &str, line: &str) {
        let shown = self.shown.entry(target.to_owned()).or_default();
        *shown += 1;
        if *shown <= Self::MAX_LINES {
            let text = tilefit_core::escape::log_text(line);
            self.progress.note(&format!("[{target}] {text}"));
        } else if *shown == Self::MAX_LINES + 1 {
            self.progress.note(&format!(
                "[{target}] ... more output not shown (the report keeps its last lines)"
            ));
        }
    }
}

/// A cancellation flag raised by SIGINT, SIGTERM or SIGHUP (the terminal closed): the run stops,
/// ends its scripts' processes and its workers, and prints what finished, marked incomplete. A
/// second signal ends every script's processes with SIGKILL, no grace, and exits at once (130).
pub fn cancel_on_signals() -> tilefit_core::cancel::Cancel {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let cancel = tilefit_core::cancel::Cancel::new();
    // Registration only fails for forbidden signals; these three are allowed everywhere.
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return cancel;
    };
    let raised = cancel.clone();
    std::thread::spawn(move || {
        for _ in signals.forever() {
            if raised.is_cancelled() {
                raised.escalate();
                tilefit_core::compile::guests::end_all_now();
                // `exit` runs no destructor: the scratch folders go now, not a day later.
                tilefit_core::compile::Scratch::remove_all_now();
                std::process::exit(130);
            }
            raised.cancel();
        }
    });
    cancel
}
