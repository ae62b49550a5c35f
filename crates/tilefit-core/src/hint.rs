//! What to do next, as data: one [`Hint`] trait every error of the library with a next step
//! implements, and [`Hinted`], a hint for an error that has no type of its own. The walk over an
//! error's cause chain (uv's `diagnostics.rs`) is `run::hints`, above every stage whose errors it
//! knows; the one walk of a chain into one line of words is here (`chain_text`).

use std::error::Error;
use std::fmt;

/// An error that knows the user's next step.
pub trait Hint: Error {
    /// What to do next, in one sentence; `None` when this error has nothing to add.
    fn hint(&self) -> Option<String>;
}

/// An error with a message, a hint and optionally its cause: for the few places whose error has
/// no type of its own (a flag that does not fit the input, a file of the wrong kind).
#[derive(Debug)]
pub struct Hinted {
    /// What went wrong.
    pub message: String,
    /// What to do about it.
    pub hint: String,
    /// What caused it.
    pub source: Option<Box<dyn Error + Send + Sync + 'static>>,
}

impl Hinted {
    /// An error with a hint.
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> Hinted {
        Hinted {
            message: message.into(),
            hint: hint.into(),
            source: None,
        }
    }

    /// The same, with the error that caused it.
    #[must_use]
    pub fn caused_by(mut self, source: impl Error + Send + Sync + 'static) -> Hinted {
        self.source = Some(Box::new(source));
        self
    }
}

impl fmt::Display for Hinted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for Hinted {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

impl Hint for Hinted {
    fn hint(&self) -> Option<String> {
        Some(self.hint.clone())
    }
}

/// An error and its causes on one line, `a: b: c` (anyhow's `{:#}`): the one walk of a cause
/// chain into words, for reports that keep an error as text.
pub fn chain_text(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(": ");
        text.push_str(&e.to_string());
        cause = e.source();
    }
    text
}
