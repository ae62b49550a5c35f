//! Progress on stderr while a run compiles: a bar on a terminal, a plain line every few seconds
//! in a CI log; notes printed above the bar; SIGINT/SIGTERM wired to the run's cancel flag.

use std::collections::HashMap;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tilefit_core::compile::script::Stream;
use tilefit_core::compile::{Event, Reporter};

/// A progress bar on stderr, drawn only when there is something to compile and stderr is a
/// terminal (indicatif hides itself otherwise); the run's notes above it, and a captured script's
/// output echoed. The library reports to it (it is the command's [`Reporter`]).
pub struct Progress {
    bar: ProgressBar,
    /// Without a terminal (CI logs): when the last plain progress line was written.
    last_line: Mutex<Option<std::time::Instant>>,
    /// A plan with jobs to compile is noted, with this Triton and these workers (`probe`).
    plans: Mutex<Option<(String, usize)>>,
    /// A captured script's lines shown so far, per target.
    shown: Mutex<HashMap<String, u64>>,
}

impl Reporter for Progress {
    fn event(&self, event: Event) {
        let plans = self.plans.lock().map(|p| p.clone()).unwrap_or_default();
        match plans {
            Some((triton, workers)) => self.event_noting_plans(event, &triton, workers),
            None => self.event_only(event),
        }
    }

    fn note(&self, line: &str) {
        Progress::note(self, line);
    }

    fn output(&self, target: &str, _stream: Stream, line: &str) {
        self.echo(target, line);
    }
}

/// Without a terminal, one progress line this often instead of a bar (or silence).
const PLAIN_PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

impl Progress {
    pub fn new() -> Progress {
        Progress {
            bar: ProgressBar::hidden(),
            last_line: Mutex::new(None),
            plans: Mutex::new(None),
            shown: Mutex::new(HashMap::new()),
        }
    }

    /// Note each plan with jobs to compile from here on: how many, with `triton`, on `workers`.
    pub fn note_plans(&self, triton: &str, workers: usize) {
        if let Ok(mut plans) = self.plans.lock() {
            *plans = Some((triton.to_owned(), workers));
        }
    }

    /// Feed one event from the library.
    fn event_only(&self, event: Event) {
        use std::io::IsTerminal as _;
        if !std::io::stderr().is_terminal() {
            if let Event::Compiled { done, total, .. } = event {
                let Ok(mut last) = self.last_line.lock() else {
                    return;
                };
                let due = last.is_none_or(|t| t.elapsed() >= PLAIN_PROGRESS_EVERY);
                if due || done == total {
                    *last = Some(std::time::Instant::now());
                    crate::output::note(&format!("tilefit: {done}/{total} compiled"));
                }
            } else if let Event::Planned { .. } = event
                && let Ok(mut last) = self.last_line.lock()
            {
                *last = Some(std::time::Instant::now());
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

    /// [`Progress::event_only`], with a note when a plan has jobs to compile: how many, with
    /// which Triton, on how many workers.
    fn event_noting_plans(&self, event: Event, triton: &str, workers: usize) {
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
        self.event_only(event);
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

/// The progress of a verify: the bar is cleared when the launches start (their lines follow).
pub struct Launching(pub Progress);

impl Reporter for Launching {
    fn event(&self, event: Event) {
        Reporter::event(&self.0, event);
    }

    fn note(&self, line: &str) {
        if line.starts_with("tilefit: launching") {
            self.0.finish();
        }
        self.0.note(line);
    }
}

/// Lines of a captured script shown per target: after these the rest is counted, not shown (the
/// report keeps the tail).
pub const ECHOED_LINES: u64 = 2000;

impl Progress {
    /// A captured script's line, echoed live on stderr with its target as a prefix, bounded by
    /// [`ECHOED_LINES`] per target.
    fn echo(&self, target: &str, line: &str) {
        let shown = {
            let Ok(mut shown) = self.shown.lock() else {
                return;
            };
            let count = shown.entry(target.to_owned()).or_default();
            *count += 1;
            *count
        };
        if shown <= ECHOED_LINES {
            let text = tilefit_core::escape::log_text(line);
            self.note(&format!("[{target}] {text}"));
        } else if shown == ECHOED_LINES + 1 {
            self.note(&format!(
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
