//! Finding or provisioning Python with Triton. An interpreter named with `--python` or
//! `TILEFIT_PYTHON` is used as it is (it must have triton); otherwise tilefit keeps one virtual
//! environment per Triton version under its cache directory, made with `python3 -m venv` and
//! `pip install triton==V` in a temporary folder that is renamed into place only when the install
//! worked, so an interrupted install leaves nothing half-made.
//!
//! Progress is reported through a callback; this module never prints.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

/// The Triton version tilefit uses when neither the command nor the spec names one.
pub const DEFAULT_TRITON_VERSION: &str = "3.7.1";

/// Reads versions without importing triton (fast; the worker's handshake proves the import).
const QUERY: &str = r#"
import json, platform, sys
try:
    from importlib.metadata import version
    triton = version("triton")
except Exception as error:
    triton = None
print(json.dumps({"python": platform.python_version(), "triton": triton, "executable": sys.executable}))
"#;

/// A Python interpreter with Triton, ready for workers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Toolchain {
    /// The interpreter.
    pub python: PathBuf,
    /// `3.11.7`.
    pub python_version: String,
    /// `3.7.1`.
    pub triton_version: String,
    /// How it was chosen.
    pub origin: Origin,
    /// Triton's settings from the environment that change what it compiles
    /// ([`triton_environment`]): part of every cache key and of the report.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// Environment variables whose names start with these set Triton's compile knobs
/// (`triton.knobs`: `TRITON_HIP_USE_ASYNC_COPY`, `TRITON_DEFAULT_FP_FUSION`,
/// `AMDGCN_USE_BUFFER_OPS`, ...): a knob can change the bytes a kernel needs.
const KNOB_PREFIXES: [&str; 2] = ["TRITON_", "AMDGCN_"];

/// Of those, the ones that name where Triton keeps or writes things, not how it compiles.
const NOT_KNOBS: [&str; 6] = [
    "TRITON_CACHE_DIR",
    "TRITON_HOME",
    "TRITON_DUMP_DIR",
    "TRITON_OVERRIDE_DIR",
    "TRITON_PRINT_AUTOTUNING",
    "TRITON_CACHE_MANAGER",
];

/// Triton's compile knobs set in this process's environment (inherited by every worker): a
/// result compiled under one setting is not the result under another (under 3.9,
/// `TRITON_HIP_USE_ASYNC_COPY=0` halves a gfx950 matmul's bytes), so they key the cache and are
/// written in the report. A name or value with a control character is no knob Triton reads
/// (its knobs are flags, numbers and names) and is left out, so reports stay readable.
pub fn triton_environment() -> BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, value)| !format!("{name}{value}").chars().any(char::is_control))
        .filter(|(name, _)| {
            KNOB_PREFIXES.iter().any(|p| name.starts_with(p)) && !NOT_KNOBS.contains(&name.as_str())
        })
        .collect()
}

/// Where a toolchain came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// `--python` or `TILEFIT_PYTHON`.
    UserPython,
    /// A managed environment under the cache directory.
    Managed,
    /// The virtualenv or conda environment tilefit runs in (or was installed into), whose Python
    /// imports triton.
    Environment,
}

/// The Python of the environment tilefit runs in, when it imports triton: `VIRTUAL_ENV`, then
/// `CONDA_PREFIX`, then the folder the `tilefit` executable sits in (a `pip install`ed wheel puts
/// it beside the environment's `python`). `None` when there is none or it has no triton.
pub fn from_environment() -> Option<Toolchain> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    for variable in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(prefix) = std::env::var_os(variable).filter(|p| !p.is_empty()) {
            candidates.push(venv_python(Path::new(&prefix)));
        }
    }
    if let Some(bin) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
    {
        candidates.extend(["python", "python3"].map(|name| bin.join(name)));
    }
    candidates
        .into_iter()
        .filter(|python| python.is_file())
        .find_map(|python| from_python(&python).ok())
        .map(|t| Toolchain {
            origin: Origin::Environment,
            ..t
        })
}

