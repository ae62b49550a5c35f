//! tilefit's binary: parse arguments, call the library, print, exit with a named code. All
//! knowledge lives in `tilefit-core`; this crate only renders it. Errors go to stderr as
//! `error:` / `Caused by:` / `hint:`; a closed stdout (`tilefit devices | head`) is success.

mod cli;
mod commands;
mod emit;
mod exit_codes;
mod failure;
mod output;
mod progress;
mod session;
mod settings;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(code) => exit_codes::exit(code),
        Err(error) if output::is_broken_pipe(&error) => exit_codes::exit(exit_codes::OK),
        Err(error) => {
            failure::report(&error);
            exit_codes::exit(exit_codes::BAD_INPUT_OR_TOOL_FAILURE)
        }
    }
}
