//! A command's session, built once from its flags (ripgrep's `HiArgs::from_low_args` is the
//! model): the settings the library runs with (jobs, cache, timeouts, SIGINT/SIGTERM wired to the
//! cancel flag, the reporter), the toolchain the flags ask for, and the progress drawn on stderr.
//! A command's whole flag set becomes its session in one pass ([`probe::ProbeSession`],
//! [`capture::CaptureSession`], [`replay::ReplaySession`], [`verify::VerifySession`]): the flags that do not go together refused before anything is read or
//! run, the targets, what the run writes; the commands then read the session, never the flags.

pub mod capture;
pub mod probe;
pub mod replay;
pub mod verify;

use std::path::PathBuf;
use std::sync::Arc;

use tilefit_core::hint::Hinted;
use tilefit_core::plan::shard::Shard;

use tilefit_core::compile::toolchain::Toolchain;
use tilefit_core::compile::{Reporting, Settings};
use tilefit_core::run::toolchains::{self, Wanted};

use crate::cli::CompileArgs;
use crate::progress::Progress;
use crate::settings;

/// What every compiling command runs with.
pub struct Session {
    /// The library's settings.
    pub settings: Settings,
    /// The interpreter or Triton version `--python`/`--triton` ask for.
    pub wanted: Wanted,
    /// Progress and notes on stderr: the run's reporter (the settings carry it).
    pub progress: Arc<Progress>,
}

impl Session {
    /// The session of a command with these compile flags.
    pub fn new(compile: &CompileArgs, worker_script: Option<PathBuf>) -> anyhow::Result<Session> {
        let (mut settings, wanted) = settings::of_compile_args(compile, worker_script)?;
        let progress = Arc::new(Progress::new());
        settings.reporter = Reporting::to(progress.clone());
        Ok(Session {
            settings,
            wanted,
            progress,
        })
    }

    /// The toolchain the flags ask for (or the spec's `triton`), its provisioning noted.
    pub fn toolchain(&self, spec_triton: Option<&str>) -> anyhow::Result<Toolchain> {
        Ok(toolchains::select(
            &self.wanted,
            spec_triton,
            &*self.progress,
        )?)
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
