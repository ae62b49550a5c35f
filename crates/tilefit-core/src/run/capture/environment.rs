//! The environment a target's script runs in: a capture leaves the user's machine as it found it.
//! Engines and libraries keep caches in the home folder and the XDG folders (FlagGems' tuned
//! configs under `~/.flaggems`, Triton's `~/.triton`, vLLM's `~/.cache/vllm`, Helion's and
//! TileLang's caches); under emulation an autotuner benchmarks nothing real, so what it would
//! persist there (zero timings, a "best" config picked by them) would mislead the next capture and
//! any real GPU of that name on the machine. So each target's script gets a home, XDG folders,
//! a temp dir and the engines' cache variables of its own in its scratch, removed with it; no
//! bytecode is written beside the user's sources; and the writes it still makes through Python
//! outside its scratch and the folders the user allowed are recorded (`tilefit._audit`) and fail
//! the run. What stays where it was: packages installed with `pip install --user`
//! (`PYTHONUSERBASE`), and the model stores (`HF_HOME`, `TORCH_HOME`) a script reads weights and
//! configs from.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The variable naming the folders (besides the scratch) the script may write to, `:`-joined.
pub const WRITABLE: &str = "TILEFIT_CAPTURE_WRITABLE";

/// Engines' own cache variables, each pointed below the script's home (relative to it).
const ENGINE_CACHES: [(&str, &str); 7] = [
    ("TRITON_HOME", ""),
    ("VLLM_CACHE_ROOT", ".cache/vllm"),
    ("VLLM_CONFIG_ROOT", ".config/vllm"),
    ("HELION_CACHE_DIR", ".cache/helion"),
    ("TILELANG_CACHE_DIR", ".tilelang/cache"),
    ("TORCH_EXTENSIONS_DIR", ".cache/torch_extensions"),
    ("CUDA_CACHE_PATH", ".nv/ComputeCache"),
];

/// The user's own folders as this process sees them: where `~` and the model stores are.
struct Theirs {
    home: Option<PathBuf>,
    cache: Option<PathBuf>,
}

impl Theirs {
    fn now() -> Theirs {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let home = var("HOME").map(PathBuf::from);
        let cache = var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".cache")));
        Theirs { home, cache }
    }
}

/// Set the script's environment on `command`: its home, XDG folders and temp dir under
/// `scratch` (made here), the engines' caches below that home, and the folders it may write to.
/// A folder that cannot be made is an error naming it.
pub(super) fn apply(
    command: &mut Command,
    scratch: &Path,
    index: usize,
    writable: &[PathBuf],
) -> Result<(), (PathBuf, std::io::Error)> {
    let theirs = Theirs::now();
    let home = scratch.join(format!("home-{index}"));
    let temp = scratch.join(format!("tmp-{index}"));
    for dir in [&home, &temp] {
        std::fs::create_dir_all(dir).map_err(|e| (dir.clone(), e))?;
    }
    // Packages installed with `pip install --user` stay importable, and the model stores stay
    // where the script reads them from.
    if std::env::var_os("PYTHONUSERBASE").is_none()
        && let Some(home) = &theirs.home
    {
        command.env("PYTHONUSERBASE", home.join(".local"));
    }
    if let Some(cache) = &theirs.cache {
        for (variable, folder) in [("HF_HOME", "huggingface"), ("TORCH_HOME", "torch")] {
            if std::env::var_os(variable).is_none() {
                command.env(variable, cache.join(folder));
            }
        }
    }
    command
        .env("HOME", &home)
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("TMPDIR", &temp)
        .env("TMP", &temp)
        .env("TEMP", &temp)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    for (variable, below) in ENGINE_CACHES {
        let folder = if below.is_empty() {
            home.clone()
        } else {
            home.join(below)
        };
        command.env(variable, folder);
    }
    let mut allowed = OsString::new();
    for dir in writable {
        if !allowed.is_empty() {
            allowed.push(":");
        }
        allowed.push(std::path::absolute(dir).unwrap_or_else(|_| dir.clone()));
    }
    command.env(WRITABLE, allowed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_gets_a_home_of_its_own_and_keeps_user_packages() {
        let scratch = std::env::temp_dir().join(format!("tilefit-env-{}", std::process::id()));
        let mut command = Command::new("env");
        apply(&mut command, &scratch, 2, &[PathBuf::from("out")]).unwrap();
        let output = command.output().unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let made = scratch.join("home-2").is_dir() && scratch.join("tmp-2").is_dir();
        let _ = std::fs::remove_dir_all(&scratch);
        assert!(made, "the home and temp dir are made");
        let home = scratch.join("home-2");
        for line in [
            format!("HOME={}", home.display()),
            format!("XDG_CACHE_HOME={}", home.join(".cache").display()),
            format!("TMPDIR={}", scratch.join("tmp-2").display()),
            format!("TRITON_HOME={}", home.display()),
            "PYTHONDONTWRITEBYTECODE=1".to_owned(),
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        let cwd = std::env::current_dir().unwrap();
        let allowed = format!("{WRITABLE}={}", cwd.join("out").display());
        assert!(text.lines().any(|l| l == allowed), "{allowed} in\n{text}");
        if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            let base = format!(
                "PYTHONUSERBASE={}",
                Path::new(&home).join(".local").display()
            );
            assert!(
                std::env::var_os("PYTHONUSERBASE").is_some() || text.lines().any(|l| l == base),
                "{base} in\n{text}"
            );
        }
    }
}
