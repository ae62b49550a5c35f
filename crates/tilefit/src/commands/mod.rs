//! One file per subcommand; `run` dispatches. Each command returns the exit code it earned.

mod devices;
mod explain;
mod output;
mod probe;
mod replay;
mod toolchain;

use crate::cli::{Cli, Command};

/// Run the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Devices(args) => devices::run(&args),
        Command::Explain(args) => explain::run(&args),
        Command::Probe(args) => probe::run(&args),
        Command::Replay(args) => replay::run(&args),
        Command::Toolchain(args) => toolchain::run(&args),
    }
}

/// The gate: the findings `--fail-on` asks about, worded on one stderr line. Returns whether the
/// gate failed.
pub fn gate(
    fail_on: &[crate::cli::FailOn],
    over_budget: &[(String, String, u64)],
    compile_errors: &[(String, String)],
) -> bool {
    use crate::cli::FailOn;
    let mut findings: Vec<String> = Vec::new();
    if fail_on.contains(&FailOn::OverBudget) {
        findings.extend(over_budget.iter().map(|(what, device, over)| {
            format!(
                "{what} on {device} (+{})",
                tilefit_core::units::format_count(*over)
            )
        }));
    }
    if fail_on.contains(&FailOn::CompileError) {
        findings.extend(
            compile_errors
                .iter()
                .map(|(what, arch)| format!("{what} does not compile for {arch}")),
        );
    }
    if findings.is_empty() {
        return false;
    }
    let shown: Vec<&str> = findings.iter().take(5).map(String::as_str).collect();
    let more = findings.len().saturating_sub(shown.len());
    eprintln!(
        "tilefit: gate failed ({} finding{}): {}{}",
        findings.len(),
        if findings.len() == 1 { "" } else { "s" },
        shown.join("; "),
        if more > 0 {
            format!("; and {more} more")
        } else {
            String::new()
        }
    );
    true
}
