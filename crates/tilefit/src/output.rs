//! Writing to stdout: data goes there, progress and errors to stderr. A reader that closes the
//! pipe early is not an error.

use std::io::{self, Write};

/// Write a whole rendered text to stdout, made safe for a terminal or a CI log (control
/// characters escaped, no line that GitHub's runner would read as a workflow command).
pub fn print(text: &str) -> anyhow::Result<()> {
    print_raw(&tilefit_core::escape::log_text(text))
}

/// Write text to stdout as it is: only for the GitHub annotations, whose every value is escaped
/// by the exporter that made them.
pub fn print_raw(text: &str) -> anyhow::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// One line to stderr (progress, notes, the gate's line), made safe like [`print`].
pub fn note(line: &str) {
    eprintln!("{}", tilefit_core::escape::log_text(line));
}

/// Pretty JSON to stdout, newline-terminated.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    print(&text)
}

/// Whether an error is stdout closing under us (`tilefit devices | head`).
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .chain()
        .filter_map(|e| e.downcast_ref::<io::Error>())
        .any(|e| e.kind() == io::ErrorKind::BrokenPipe)
}
