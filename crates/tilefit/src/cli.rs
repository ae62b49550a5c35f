//! Command-line shape: clap derive structs only. Parsing here, meaning in `commands/`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    /// Compile a kernel's configs for every target arch and judge them against each device.
    ///
    /// Uses the real Triton compiler in cross-compilation mode: no GPU needed. Prints the sweep
    /// table (configs x devices) and the recommended config per device.
    Probe(ProbeArgs),
    /// Recompile every kernel in Triton cache directories for every target, and judge it.
    ///
    /// Reads `~/.triton/cache` and `TRITON_CACHE_DIR` when no directory is given. Only the cached
    /// IR reaches the compiler: nothing from the cache is imported or executed.
    Replay(ReplayArgs),
    /// List or install the Python + Triton environments tilefit manages.
    Toolchain(ToolchainArgs),
}

/// What makes a gate fail (exit 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Any config or kernel over any listed device's per-block budget.
    OverBudget,
    /// Any compile error (unsupported-on-target included).
    CompileError,
}

/// `tilefit replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Triton cache directories (default: `TRITON_CACHE_DIR`, then `~/.triton/cache`).
    pub dirs: Vec<PathBuf>,
    /// Devices or archs to judge, comma-separated (default: one device per budget class).
    #[arg(long, value_delimiter = ',', value_name = "A,B,C")]
    pub targets: Vec<String>,
    /// Only index the caches and list the kernels found; compile nothing.
    #[arg(long)]
    pub list: bool,
    /// Write the report as JSON to FILE (`-` for stdout, which then carries only the JSON).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Print the report as Markdown instead of the terminal table.
    #[arg(long)]
    pub markdown: bool,
    /// Exit 1 when a kernel would fail this way on a listed device.
    #[arg(long, value_enum, value_name = "WHAT")]
    pub fail_on: Vec<FailOn>,
    /// Worker processes (default: the number of cores).
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// Ignore and do not write the result cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Seconds one compile may take before its worker is killed and the job marked failed.
    #[arg(long, default_value_t = 300, value_name = "SECONDS")]
    pub timeout: u64,
    #[command(flatten)]
    pub python: PythonArgs,
}

/// Choosing the Python that compiles.
#[derive(Debug, Args)]
pub struct PythonArgs {
    /// Python interpreter with triton installed (default: a managed environment per Triton version).
    #[arg(long, env = "TILEFIT_PYTHON", value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Triton version for the managed environment (default: the spec's, else tilefit's pinned one).
    #[arg(long, value_name = "VERSION")]
    pub triton: Option<String>,
}

/// `tilefit probe`.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// The probe spec (TOML).
    pub spec: PathBuf,
    /// Devices or archs to judge, comma-separated; overrides the spec's [targets].
    #[arg(long, value_delimiter = ',', value_name = "A,B,C")]
    pub targets: Vec<String>,
    /// Write the report as JSON to FILE (`-` for stdout, which then carries only the JSON).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Print the report as Markdown instead of the terminal table.
    #[arg(long)]
    pub markdown: bool,
    /// Exit 1 when a config would fail this way on a listed device.
    #[arg(long, value_enum, value_name = "WHAT")]
    pub fail_on: Vec<FailOn>,
    /// Worker processes (default: the number of cores).
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// Ignore and do not write the result cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Seconds one compile may take before its worker is killed and the job marked failed.
    #[arg(long, default_value_t = 300, value_name = "SECONDS")]
    pub timeout: u64,
    #[command(flatten)]
    pub python: PythonArgs,
    /// Run this worker script instead of the embedded one (testing only).
    #[arg(long, env = "TILEFIT_WORKER_SCRIPT", hide = true)]
    pub worker_script: Option<PathBuf>,
}

/// `tilefit toolchain`.
#[derive(Debug, Args)]
pub struct ToolchainArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: ToolchainAction,
}

/// `tilefit toolchain list|install`.
#[derive(Debug, Subcommand)]
pub enum ToolchainAction {
    /// The managed environments, and the interpreter TILEFIT_PYTHON names.
    List,
    /// Make the managed environment for a Triton version (pip install triton==VERSION).
    Install {
        /// The Triton version.
        #[arg(value_name = "VERSION")]
        triton_version: String,
    },
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
