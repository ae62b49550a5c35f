//! One file per subcommand; `run` dispatches. Each command returns the exit code it earned.

mod devices;
mod explain;
pub(crate) mod output;
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
        Command::Report(args) => report::run(&args),
        Command::Verify(args) => verify::run(&args),
        Command::Toolchain(args) => toolchain::run(&args),
    }
}
