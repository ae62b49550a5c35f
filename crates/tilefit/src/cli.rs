//! Command-line shape: clap derive structs only. Parsing here, meaning in `commands/`.

use clap::{Args, Parser, Subcommand};

/// Find the GPU shared-memory cliff before users fall off it.
///
/// tilefit says whether a Triton kernel config fits each GPU's per-block shared-memory budget,
/// from a sourced table of budgets and the real Triton compiler, on a machine with no GPU.
#[derive(Debug, Parser)]
#[command(name = "tilefit", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List GPU budgets (shared memory, registers, threads, blocks), with their sources.
    ///
    /// Without names: every known arch and product, grouped by per-block shared-memory budget.
    /// With names (products, aliases, `sm_120`, `12.0`, `gfx942`): those devices, each value with
    /// its sources.
    Devices(DevicesArgs),
    /// Explain a GPU resource error: what its numbers mean, which devices, what to change.
    ///
    /// Reads the message from the arguments, or from standard input when none is given or it is `-`.
    Explain(ExplainArgs),
}

/// `tilefit devices`.
#[derive(Debug, Args)]
pub struct DevicesArgs {
    /// Devices to show: product names as people type them or as torch prints them, or archs.
    pub names: Vec<String>,
    /// Print JSON (schema_version 1) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `tilefit explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The error message (quoted), or `-` to read it from standard input.
    pub message: Vec<String>,
    /// Print JSON (schema_version 1) instead of prose.
    #[arg(long)]
    pub json: bool,
}
