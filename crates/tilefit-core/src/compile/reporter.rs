//! What a run tells its caller as it goes: compile progress, notes for the user, and the lines a
//! captured script prints. One reporter per command, made by the binary's session and carried by
//! the run's [`Settings`](super::Settings), which every stage of a run already holds: nothing is
//! threaded through signatures as a callback. The library never prints.

use std::sync::Arc;

use super::script::Stream;

/// Progress, for a progress bar.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Jobs are known; `to_compile` of them go to workers.
    Planned {
        /// All jobs.
        jobs: usize,
        /// From the cache.
        cached: usize,
        /// To compile.
        to_compile: usize,
    },
    /// One compile finished.
    Compiled {
        /// Finished so far.
        done: usize,
        /// To compile in all.
        total: usize,
        /// What it was.
        label: String,
    },
}

/// Where a run's progress, notes and script output go. Every method does nothing unless the
/// caller wants it; a reporter is shared by the run's threads.
pub trait Reporter: Send + Sync {
    /// Compile progress: jobs planned, one compile finished.
    fn event(&self, event: Event) {
        let _ = event;
    }

    /// A note for the user: a warning, a fallback taken, a toolchain being installed.
    fn note(&self, line: &str) {
        let _ = line;
    }

    /// One line a captured script printed, under the target it ran for.
    fn output(&self, target: &str, stream: Stream, line: &str) {
        let _ = (target, stream, line);
    }
}

/// A reporter that tells nothing: for library callers and tests that want no progress.
pub struct Silent;

impl Reporter for Silent {}

/// The run's reporter, as [`Settings`](super::Settings) carries it.
#[derive(Clone)]
pub struct Reporting(Arc<dyn Reporter>);

impl Reporting {
    /// Report to `reporter`.
    pub fn to(reporter: Arc<dyn Reporter>) -> Reporting {
        Reporting(reporter)
    }

    /// Report nothing.
    pub fn silent() -> Reporting {
        Reporting(Arc::new(Silent))
    }
}

impl std::ops::Deref for Reporting {
    type Target = dyn Reporter;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl std::fmt::Debug for Reporting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reporting")
    }
}
