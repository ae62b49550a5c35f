//! `tilefit capture`'s whole flag set as a [`CaptureSession`], in one pass: the flags a capture
//! refuses, the targets, the shard, the session, the run the library makes and where its results
//! go; the command then reads the session, never the flags.

use std::path::PathBuf;

use tilefit_core::device::TargetDevice;
use tilefit_core::hint::Hinted;
use tilefit_core::plan::shard::Shard;
use tilefit_core::run::{capture, fleet};

use super::{Session, shard};
use crate::cli::{CaptureArgs, OutputArgs};

/// `tilefit capture`'s flags, resolved once.
pub struct CaptureSession<'a> {
    /// Settings, toolchain wanted, progress.
    pub session: Session,
    /// The flags, for the run's borrowed parts (the script, its arguments, the allowed folders).
    args: &'a CaptureArgs,
    /// The fleet: `--targets`, or the default.
    targets: Vec<TargetDevice>,
    /// `--shard K/N`.
    shard: Option<Shard>,
    /// `--json`, `--output-format`, the gate's flags.
    pub output: OutputArgs,
    /// `--junit FILE`.
    pub junit: Option<PathBuf>,
    /// `--emit-spec DIR`.
    pub emit_spec: Option<PathBuf>,
}

impl<'a> CaptureSession<'a> {
    /// The session of `tilefit capture ARGS`: conflicting flags are refused before anything runs.
    pub fn of(args: &'a CaptureArgs) -> anyhow::Result<CaptureSession<'a>> {
        conflicts(args)?;
        let targets = fleet::of_names(&args.targets)?;
        let shard = shard(args.shard.as_deref(), args.output.json.as_deref())?;
        let session = Session::new(&args.compile, args.worker_script.clone())?;
        Ok(CaptureSession {
            session,
            args,
            targets,
            shard,
            output: args.output.clone(),
            junit: args.junit.clone(),
            emit_spec: args.emit_spec.clone(),
        })
    }

    /// The run the library makes.
    pub fn run(&self) -> capture::CaptureRun<'_> {
        let args = self.args;
        capture::CaptureRun {
            script: args.script.as_deref().unwrap_or(std::path::Path::new("")),
            module: args.module.as_deref(),
            args: &args.script_args,
            targets: &self.targets,
            timeout: std::time::Duration::from_secs(args.script_timeout),
            allow_empty: args.allow_empty,
            allow_stopped: args.allow_stopped,
            shard: self.shard,
            writable: &args.allow_writes,
        }
    }
}

/// The flags a capture refuses, each with what to do instead.
fn conflicts(args: &CaptureArgs) -> anyhow::Result<()> {
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