/// Why no toolchain could be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolchainError {
    /// The interpreter could not be run.
    #[error("cannot run `{python}`: {reason}")]
    NoPython {
        /// The interpreter path or name.
        python: String,
        /// The OS error.
        reason: String,
    },
    /// The interpreter runs but has no triton.
    #[error("`{python}` (Python {python_version}) has no triton package")]
    NoTriton {
        /// The interpreter.
        python: String,
        /// Its version.
        python_version: String,
    },
    /// The interpreter's answer was unreadable.
    #[error("`{python}` did not answer tilefit's version query: {detail}")]
    QueryFailed {
        /// The interpreter.
        python: String,
        /// What it printed.
        detail: String,
    },
    /// `python3 -m venv` failed.
    #[error("creating a virtual environment with `{python}` failed: {detail}")]
    VenvFailed {
        /// The base interpreter.
        python: String,
        /// The tail of its output.
        detail: String,
    },
    /// `pip install triton==V` failed.
    #[error("installing triton=={version} failed: {detail}")]
    InstallFailed {
        /// The version asked for.
        version: String,
        /// The tail of pip's output.
        detail: String,
    },
    /// A Triton version that is not a release number `X.Y.Z`.
    #[error("`{given}` is not a Triton release: write X.Y.Z{}", suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default())]
    BadVersion {
        /// What was given.
        given: String,
        /// `X.Y.0` for an `X.Y`.
        suggestion: Option<String>,
    },
    /// `--python` names an interpreter whose Triton is not the version `--triton` asks for.
    #[error("`{python}` has triton {found}, not the {wanted} that `--triton` asks for")]
    VersionMismatch {
        /// The interpreter.
        python: String,
        /// Its Triton.
        found: String,
        /// The version asked for.
        wanted: String,
    },
    /// tilefit's own folder is not safe to use.
    #[error("cannot use tilefit's folder: {0}")]
    Private(#[from] super::folders::FolderError),
    /// Filesystem trouble in the cache directory.
    #[error("cannot use the folder `{path}`: {reason}")]
    Folder {
        /// The folder.
        path: String,
        /// The OS error.
        reason: String,
    },
}

impl ToolchainError {
    /// What to do next.
    pub fn hint(&self) -> String {
        match self {
            ToolchainError::NoPython { .. } => "install Python 3.10 or newer (python3 on PATH), or pass `--python PATH` / set `TILEFIT_PYTHON` to an interpreter that has triton".to_owned(),
            ToolchainError::NoTriton { python, .. } => format!("`{python} -m pip install triton`, or drop `--python`/`TILEFIT_PYTHON` and let tilefit manage a Triton environment"),
            ToolchainError::QueryFailed { .. } => "check that the interpreter starts: run it by hand".to_owned(),
            ToolchainError::VenvFailed { .. } => "the venv module is missing: on Debian and Ubuntu `apt-get install python3-venv`; or pass `--python` with an interpreter that has triton".to_owned(),
            ToolchainError::InstallFailed { detail, version } => {
                // pip lists the versions it saw; "none" means it saw no index at all.
                let saw_versions = detail.contains("(from versions:") && !detail.contains("(from versions: none)");
                if saw_versions {
                    format!("PyPI has no triton=={version} for this platform and Python; the versions pip found are listed above")
                } else {
                    "pip reached no package registry (or it has no triton for this platform): check the network, set HTTPS_PROXY or PIP_INDEX_URL behind a proxy, or, offline, pass `--python` with an interpreter that has triton".to_owned()
                }
            }
            ToolchainError::BadVersion { suggestion, .. } => format!("name a release as PyPI lists it, e.g. `--triton {}`", suggestion.as_deref().unwrap_or(DEFAULT_TRITON_VERSION)),
            ToolchainError::VersionMismatch { found, .. } => format!("drop `--triton` to use that interpreter's Triton {found}, or drop `--python`/`TILEFIT_PYTHON` to let tilefit provision the version asked for"),
            ToolchainError::Private(error) => error.hint(),
            ToolchainError::Folder { .. } => "point `TILEFIT_CACHE_DIR` at a writable folder, or unset it to use `~/.cache/tilefit`".to_owned(),
        }
    }
}

