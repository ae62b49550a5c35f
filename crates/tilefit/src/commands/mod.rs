//! One file per subcommand; `run` dispatches. Each command returns the exit code it earned.

mod capture;
mod devices;
mod diff;
mod explain;
mod merge;
mod probe;
mod replay;
mod report;
mod toolchain;
mod verify;

use crate::cli::{Cli, Command};

/// Run the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Devices(args) => devices::run(&args),
        Command::Explain(args) => explain::run(&args),
        Command::Probe(args) => probe::run(&args),
        Command::Replay(args) => replay::run(&args),
        Command::Capture(args) => capture::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Merge(args) => merge::run(&args),
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
