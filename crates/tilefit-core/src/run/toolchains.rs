//! Which Python and Triton a compiling command uses: `--python`/`TILEFIT_PYTHON` as given, else
//! the environment's Python when it imports triton, else the managed environment of the requested
//! Triton version, installed on first use. What the choice is worth saying (a version that differs
//! from the one asked for, an install under way) goes to the run's reporter: the library never prints.

use std::path::{Path, PathBuf};

use crate::compile::Reporter;
use crate::compile::toolchain::{self, DEFAULT_TRITON_VERSION, Toolchain, ToolchainError};
use crate::input::cache_index::CacheIndex;

/// What the user asked for: an interpreter, a Triton version, both or neither.
#[derive(Debug, Clone, Default)]
pub struct Wanted {
    /// `--python` / `TILEFIT_PYTHON`.
    pub python: Option<PathBuf>,
    /// `--triton` (one version).
    pub triton: Option<String>,
}

/// Why no toolchain could be chosen.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// The interpreter does not run, lacks Triton, or has another Triton than `--triton`.
    #[error(transparent)]
    Toolchain(#[from] ToolchainError),
    /// Installing a managed environment failed.
    #[error("provisioning the Triton {version} toolchain")]
    Provisioning {
        /// The Triton version.
        version: String,
        /// Why.
        #[source]
        source: ToolchainError,
    },
}

impl crate::hint::Hint for SelectError {
    fn hint(&self) -> Option<String> {
        match self {
            SelectError::Toolchain(e) | SelectError::Provisioning { source: e, .. } => {
                Some(e.hint())
            }
        }
    }
}

/// The oldest Triton 3.x minor release tilefit compiles with.
const OLDEST_MINOR: u32 = 5;

/// Why tilefit cannot compile with this Triton, if it cannot: releases before 3.5 are refused by
/// name rather than provisioned and failed (3.4.0's JIT rejects the worker's pointer types:
/// checked).
pub fn unsupported(version: &str) -> Option<String> {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    let (major, minor) = (parts.next().flatten()?, parts.next().flatten()?);
    ((major, minor) < (3, OLDEST_MINOR)).then(|| {
        format!(
            "Triton {version} is older than 3.{OLDEST_MINOR}, the oldest release whose JIT tilefit reproduces"
        )
    })
}

/// The toolchain a compiling command uses (see the module's words); `spec_version` is the spec's
/// `triton =`, a preference.
pub fn select(
    wanted: &Wanted,
    spec_version: Option<&str>,
    reporter: &dyn Reporter,
) -> Result<Toolchain, SelectError> {
    if let Some(python) = &wanted.python {
        let t = toolchain::from_python(python)?;
        // `--triton` names a version: an interpreter with another one is an error, never a run
        // that silently records another version. The spec's `triton` is a preference: a note.
        if let Some(want) = wanted.triton.as_deref().filter(|w| *w != t.triton_version) {
            return Err(ToolchainError::VersionMismatch {
                python: python.display().to_string(),
                found: t.triton_version.clone(),
                wanted: want.to_owned(),
            }
            .into());
        }
        if let Some(want) = spec_version.filter(|w| *w != t.triton_version) {
            reporter.note(&format!(
                "tilefit: note: `{}` has triton {}, not the {want} asked for; results record {}",
                python.display(),
                t.triton_version,
                t.triton_version
            ));
        }
        return Ok(t);
    }
    // Inside a virtualenv or conda environment whose Python imports triton, that is the Triton
    // the user runs: use it, unless `--triton` asks for another version by name.
    if wanted.triton.is_none()
        && let Some(t) = toolchain::from_environment()
    {
        reporter.note(&format!(
            "tilefit: using the environment's Triton {} (Python {}, {})",
            t.triton_version,
            t.python_version,
            t.python.display()
        ));
        if let Some(want) = spec_version.filter(|w| *w != t.triton_version) {
            reporter.note(&format!(
                "tilefit: note: the spec asks for triton {want}; results record {}",
                t.triton_version
            ));
        }
        return Ok(t);
    }
    let version = wanted
        .triton
        .as_deref()
        .or(spec_version)
        .unwrap_or(DEFAULT_TRITON_VERSION);
    provisioned(&toolchain::default_cache_dir(), version, reporter)
}

/// The managed environment of a Triton version, installed on first use (pip's progress to
/// the reporter).
pub fn provisioned(
    cache_dir: &Path,
    version: &str,
    reporter: &dyn Reporter,
) -> Result<Toolchain, SelectError> {
    if let Some(t) = toolchain::managed(cache_dir, version) {
        return Ok(t);
    }
    reporter.note(&format!(
        "tilefit: installing triton=={version} into {} (once per version)",
        toolchain::toolchains_dir(cache_dir).display()
    ));
    toolchain::ensure_managed(cache_dir, version, &mut |line| {
        if !line.starts_with("  ") {
            reporter.note(&format!("  {line}"));
        }
    })
    .map_err(|source| SelectError::Provisioning {
        version: version.to_owned(),
        source,
    })
}

/// The toolchain of one version of a matrix: `--python` when its Triton is that version, else the
/// managed environment, made on first use.
pub fn for_version(
    python: Option<&Path>,
    version: &str,
    reporter: &dyn Reporter,
) -> Result<Toolchain, SelectError> {
    if let Some(python) = python
        && let Ok(t) = toolchain::from_python(python)
        && t.triton_version == version
    {
        return Ok(t);
    }
    provisioned(&toolchain::default_cache_dir(), version, reporter)
}

/// One toolchain per Triton version recorded in the caches: `--python` for all of them when
/// given (with a note where versions differ), else the managed environment of each version.
pub fn for_caches(
    index: &CacheIndex,
    wanted: &Wanted,
    reporter: &dyn Reporter,
) -> Result<Vec<(Option<String>, Toolchain)>, SelectError> {
    let mut versions: Vec<Option<String>> = Vec::new();
    for kernel in &index.kernels {
        if !versions.contains(&kernel.triton_version) {
            versions.push(kernel.triton_version.clone());
        }
    }
    let mut out = Vec::new();
    for version in versions {
        // With `--python`, only an explicit `--triton` must match it; the versions the cache
        // records are replayed by that interpreter, with a note.
        let triton = if wanted.python.is_some() {
            wanted.triton.clone()
        } else {
            wanted.triton.clone().or_else(|| version.clone())
        };
        let chosen = select(
            &Wanted {
                python: wanted.python.clone(),
                triton,
            },
            None,
            reporter,
        )?;
        match &version {
            Some(v) if *v != chosen.triton_version => reporter.note(&format!(
                "tilefit: note: kernels produced by Triton {v} are replayed with Triton {}",
                chosen.triton_version
            )),
            None => reporter.note(&format!(
                "tilefit: note: some cache entries do not record their Triton version; replaying them with {}",
                chosen.triton_version
            )),
            _ => {}
        }
        out.push((version, chosen));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_before_3_5_are_refused_by_name() {
        assert!(unsupported("3.4.0").unwrap().contains("older than 3.5"));
        assert_eq!(unsupported("3.5.1"), None);
        assert_eq!(unsupported("4.0.0"), None);
    }
}
