//! `tilefit replay`'s whole flag set as a [`ReplaySession`], in one pass: the shard (which needs
//! `--json`), the caches read and indexed, the fleet and the session; the command then reads the
//! session, never the flags.

use tilefit_core::compile::toolchain;
use tilefit_core::device::TargetDevice;
use tilefit_core::model::shard::ReplayInvocation;
use tilefit_core::plan::shard::Shard;
use tilefit_core::run::{fleet, replay};

use super::{Session, shard};
use crate::cli::{OutputArgs, ReplayArgs};

/// `tilefit replay`'s flags, resolved once.
pub struct ReplaySession<'a> {
    /// The caches named (or found) and what they hold.
    pub inputs: replay::Inputs,
    /// The fleet: `--targets`, or the default.
    pub targets: Vec<TargetDevice>,
    /// `--shard K/N`.
    pub shard: Option<Shard>,
    /// `--json`, `--output-format`, the gate's flags.
    pub output: &'a OutputArgs,
    /// Settings, toolchain wanted, progress; `None` for `--list`, which compiles nothing.
    pub session: Option<Session>,
    args: &'a ReplayArgs,
}

impl<'a> ReplaySession<'a> {
    /// The session of `tilefit replay ARGS`: a bad shard or target is refused before a kernel is
    /// compiled.
    pub fn of(args: &'a ReplayArgs) -> anyhow::Result<ReplaySession<'a>> {
        let shard = shard(args.shard.as_deref(), args.output.json.as_deref())?;
        let inputs = replay::inputs(&args.dirs, &toolchain::default_cache_dir(), shard.is_some())?;
        let (targets, session) = if args.list {
            (Vec::new(), None)
        } else {
            let targets = fleet::of_names(&args.targets)?;
            (targets, Some(Session::new(&args.compile, None)?))
        };
        Ok(ReplaySession {
            inputs,
            targets,
            shard,
            output: &args.output,
            session,
            args,
        })
    }

    /// What a shard's results record of the command, so `tilefit merge` can check the shards
    /// belong together.
    pub fn invocation(&self, session: &Session) -> ReplayInvocation {
        crate::settings::replay_invocation(self.args, &self.inputs.caches, &session.settings)
    }
}
