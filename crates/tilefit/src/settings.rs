//! The one place command-line flags become the library's run settings (ripgrep's lowargs ->
//! hiargs): probe, replay and verify all get their `compile::Settings` from here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tilefit_core::compile::{Settings, toolchain};

use crate::cli::{CompileArgs, Resources, VerifyArgs};
use crate::commands::output;

/// The number of cores, for `--jobs` left out.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, usize::from)
}

/// Settings for probe and replay: the flags, tilefit's cache, a worker script for fault
/// injection, and SIGINT/SIGTERM wired to the run's cancel flag.
pub fn from_compile_args(
    args: &CompileArgs,
    worker_script: Option<PathBuf>,
) -> anyhow::Result<Settings> {
    Ok(Settings {
        jobs: args.jobs.unwrap_or_else(cores),
        use_cache: !args.no_cache,
        job_timeout: Duration::from_secs(args.timeout.max(1)),
        cache_dir: cache_dir()?,
        worker_script,
        binaries: None,
        full_compile: args.full_compile,
        read_resources: args.resources == Resources::Full,
        cancel: output::cancel_on_signals(),
        worker_start: args.worker_start.into(),
    })
}

/// Settings for verify: the whole compile with binaries kept in `binaries` and read, no result
/// cache (cached outcomes carry no binaries).
pub fn for_verify(args: &VerifyArgs, binaries: &Path) -> anyhow::Result<Settings> {
    Ok(Settings {
        jobs: args.jobs.unwrap_or_else(cores),
        use_cache: false,
        job_timeout: Duration::from_secs(args.timeout.max(1)),
        cache_dir: cache_dir()?,
        worker_script: None,
        binaries: Some(binaries.to_path_buf()),
        full_compile: true,
        read_resources: true,
        cancel: output::cancel_on_signals(),
        worker_start: args.worker_start.into(),
    })
}

/// Settings for merge: nothing compiles; the shards' compile flags, which go into every job.
pub fn for_merge(full_compile: bool, read_resources: bool) -> Settings {
    Settings {
        jobs: 1,
        use_cache: false,
        job_timeout: Duration::from_secs(1),
        cache_dir: toolchain::default_cache_dir(),
        worker_script: None,
        binaries: None,
        full_compile,
        read_resources,
        cancel: tilefit_core::cancel::Cancel::default(),
        worker_start: tilefit_core::compile::WorkerStart::Spawn,
    }
}

/// tilefit's cache folder, checked before any work (a `TILEFIT_CACHE_DIR` that is a file is named
/// as such, not blamed on the spec).
fn cache_dir() -> anyhow::Result<PathBuf> {
    toolchain::usable_cache_dir().map_err(|e| crate::failure::hinted(e.to_string(), e.hint()))
}
