//! A command's session, built once from its flags (ripgrep's `HiArgs::from_low_args` is the
//! model): the settings the library runs with (jobs, cache, timeouts, SIGINT/SIGTERM wired to the
//! cancel flag), the progress drawn on stderr, and the toolchain the flags ask for, selected with
//! its notes on that progress. Flag conflicts are refused in `settings`, before a session exists.

use std::path::PathBuf;

use tilefit_core::compile::Settings;
use tilefit_core::compile::toolchain::Toolchain;
use tilefit_core::run::toolchains;

use crate::cli::{CompileArgs, PythonArgs};
use crate::progress::Progress;
use crate::settings;

/// What every compiling command runs with.
pub struct Session {
    /// The library's settings.
    pub settings: Settings,
    /// Progress and notes on stderr.
    pub progress: Progress,
}

impl Session {
    /// The session of a command with these compile flags.
    pub fn new(compile: &CompileArgs, worker_script: Option<PathBuf>) -> anyhow::Result<Session> {
        Ok(Session {
            settings: settings::from_compile_args(compile, worker_script)?,
            progress: Progress::new(),
        })
    }

    /// The toolchain `python` asks for (or the spec's `triton`), its provisioning noted.
    pub fn toolchain(
        &self,
        python: &PythonArgs,
        spec_triton: Option<&str>,
    ) -> anyhow::Result<Toolchain> {
        let wanted = settings::wanted(python);
        Ok(toolchains::select(&wanted, spec_triton, &mut |line| {
            self.note(&line);
        })?)
    }

    /// A note on stderr.
    pub fn note(&self, line: &str) {
        self.progress.note(line);
    }
}
