//! The one place command-line flags become what the library runs with (ripgrep's lowargs ->
//! hiargs): the `compile::Settings` of probe, replay, merge and verify, the toolchain asked for,
//! and each mode resolved once, up front, before any work: a probe is a single run, a version
//! matrix, a shard or a job dump; a replay is a run, a shard or a listing.

use std::path::PathBuf;
use std::time::Duration;

use tilefit_core::compile::{Settings, toolchain};

use tilefit_core::hint::Hinted;
use tilefit_core::model::shard::Invocation;
use tilefit_core::plan::shard::Shard;
use tilefit_core::run::probe::ProbeRun;
use tilefit_core::run::toolchains::{Wanted, unsupported};

use crate::cli::{CompileArgs, ProbeArgs, PythonArgs, Resources, VerifyArgs};
use crate::progress::cancel_on_signals;

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
        cancel: cancel_on_signals(),
        worker_start: args.worker_start.into(),
    })
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
    Ok(toolchain::usable_cache_dir()?)
}

/// The toolchain the flags ask for.
pub fn wanted(args: &PythonArgs) -> Wanted {
    Wanted {
        python: args.python.clone(),
        triton: args.triton.clone(),
    }
}

/// What a shard records of the run it belongs to.
pub fn invocation(args: &ProbeArgs, settings: &Settings) -> Invocation {
    Invocation {
        spec: args.spec.display().to_string(),
        targets: args.targets.clone(),
        full_compile: settings.full_compile,
        read_resources: settings.read_resources,
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

/// The flags a capture refuses, each with what to do instead.
pub fn capture_conflicts(args: &crate::cli::CaptureArgs) -> anyhow::Result<()> {
    if args.output.html.is_some() {
        return Err(Hinted::new(
            "`--html` draws a probe's cliff map; a capture has none",
            "use `--json FILE` or `--output-format markdown`",
        )
        .into());
    }
    if args.output.shipped.is_some() {
        return Err(Hinted::new(
            "`--shipped` names the configs an engine ships; a capture judges the configs the script launched",
            "leave `--shipped` out: a launch over budget fails the capture by default",
        )
        .into());
    }
    if args.compile.python.triton.is_some() {
        return Err(Hinted::new(
            "`--triton` picks a managed Triton, which has no torch and none of the engine's packages: a capture runs the script in its own environment",
            "pass `--python` of an environment with torch, the engine and the Triton to judge",
        )
        .into());
    }
    Ok(())
}

/// What a probe run does besides the probe: `--triton-from-files` (with `--python` where it is
/// that version) and `--emit-files`.
pub fn probe_run(args: &ProbeArgs) -> ProbeRun<'_> {
    ProbeRun {
        triton_from_files: args
            .triton_from_files
            .then_some(args.compile.python.python.as_deref()),
        emit_files: args.emit_files.is_some(),
    }
}

/// What `tilefit probe` does, decided from the flags before any work.
pub enum ProbeMode {
    /// One run with one Triton.
    Single,
    /// The run once per Triton version (`--triton A,B`).
    Matrix(Vec<String>),
    /// One shard of the run (`--shard K/N`), its results to `--json`.
    Shard(Shard),
    /// The planned jobs to a file, nothing compiled (`--dump-jobs`).
    DumpJobs(PathBuf),
}

impl ProbeMode {
    /// The mode of `tilefit probe`'s flags; flags that do not go together are refused here.
    pub fn of(args: &ProbeArgs) -> anyhow::Result<ProbeMode> {
        let shard = shard(args.shard.as_deref(), args.output.json.as_deref())?;
        if shard.is_some() && (args.dump_jobs.is_some() || args.emit_configs.is_some()) {
            return Err(Hinted::new(
                "--shard: `--dump-jobs` and `--emit-configs` need the whole run",
                "give `--emit-configs` to `tilefit merge` instead",
            )
            .into());
        }
        if let Some(dir) = &args.emit_files {
            // Checked before any work: a link as the output folder is refused.
            tilefit_core::write::prepare_dir(dir)?;
        }
        if args.emit_files.is_some()
            && (shard.is_some() || args.dump_jobs.is_some() || args.triton_from_files)
        {
            return Err(Hinted::new(
                "`--emit-files` needs the whole run, judged with one Triton",
                "run it without `--shard`, `--dump-jobs` and `--triton-from-files`",
            )
            .into());
        }
        if let Some(text) = &args.compile.python.triton {
            // Checked and deduplicated by `--triton`'s value parser; the same parser splits it.
            let versions = toolchain::parse_versions(text)?;
            for version in &versions {
                if let Some(why) = unsupported(version) {
                    let hint = if versions.len() > 1 {
                        "leave it out, or judge with 3.5.1 or later"
                    } else {
                        "judge with 3.5.1 or later"
                    };
                    let given = if versions.len() > 1 {
                        format!("--triton {text}: {why}")
                    } else {
                        format!("--triton: {why}")
                    };
                    return Err(Hinted::new(given, hint).into());
                }
            }
            if versions.len() > 1 {
                let refuse = |what: &str, hint: &str| -> anyhow::Result<ProbeMode> {
                    Err(Hinted::new(format!("--triton {text}: {what}"), hint).into())
                };
                if args.shard.is_some() {
                    return refuse(
                        "a version matrix cannot be sharded",
                        "shard one version at a time: `--triton 3.6.0 --shard K/N`",
                    );
                }
                if args.dump_jobs.is_some()
                    || args.emit_configs.is_some()
                    || args.emit_files.is_some()
                    || args.output.html.is_some()
                {
                    return refuse(
                        "`--dump-jobs`, `--emit-configs`, `--emit-files` and `--html` take one Triton version",
                        "run those with `--triton VERSION`",
                    );
                }
                return Ok(ProbeMode::Matrix(versions));
            }
        }
        Ok(match (shard, &args.dump_jobs) {
            (Some(shard), _) => ProbeMode::Shard(shard),
            (None, Some(path)) => ProbeMode::DumpJobs(path.clone()),
            (None, None) => ProbeMode::Single,
        })
    }
}

/// `--shard K/N` or `auto` (from the schedulers' variables); a shard needs `--json`.
pub fn shard(text: Option<&str>, json: Option<&str>) -> anyhow::Result<Option<Shard>> {
    let Some(text) = text else {
        return Ok(None);
    };
    let shard = if text.trim() == "auto" {
        Shard::from_env(|name| std::env::var(name).ok())
    } else {
        Shard::parse(text)
    }
    .map_err(|e| {
        Hinted::new(
            format!("--shard: {e}"),
            "give `--shard 2/3` (or TILEFIT_SHARD=2/3), one value of K per machine",
        )
    })?;
    if json.is_none() {
        return Err(Hinted::new(
            "--shard: a shard's results go to a file, for `tilefit merge`",
            "add `--json shard-K.json`, then run `tilefit merge shard-*.json` once every shard is done",
        )
        .into());
    }
    Ok(Some(shard))
}