#[derive(Deserialize)]
struct QueryReply {
    python: String,
    triton: Option<String>,
}

/// Ask an interpreter for its Python and Triton versions.
pub fn query(python: &Path) -> Result<(String, Option<String>), ToolchainError> {
    let shown = python.display().to_string();
    let output = Command::new(python)
        .args(["-I", "-B", "-c", QUERY])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| ToolchainError::NoPython {
            python: shown.clone(),
            reason: e.to_string(),
        })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let reply: QueryReply = stdout
        .lines()
        .last()
        .and_then(|line| serde_json::from_str(line).ok())
        .ok_or_else(|| ToolchainError::QueryFailed {
            python: shown,
            detail: tail(
                &format!("{stdout}{}", String::from_utf8_lossy(&output.stderr)),
                400,
            ),
        })?;
    Ok((reply.python, reply.triton))
}

/// Use an interpreter the user named.
pub fn from_python(python: &Path) -> Result<Toolchain, ToolchainError> {
    let (python_version, triton) = query(python)?;
    let triton_version = triton.ok_or_else(|| ToolchainError::NoTriton {
        python: python.display().to_string(),
        python_version: python_version.clone(),
    })?;
    Ok(Toolchain {
        python: python.to_path_buf(),
        python_version,
        triton_version,
        origin: Origin::UserPython,
        env: triton_environment(),
    })
}

/// The folder of managed toolchains.
pub fn toolchains_dir(cache_dir: &Path) -> PathBuf {
    cache_dir.join("toolchains")
}

fn managed_dir(cache_dir: &Path, version: &str) -> PathBuf {
    toolchains_dir(cache_dir).join(format!("triton-{version}"))
}

fn venv_python(venv: &Path) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    }
}

/// The managed toolchain for a version, if it is installed and answers.
pub fn managed(cache_dir: &Path, version: &str) -> Option<Toolchain> {
    parse_version(version).ok()?;
    let python = venv_python(&managed_dir(cache_dir, version));
    if !python.exists() {
        return None;
    }
    let (python_version, triton) = query(&python).ok()?;
    (triton.as_deref() == Some(version)).then(|| Toolchain {
        python,
        python_version,
        triton_version: version.to_owned(),
        origin: Origin::Managed,
        env: triton_environment(),
    })
}

/// Every managed toolchain present.
pub fn list_managed(cache_dir: &Path) -> Vec<Toolchain> {
    let Ok(entries) = std::fs::read_dir(toolchains_dir(cache_dir)) else {
        return Vec::new();
    };
    let mut found: Vec<Toolchain> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("triton-")
                .and_then(|version| managed(cache_dir, version))
        })
        .collect();
    found.sort_by(|a, b| a.triton_version.cmp(&b.triton_version));
    found
}

/// A Triton release number as tilefit takes it: `X.Y.Z`, three whole numbers, nothing else (so a
/// version can name a folder and a pip requirement safely). `3.6` is refused with `3.6.0`
/// suggested: pip would install 3.6.0 for it, which then answers to another name.
pub fn parse_version(text: &str) -> Result<String, ToolchainError> {
    let given = text.trim();
    let parts: Vec<&str> = given.split('.').collect();
    let numeric = |p: &&str| !p.is_empty() && p.len() <= 6 && p.bytes().all(|b| b.is_ascii_digit());
    if parts.len() == 3 && parts.iter().all(numeric) {
        return Ok(given.to_owned());
    }
    Err(ToolchainError::BadVersion {
        given: given.to_owned(),
        suggestion: (parts.len() == 2 && parts.iter().all(numeric)).then(|| format!("{given}.0")),
    })
}

