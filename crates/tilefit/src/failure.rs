//! How a failed command is shown: `error: ...`, each cause as `Caused by: ...`, and the first
//! `hint:` along the cause chain. Library errors carry their hints as data (`tilefit_core::hint`);
//! the library's `run::hints` finds them, this only words them for a terminal.

/// Print an error chain to stderr. Messages may quote what came from outside (a path, a cache's
/// field), so every line is made safe for a CI log first.
pub fn report(error: &anyhow::Error) {
    crate::output::note(&format!("error: {error}"));
    for cause in error.chain().skip(1) {
        crate::output::note(&format!("  Caused by: {cause}"));
    }
    if let Some(hint) = tilefit_core::run::hints::of_chain(error.chain()) {
        crate::output::note(&format!("hint: {hint}"));
    }
}
