//! One file per subcommand; `run` dispatches. Each command returns the exit code it earned.

mod capture;
mod devices;
mod devices_live;
mod diff;
mod explain;
mod merge;
mod merge_capture;
mod merge_replay;
mod probe;
mod probe_matrix;
mod replay;
mod report;
mod toolchain;
mod verify;

use crate::cli::{Cli, Command, ProbeArgs};
use crate::session::probe::{ProbeMode, ProbeSession};

/// Run the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Devices(args) if args.live => devices_live::run(&args),
        Command::Devices(args) => devices::run(&args),
        Command::Explain(args) => explain::run(&args),
        Command::Probe(args) => probe_command(&args),
        Command::Replay(args) => replay::run(&args),
        Command::Capture(args) => capture::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Merge(args) => match tilefit_core::model::read::shards(&args.shards)? {
            tilefit_core::model::read::Shards::Probe(shards) => merge::run(&args, &shards),
            tilefit_core::model::read::Shards::Replay(shards) => merge_replay::run(&args, &shards),
            tilefit_core::model::read::Shards::Capture(shards) => {
                merge_capture::run(&args, &shards)
            }
        },
        Command::Diff(args) => diff::run(&args),
        Command::Verify(args) => verify::run(&args),
        Command::Toolchain(args) => toolchain::run(&args),
        Command::Completions { shell } => {
            let mut command = <crate::cli::Cli as clap::CommandFactory>::command();
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut command, "tilefit", &mut out);
            crate::output::print(&String::from_utf8_lossy(&out))?;
            Ok(crate::exit_codes::OK)
        }
        Command::Man => {
            let command = <crate::cli::Cli as clap::CommandFactory>::command();
            let mut out = Vec::new();
            clap_mangen::Man::new(command).render(&mut out)?;
            crate::output::print(&String::from_utf8_lossy(&out))?;
            Ok(crate::exit_codes::OK)
        }
    }
}

/// `tilefit probe`: the flags resolved once into a session, then the mode's command.
fn probe_command(args: &ProbeArgs) -> anyhow::Result<u8> {
    let session = ProbeSession::of(args)?;
    match &session.mode {
        ProbeMode::Matrix(versions) => probe_matrix::run(&session, versions),
        _ => probe::run(&session),
    }
}