/// A comma-separated list of Triton versions (`--triton 3.6.0,3.7.1`), each checked by
/// [`parse_version`], repeats dropped, order kept.
pub fn parse_versions(text: &str) -> Result<Vec<String>, ToolchainError> {
    let mut versions: Vec<String> = Vec::new();
    for part in text.split(',').filter(|p| !p.trim().is_empty()) {
        let version = parse_version(part)?;
        if !versions.contains(&version) {
            versions.push(version);
        }
    }
    if versions.is_empty() {
        return Err(ToolchainError::BadVersion {
            given: text.to_owned(),
            suggestion: None,
        });
    }
    Ok(versions)
}

/// Make sure the managed toolchain for `version` exists, installing it if needed. Each line of
/// progress (pip's output) goes to `progress`. The version must be `X.Y.Z` ([`parse_version`]):
/// it names a folder and a pip requirement, and may come from a cache written elsewhere.
pub fn ensure_managed(
    cache_dir: &Path,
    version: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<Toolchain, ToolchainError> {
    let version = parse_version(version)?;
    let version = version.as_str();
    if let Some(toolchain) = managed(cache_dir, version) {
        return Ok(toolchain);
    }
    let root = toolchains_dir(cache_dir);
    let folder_error = |path: &Path, e: std::io::Error| ToolchainError::Folder {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    std::fs::create_dir_all(&root).map_err(|e| folder_error(&root, e))?;
    remove_abandoned_staging(&root, version);
    let staging = root.join(format!(".staging-triton-{version}-{}", std::process::id()));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| folder_error(&staging, e))?;
    }
    let result = install_into(&staging, version, progress);
    if let Err(error) = result {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(error);
    }
    let final_dir = managed_dir(cache_dir, version);
    if final_dir.exists() {
        // A broken leftover (it did not answer above) or a concurrent install that won: keep a
        // working one.
        if managed(cache_dir, version).is_some() {
            let _ = std::fs::remove_dir_all(&staging);
            return managed(cache_dir, version)
                .ok_or_else(|| folder_error(&final_dir, std::io::Error::other("vanished")));
        }
        std::fs::remove_dir_all(&final_dir).map_err(|e| folder_error(&final_dir, e))?;
    }
    std::fs::rename(&staging, &final_dir).map_err(|e| folder_error(&final_dir, e))?;
    managed(cache_dir, version).ok_or_else(|| ToolchainError::InstallFailed {
        version: version.to_owned(),
        detail: "the installed environment does not report the expected triton version".to_owned(),
    })
}

/// Staging folders of installs whose process is gone (killed mid-install): never renamed into
/// place, so nothing half-made is used; removed here so they do not pile up. A staging folder of
/// a live process (a concurrent install) is left alone.
fn remove_abandoned_staging(root: &Path, version: &str) {
    let prefix = format!(".staging-triton-{version}-");
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(&prefix)
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let alive = Path::new("/proc").join(pid.to_string()).exists();
        if !alive && pid != std::process::id() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// An executable on `PATH`, if there is one.
fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    })
}

fn bootstrap_python() -> PathBuf {
    std::env::var_os("TILEFIT_BOOTSTRAP_PYTHON")
        .map_or_else(|| PathBuf::from("python3"), PathBuf::from)
}

