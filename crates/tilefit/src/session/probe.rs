//! `tilefit probe`'s whole flag set as a [`ProbeSession`], in one pass: the mode (flags that do
//! not go together refused before anything is read), the spec, the targets, what a shard records
//! and where the results go (the `--emit-files` folder made once every flag is accepted).

use std::path::PathBuf;

use tilefit_core::compile::toolchain as versions;
use tilefit_core::device::TargetDevice;
use tilefit_core::hint::Hinted;
use tilefit_core::input::spec::{self, Sweep};
use tilefit_core::judge::gate::Rule;
use tilefit_core::model::shard::Invocation;
use tilefit_core::plan::shard::Shard;
use tilefit_core::run::fleet;
use tilefit_core::run::probe::ProbeRun;
use tilefit_core::run::toolchains::unsupported;

use super::{Session, shard};
use crate::cli::{OutputArgs, ProbeArgs, Resources};

/// Where a probe's results go besides its report: the flags the finish reads.
pub struct ProbeOutputs {
    /// `--json`, `--html`, `--output-format`, the gate's flags.
    pub output: OutputArgs,
    /// `--emit-configs FILE`.
    pub emit_configs: Option<PathBuf>,
    /// `--emit-files DIR`.
    pub emit_files: Option<PathBuf>,
}

/// `tilefit probe`'s flags, resolved once.
pub struct ProbeSession {
    /// Settings, toolchain wanted, progress.
    pub session: Session,
    /// A single run, a version matrix, a shard or a job dump.
    pub mode: ProbeMode,
    /// The spec, read.
    pub spec: Sweep,
    /// The fleet: `--targets`, or the spec's, or the default.
    pub targets: Vec<TargetDevice>,
    /// What a shard records of the run.
    pub invocation: Invocation,
    /// `--triton-from-files`.
    pub triton_from_files: bool,
    /// Where the results go.
    pub outputs: ProbeOutputs,
}

impl ProbeSession {
    /// The session of `tilefit probe ARGS`: conflicting flags are refused before the spec is read.
    pub fn of(args: &ProbeArgs) -> anyhow::Result<ProbeSession> {
        let mode = ProbeMode::of(args)?;
        let spec = spec::load(&args.spec)?;
        let targets = fleet::of_spec(&spec, &args.targets)?;
        let session = Session::new(&args.compile, args.worker_script.clone())?;
        let invocation = Invocation {
            spec: args.spec.display().to_string(),
            targets: args.targets.clone(),
            full_compile: session.settings.full_compile,
            read_resources: session.settings.read_resources,
        };
        Ok(ProbeSession {
            session,
            mode,
            spec,
            targets,
            invocation,
            triton_from_files: args.triton_from_files,
            outputs: ProbeOutputs {
                output: args.output.clone(),
                emit_configs: args.emit_configs.clone(),
                emit_files: args.emit_files.clone(),
            },
        })
    }

    /// What the run does besides the probe: `--triton-from-files` (with `--python` where it is
    /// that version) and `--emit-files`.
    pub fn run(&self) -> ProbeRun<'_> {
        ProbeRun {
            triton_from_files: self
                .triton_from_files
                .then_some(self.session.wanted.python.as_deref()),
            emit_files: self.outputs.emit_files.is_some(),
        }
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
        refused_with(args, shard.is_some())?;
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
            let versions = versions::parse_versions(text)?;
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
        if let Some(dir) = &args.emit_files {
            // Made only once every flag is accepted; a link as the output folder is refused.
            tilefit_core::write::prepare_dir(dir)?;
        }
        Ok(match (shard, &args.dump_jobs) {
            (Some(shard), _) => ProbeMode::Shard(shard),
            (None, Some(path)) => ProbeMode::DumpJobs(path.clone()),
            (None, None) => ProbeMode::Single,
        })
    }
}

/// Flags a probe cannot honour together, each refused with what to do instead: a shard draws no
/// cliff map (the merge does), and `--fail-on spills` judges what only `--resources full`
/// reads (without it the rule could never fire, and the gate would pass unjudged).
fn refused_with(args: &ProbeArgs, sharded: bool) -> anyhow::Result<()> {
    if sharded && args.output.html.is_some() {
        return Err(Hinted::new(
            "--shard: `--html` draws the whole run's cliff map",
            "give `--html` to `tilefit merge` instead",
        )
        .into());
    }
    let needs_binaries = [Rule::Spills];
    if let Some(rule) = args
        .output
        .fail_on
        .iter()
        .find(|r| needs_binaries.contains(r))
        && args.compile.resources != Resources::Full
    {
        return Err(Hinted::new(
            format!(
                "`--fail-on {}` judges what is read from each binary (registers, spills), which this run does not read",
                rule.name()
            ),
            "add `--resources full`",
        )
        .into());
    }
    Ok(())
}
