//! Compile flags become what the library runs with: the `compile::Settings` of probe, replay,
//! capture, merge and verify, the toolchain asked for, and what a replay shard records. The
//! commands' sessions (and the flags they refuse) are built from these in `session`.

use std::path::PathBuf;
use std::time::Duration;

use tilefit_core::compile::{Reporting, Settings, toolchain};

use tilefit_core::run::toolchains::Wanted;

use crate::cli::{CompileArgs, PythonArgs, Resources, VerifyArgs};
use crate::progress::cancel_on_signals;

/// The number of cores, for `--jobs` left out.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, usize::from)
}

/// Settings for probe, replay and capture: the flags, tilefit's cache, a worker script for fault
/// injection, and SIGINT/SIGTERM wired to the run's cancel flag; with the toolchain the flags ask
/// for.
pub fn of_compile_args(
    args: &CompileArgs,
    worker_script: Option<PathBuf>,
) -> anyhow::Result<(Settings, Wanted)> {
    let settings = Settings {
        jobs: args.jobs.unwrap_or_else(cores),
        use_cache: !args.no_cache,
        job_timeout: Duration::from_secs(args.timeout.max(1)),
        cache_dir: cache_dir()?,
        worker_script,
        binaries: None,
        full_compile: args.full_compile,
        read_resources: args.resources == Resources::Full,
        cancel: cancel_on_signals(),
        worker_start: args.worker_start.into(),
        reporter: Reporting::silent(),
    };
    Ok((settings, wanted(&args.python)))
}

/// Settings for verify: the whole compile, no result cache (cached outcomes carry no binaries);
/// the library keeps the binaries in a scratch folder of its own.
pub fn for_verify(args: &VerifyArgs) -> anyhow::Result<Settings> {
    Ok(Settings {
        jobs: args.jobs.unwrap_or_else(cores),
        use_cache: false,
        job_timeout: Duration::from_secs(args.timeout.max(1)),
        cache_dir: cache_dir()?,
        worker_script: None,
        binaries: None,
        full_compile: true,
        read_resources: true,
        cancel: cancel_on_signals(),
        worker_start: args.worker_start.into(),
        reporter: Reporting::silent(),
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
        reporter: Reporting::silent(),
    }
}

/// tilefit's cache folder, checked before any work (a `TILEFIT_CACHE_DIR` that is a file is named
/// as such, not blamed on the spec).
fn cache_dir() -> anyhow::Result<PathBuf> {
    Ok(toolchain::usable_cache_dir()?)
}

/// The toolchain the flags ask for.
pub fn wanted(args: &PythonArgs) -> Wanted {
    Wanted {
        python: args.python.clone(),
        triton: args.triton.clone(),
    }
}

/// What a replay shard records of the run it belongs to: the cache folders as named (or as
/// found, when none was named).
pub fn replay_invocation(
    args: &crate::cli::ReplayArgs,
    caches: &[PathBuf],
    settings: &Settings,
) -> tilefit_core::model::shard::ReplayInvocation {
    let named = if args.dirs.is_empty() {
        caches
    } else {
        &args.dirs
    };
    tilefit_core::model::shard::ReplayInvocation {
        dirs: named.iter().map(|d| d.display().to_string()).collect(),
        targets: args.targets.clone(),
        full_compile: settings.full_compile,
        read_resources: settings.read_resources,
    }
}
