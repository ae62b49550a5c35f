//! Cancellation: a flag the binary raises on SIGINT, SIGTERM or SIGHUP. The pool stops handing
//! out jobs, kills the workers it is waiting on, and the runners return what finished, marked
//! incomplete; results already compiled are in the cache. Raised again (a second Ctrl-C), it is
//! urgent: processes being ended get SIGKILL without a grace. Nothing here installs signal
//! handlers: that is the binary's business.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A shared cancellation flag, and whether it is urgent.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    raised: Arc<AtomicBool>,
    urgent: Arc<AtomicBool>,
}

impl Cancel {
    /// A flag nobody has raised.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// The flag itself, for a signal handler to set.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.raised)
    }

    /// Raise it.
    pub fn cancel(&self) {
        self.raised.store(true, Ordering::SeqCst);
    }

    /// Raise it, and make it urgent: no more grace for anything being ended.
    pub fn escalate(&self) {
        self.urgent.store(true, Ordering::SeqCst);
        self.cancel();
    }

    /// Whether it was raised.
    pub fn is_cancelled(&self) -> bool {
        self.raised.load(Ordering::SeqCst)
    }

    /// Whether it was raised twice.
    pub fn is_urgent(&self) -> bool {
        self.urgent.load(Ordering::SeqCst)
    }
}
