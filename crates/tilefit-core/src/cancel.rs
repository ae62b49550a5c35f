//! Cancellation: a flag the binary raises on SIGINT or SIGTERM. The pool stops handing out jobs,
//! kills the workers it is waiting on, and the runners return what finished, marked incomplete;
//! results already compiled are in the cache. Nothing here installs signal handlers: that is the
//! binary's business.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A shared cancellation flag.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A flag nobody has raised.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// The flag itself, for a signal handler to set.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0)
    }

    /// Raise it.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether it was raised.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
