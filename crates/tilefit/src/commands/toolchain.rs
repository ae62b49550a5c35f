//! `tilefit toolchain`: list and install the Python + Triton environments probes compile with,
//! and the shared logic every compiling command uses to pick one.

use std::fmt::Write as _;

use anyhow::Context as _;
use tilefit_core::compile::toolchain::{self, DEFAULT_TRITON_VERSION, Toolchain};

use crate::cli::{PythonArgs, ToolchainAction, ToolchainArgs};
use crate::exit_codes;
use crate::failure::hinted;
use crate::output;

pub fn run(args: &ToolchainArgs) -> anyhow::Result<u8> {
    let cache_dir = toolchain::default_cache_dir();
    match &args.action {
        ToolchainAction::List => {
            let mut text = format!(
                "Managed environments in {} (default Triton {DEFAULT_TRITON_VERSION}):\n",
                toolchain::toolchains_dir(&cache_dir).display()
            );
            let managed = toolchain::list_managed(&cache_dir);
            if managed.is_empty() {
                text.push_str(
                    "  none yet; `tilefit toolchain install VERSION` or any probe makes one\n",
                );
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
            if let Some(python) = std::env::var_os("TILEFIT_PYTHON") {
                let python = std::path::PathBuf::from(python);
                let _ = match toolchain::from_python(&python) {
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
            output::print(&text)?;
        }
        ToolchainAction::Install { triton_version } => {
            let t = toolchain::ensure_managed(&cache_dir, triton_version, &mut |line| {
                crate::output::note(&format!("  {line}"));
            })
            .map_err(|e| hinted(e.to_string(), e.hint()))?;
            output::print(&format!(
                "triton {} with python {} at {}\n",
                t.triton_version,
                t.python_version,
                t.python.display()
            ))?;
        }
    }
    Ok(exit_codes::OK)
}

/// The toolchain a compiling command uses: `--python`/`TILEFIT_PYTHON` as given, else the
/// environment's Python when it imports triton, else the managed environment for the requested
/// Triton version, installed on first use with progress on stderr.
pub fn select(args: &PythonArgs, spec_version: Option<&str>) -> anyhow::Result<Toolchain> {
    if let Some(python) = &args.python {
        let t = toolchain::from_python(python).map_err(|e| hinted(e.to_string(), e.hint()))?;
        // `--triton` names a version: an interpreter with another one is an error, never a run
        // that silently records another version. The spec's `triton` is a preference: a note.
        if let Some(wanted) = args.triton.as_deref().filter(|w| *w != t.triton_version) {
            let e = toolchain::ToolchainError::VersionMismatch {
                python: python.display().to_string(),
                found: t.triton_version.clone(),
                wanted: wanted.to_owned(),
            };
            return Err(hinted(e.to_string(), e.hint()));
        }
        if let Some(wanted) = spec_version.filter(|w| *w != t.triton_version) {
            crate::output::note(&format!(
                "tilefit: note: `{}` has triton {}, not the {wanted} asked for; results record {}",
                python.display(),
                t.triton_version,
                t.triton_version
            ));
        }
        return Ok(t);
    }
    // Inside a virtualenv or conda environment whose Python imports triton, that is the Triton
    // the user runs: use it, unless `--triton` asks for another version by name.
    if args.triton.is_none()
        && let Some(t) = toolchain::from_environment()
    {
        crate::output::note(&format!(
            "tilefit: using the environment's Triton {} (Python {}, {})",
            t.triton_version,
            t.python_version,
            t.python.display()
        ));
        if let Some(wanted) = spec_version.filter(|w| *w != t.triton_version) {
            crate::output::note(&format!(
                "tilefit: note: the spec asks for triton {wanted}; results record {}",
                t.triton_version
            ));
        }
        return Ok(t);
    }
    let version = args
        .triton
        .as_deref()
        .or(spec_version)
        .unwrap_or(DEFAULT_TRITON_VERSION);
    provisioned(version)
}

/// The managed environment of a Triton version, installed on first use with progress on stderr.
pub fn provisioned(version: &str) -> anyhow::Result<Toolchain> {
    let cache_dir = toolchain::default_cache_dir();
    if let Some(t) = toolchain::managed(&cache_dir, version) {
        return Ok(t);
    }
    crate::output::note(&format!(
        "tilefit: installing triton=={version} into {} (once per version)",
        toolchain::toolchains_dir(&cache_dir).display()
    ));
    toolchain::ensure_managed(&cache_dir, version, &mut |line| {
        if !line.starts_with("  ") {
            crate::output::note(&format!("  {line}"));
        }
    })
    .map_err(|e| hinted(e.to_string(), e.hint()))
    .with_context(|| format!("provisioning the Triton {version} toolchain"))
}
