//! `tilefit toolchain list`: the managed Python + Triton environments, and `TILEFIT_PYTHON`'s.

use std::fmt::Write as _;
use std::path::Path;

use super::{Exporter, Terminal};
use crate::compile::toolchain::{DEFAULT_TRITON_VERSION, Toolchain, ToolchainError};

/// `tilefit toolchain list`: the managed environments in `dir`, and the interpreter
/// `TILEFIT_PYTHON` names with what it has.
pub struct ToolchainListing<'a> {
    /// Where the managed environments live.
    pub dir: &'a Path,
    /// The managed environments found there.
    pub managed: &'a [Toolchain],
    /// `TILEFIT_PYTHON` and what it holds (or why it is not usable).
    pub env_python: Option<(&'a Path, Result<Toolchain, ToolchainError>)>,
}

impl Exporter<ToolchainListing<'_>> for Terminal {
    fn export(&self, listing: &ToolchainListing<'_>) -> String {
        list(listing.dir, listing.managed, listing.env_python.as_ref())
    }
}

fn list(
    dir: &Path,
    managed: &[Toolchain],
    env_python: Option<&(&Path, Result<Toolchain, ToolchainError>)>,
) -> String {
    let mut text = format!(
        "Managed environments in {} (default Triton {DEFAULT_TRITON_VERSION}):\n",
        dir.display()
    );
    if managed.is_empty() {
        text.push_str("  none yet; `tilefit toolchain install VERSION` or any probe makes one\n");
    }
    for t in managed {
        let _ = writeln!(
            text,
            "  triton {}  python {}  {}",
            t.triton_version,
            t.python_version,
            t.python.display()
        );
    }
    if let Some((python, found)) = env_python {
        let _ = match found {
            Ok(t) => writeln!(
                text,
                "TILEFIT_PYTHON: {} (python {}, triton {})",
                python.display(),
                t.python_version,
                t.triton_version
            ),
            Err(e) => writeln!(text, "TILEFIT_PYTHON: {} ({e})", python.display()),
        };
    }
    text
}
