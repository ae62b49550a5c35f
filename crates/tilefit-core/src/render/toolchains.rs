//! `tilefit toolchain list`: the managed Python + Triton environments, and `TILEFIT_PYTHON`'s.

use std::fmt::Write as _;
use std::path::Path;

use crate::compile::toolchain::{DEFAULT_TRITON_VERSION, Toolchain, ToolchainError};

/// The managed environments in `dir`, and the interpreter `TILEFIT_PYTHON` names with what it has.
pub fn list(
    dir: &Path,
    managed: &[Toolchain],
    env_python: Option<(&Path, Result<Toolchain, ToolchainError>)>,
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
