//! How a failed command is shown: `error: ...`, each cause as `Caused by: ...`, and the first
//! `hint:` any layer attached. Library errors carry their hints as data; this is where they are
//! worded for a terminal.

use std::fmt;

/// An error with a next step for the user.
#[derive(Debug)]
pub struct Hinted {
    /// What went wrong.
    pub message: String,
    /// What to do about it.
    pub hint: String,
}

impl fmt::Display for Hinted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Hinted {}

/// Build an error with a hint.
pub fn hinted(message: impl Into<String>, hint: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Hinted {
        message: message.into(),
        hint: hint.into(),
    })
}

/// Print an error chain to stderr.
/// Messages may quote what came from outside (a path, a cache's field), so every line is made
/// safe for a CI log first.
pub fn report(error: &anyhow::Error) {
    crate::output::note(&format!("error: {error}"));
    for cause in error.chain().skip(1) {
        crate::output::note(&format!("  Caused by: {cause}"));
    }
    if let Some(hint) = error.chain().find_map(|e| e.downcast_ref::<Hinted>()) {
        crate::output::note(&format!("hint: {}", hint.hint));
    }
}