fn install_into(
    staging: &Path,
    version: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<(), ToolchainError> {
    let base = bootstrap_python();
    let uv = which("uv");
    progress(&format!(
        "creating a virtual environment with {}{}",
        base.display(),
        if uv.is_some() { " (uv)" } else { "" }
    ));
    // uv makes the environment and installs into it much faster than venv + pip.
    let output = if let Some(uv) = &uv {
        Command::new(uv)
            .args(["venv", "--quiet", "--python"])
            .arg(&base)
            .arg(staging)
            .stdin(Stdio::null())
            .output()
    } else {
        Command::new(&base)
            .args(["-m", "venv"])
            .arg(staging)
            .stdin(Stdio::null())
            .output()
    }
    .map_err(|e| ToolchainError::NoPython {
        python: base.display().to_string(),
        reason: e.to_string(),
    })?;
    if !output.status.success() {
        return Err(ToolchainError::VenvFailed {
            python: base.display().to_string(),
            detail: tail(&String::from_utf8_lossy(&output.stderr), 600),
        });
    }
    progress(&format!(
        "{} install triton=={version}",
        if uv.is_some() { "uv pip" } else { "pip" }
    ));
    let mut install = if let Some(uv) = &uv {
        let mut command = Command::new(uv);
        command
            .args(["pip", "install", "--python"])
            .arg(venv_python(staging));
        command
    } else {
        let mut command = Command::new(venv_python(staging));
        command.args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--progress-bar",
            "off",
        ]);
        command
    };
    let mut child = install
        .arg(format!("triton=={version}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ToolchainError::VenvFailed {
            python: base.display().to_string(),
            detail: e.to_string(),
        })?;
    let stderr = child.stderr.take().expect("piped");
    let stderr_reader = std::thread::spawn(move || {
        let mut text = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            text.push_str(&line);
            text.push('\n');
        }
        text
    });
    let mut log = String::new();
    for line in BufReader::new(child.stdout.take().expect("piped"))
        .lines()
        .map_while(Result::ok)
    {
        progress(&line);
        log.push_str(&line);
        log.push('\n');
    }
    let status = child.wait().map_err(|e| ToolchainError::InstallFailed {
        version: version.to_owned(),
        detail: e.to_string(),
    })?;
    let errors = stderr_reader.join().unwrap_or_default();
    if !status.success() {
        return Err(ToolchainError::InstallFailed {
            version: version.to_owned(),
            detail: tail(&format!("{log}{errors}"), 800),
        });
    }
    Ok(())
}

/// The last `max` characters of a text, on a char boundary.
pub fn tail(text: &str, max: usize) -> String {
    let trimmed = text.trim_end();
    if trimmed.len() <= max {
        return trimmed.to_owned();
    }
    let mut start = trimmed.len() - max;
    while !trimmed.is_char_boundary(start) {
        start += 1;
    }
    format!("...{}", &trimmed[start..])
}

/// tilefit's cache directory, checked before any work: made private when missing; refused, with
/// its path and why, when it is a file, a link, another user's or writable by others
/// ([`super::folders`]).
pub fn usable_cache_dir() -> Result<PathBuf, ToolchainError> {
    super::folders::usable_cache().map_err(ToolchainError::Private)
}

/// tilefit's cache directory: `TILEFIT_CACHE_DIR`, else `$XDG_CACHE_HOME/tilefit`, else
/// `~/.cache/tilefit`, else a folder of this user's in the temp dir; always absolute.
pub fn default_cache_dir() -> PathBuf {
    super::folders::configured()
}

impl crate::hint::Hint for ToolchainError {
    fn hint(&self) -> Option<String> {
        Some(ToolchainError::hint(self))
    }
}

#[cfg(test)]
mod version_tests {
    use super::*;

    #[test]
    fn versions_are_release_numbers() {
        assert_eq!(parse_version(" 3.6.0 ").unwrap(), "3.6.0");
        match parse_version("3.6") {
            Err(ToolchainError::BadVersion { suggestion, .. }) => {
                assert_eq!(suggestion.as_deref(), Some("3.6.0"));
            }
            other => panic!("{other:?}"),
        }
        for bad in [
            "../../../../x",
            "3.6.0; rm",
            "3.6.0.1",
            "",
            "3..0",
            "3.6.0+git",
        ] {
            assert!(parse_version(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_versions("3.6.0,3.6.0, 3.7.1").unwrap(),
            vec!["3.6.0".to_owned(), "3.7.1".to_owned()]
        );
    }
}
