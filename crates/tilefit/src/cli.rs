//! Command-line shape: clap derive structs only. Parsing here, meaning in `commands/`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use tilefit_core::judge::gate::Rule;

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
    /// Recompile every kernel in Triton cache directories for every target, and judge it; judge a
    /// shipped AOTInductor package's kernels as its host code asks.
    ///
    /// Reads `~/.triton/cache` and `TRITON_CACHE_DIR` when no directory is given. Only the cached
    /// IR reaches the compiler: nothing from the cache is imported or executed. A `.pt2` (or the
    /// folder it unzips to) is read, never run: each kernel's recorded bytes and warps on every
    /// device one of its binary's images loads on (`--fail-on compile-error` also fails where
    /// none loads).
    Replay(ReplayArgs),
    /// Run a script's host code as if on each target GPU, and judge every launch it makes.
    ///
    /// Each target runs the script in its own Python process under an emulated device (torch's
    /// and Triton's device queries answer from the device table; tensors are fakes with shapes,
    /// strides and dtypes, no storage), on a machine with no GPU. Every `kernel[grid](...)` is
    /// recorded instead of run, an autotuned one with every config it would try, then compiled
    /// for the target's arch and judged.
    Capture(CaptureArgs),
    /// Render a saved `--json` report (probe or replay) again: terminal, Markdown, HTML, gate.
    Report(ReportArgs),
    /// What changed between two probe reports (`--json`): bytes per config and arch, and verdict
    /// flips; exits 1 when a config that fit a device no longer does.
    ///
    /// With one version-matrix report (`probe --triton A,B --json`), each version against the next.
    Diff(DiffArgs),
    /// Put the shards of a sharded probe or replay (`--shard K/N --json SHARD.json`) back into
    /// one report.
    ///
    /// Plans the run again from the spec (or the caches) the shards ran, which must be here
    /// unchanged, and takes each job's result from its shard: no Python or Triton needed.
    /// Refuses shards of different inputs, and a run with a shard missing.
    Merge(MergeArgs),
    /// On a machine with an NVIDIA GPU: compile for its arch and check every prediction against
    /// the driver (does it accept the kernel's shared memory, does a block fit an SM).
    Verify(VerifyArgs),
    /// List or install the Python + Triton environments tilefit manages.
    Toolchain(ToolchainArgs),
    /// Print shell completions (bash, zsh, fish, elvish, powershell) for tilefit.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print tilefit's man page (roff), generated from the same definitions as `--help`.
    Man,
}

/// Where and how a report is written, and the gate; shared by probe, replay and report.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Write the report as JSON to FILE (`-` for stdout, which then carries only the JSON).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Print the report as Markdown instead of the terminal table.
    #[arg(long)]
    pub markdown: bool,
    /// `terminal`, `markdown`, or `github`: the terminal table plus `::error` annotations on the
    /// kernel's `@triton.jit` line or a config file's entry (the default when
    /// `GITHUB_ACTIONS=true`).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub output_format: Option<OutputFormat>,
    /// Also append the Markdown report to `$GITHUB_STEP_SUMMARY` (the log keeps the table).
    #[arg(long)]
    pub summary: bool,
    /// Write the cliff map, a self-contained HTML report, to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Exit 1 when a result fails this way on a listed device: baseline (the shipped config
    /// misses a device), none-fits (an autotune list or config file leaves a device with nothing
    /// that fits), over-budget, compile-error, near-budget[=PCT] (default 90),
    /// over-thread-limit (num_warps x warp size over the device's threads per block, or over
    /// what the registers leave with `--resources full`), with `--resources full` spills, with
    /// config files unmapped-files and
    /// unreadable-files (on with `--emit-files`), and for a
    /// capture stopped (a call that needed what emulation lacks) or none (report only; a capture
    /// fails on baseline and none-fits when no rule is named). Repeat or comma-separate.
    #[arg(long, value_name = "WHAT", value_delimiter = ',', value_parser = Rule::parse)]
    pub fail_on: Vec<Rule>,
    /// Only findings absent from this earlier report (`--json` of probe or replay) fail the gate:
    /// adopt the gate on code that already has findings.
    #[arg(long, value_name = "OLD.json")]
    pub baseline: Option<PathBuf>,
    /// The configs shipped per arch (an `--emit-configs` JSON): `--fail-on baseline` judges
    /// those instead of the spec's baseline.
    #[arg(long, value_name = "CONFIGS.json")]
    pub shipped: Option<PathBuf>,
}

/// How the report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// The terminal table.
    Terminal,
    /// Markdown tables.
    Markdown,
    /// The terminal table and GitHub annotations.
    Github,
}

impl OutputArgs {
    /// The format asked for: `--output-format`, `--markdown`, else `github` under GitHub Actions,
    /// else the terminal table.
    pub fn format(&self) -> OutputFormat {
        if let Some(format) = self.output_format {
            return format;
        }
        if self.markdown {
            return OutputFormat::Markdown;
        }
        if std::env::var_os("GITHUB_ACTIONS").is_some_and(|v| v == "true") {
            OutputFormat::Github
        } else {
            OutputFormat::Terminal
        }
    }
}

/// `tilefit verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// A probe spec (.toml), a Triton cache directory, or a saved report (.json).
    pub input: PathBuf,
    /// The GPU to use (CUDA ordinal).
    #[arg(long, default_value_t = 0)]
    pub device: i32,
    /// Write the verification as JSON to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Also launch each config once through Triton's JIT on zero-filled scratch buffers (the
    /// spec's [launch] table: grid, buffer_bytes). Needs torch; spec inputs only.
    #[arg(long)]
    pub launch: bool,
    /// Worker processes (default: the number of cores).
    #[arg(long, short = 'j', value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<usize>,
    /// Seconds one compile may take.
    #[arg(long, default_value_t = 300, value_name = "SECONDS", value_parser = parse_timeout)]
    pub timeout: u64,
    /// How workers start (see probe's `--worker-start`).
    #[arg(long, value_enum, default_value_t = StartArg::Fork, env = "TILEFIT_WORKER_START", hide = true)]
    pub worker_start: StartArg,
    #[command(flatten)]
    pub python: PythonArgs,
}

/// `tilefit report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A report saved with `--json` by `tilefit probe` or `tilefit replay`.
    pub results: PathBuf,
    #[command(flatten)]
    pub output: OutputArgs,
    /// For a probe report: write the recommended config per arch as JSON an engine can load.
    #[arg(long, value_name = "FILE")]
    pub emit_configs: Option<PathBuf>,
}

/// `tilefit replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Triton cache directories, Inductor caches, tritonparse traces (`.ndjson`) or AOTInductor
    /// packages (`.pt2`, or the folder one unzips to) (default: `TRITON_CACHE_DIR`,
    /// `~/.triton/cache` and the Inductor cache of `torch.compile`).
    #[arg(value_name = "DIRS_OR_PACKAGES")]
    pub dirs: Vec<PathBuf>,
    /// Devices or archs to judge, comma-separated (default: one device per budget class).
    #[arg(long, value_delimiter = ',', value_name = "A,B,C")]
    pub targets: Vec<String>,
    /// Only index the caches and list the kernels found; compile nothing.
    #[arg(long)]
    pub list: bool,
    /// Recompile only shard K of N (`2/3`) and write it to `--json` for `tilefit merge`, as
    /// `probe --shard` does (`auto`: from a Kubernetes Indexed Job or a Slurm array).
    #[arg(long, env = "TILEFIT_SHARD", value_name = "K/N|auto")]
    pub shard: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub compile: CompileArgs,
}

/// How compiles run: shared by probe and replay.
#[derive(Debug, Args)]
pub struct CompileArgs {
    /// Worker processes (default: the number of cores).
    #[arg(long, short = 'j', value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<usize>,
    /// Ignore and do not write the result cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Seconds one compile may take before its worker is killed and the job marked failed.
    #[arg(long, default_value_t = 300, value_name = "SECONDS", value_parser = parse_timeout)]
    pub timeout: u64,
    /// Compile through the cubin instead of stopping once shared memory is allocated (slower;
    /// the sizes are the same, which the tests check on every example).
    #[arg(long)]
    pub full_compile: bool,
    /// `shared`: shared memory only (stops the compile early). `full`: compile to the binary for
    /// every target and read registers, local memory, spills and launch bounds from it, then
    /// judge the thread limit and occupancy per device.
    #[arg(long, value_enum, default_value_t = Resources::Shared, value_name = "WHAT")]
    pub resources: Resources,
    /// How workers start: `fork` from a warmed zygote per arch (Linux; spawns where forking is
    /// refused), or `spawn` a fresh Python each.
    #[arg(long, value_enum, default_value_t = StartArg::Fork, env = "TILEFIT_WORKER_START", hide = true)]
    pub worker_start: StartArg,
    #[command(flatten)]
    pub python: PythonArgs,
}

/// `--worker-start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StartArg {
    /// Fork from a zygote per arch.
    Fork,
    /// Spawn a Python per worker.
    Spawn,
}

impl From<StartArg> for tilefit_core::compile::WorkerStart {
    fn from(start: StartArg) -> Self {
        match start {
            StartArg::Fork => tilefit_core::compile::WorkerStart::Fork,
            StartArg::Spawn => tilefit_core::compile::WorkerStart::Spawn,
        }
    }
}

/// What `--resources` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Resources {
    /// Shared memory only.
    Shared,
    /// Shared memory, registers, local memory, spills, threads and occupancy.
    Full,
}

/// Choosing the Python that compiles.
#[derive(Debug, Args)]
pub struct PythonArgs {
    /// Python interpreter with triton installed (default: a managed environment per Triton version).
    #[arg(long, env = "TILEFIT_PYTHON", value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Triton version for the managed environment (default: the spec's, else tilefit's pinned one).
    /// `probe` takes several, comma-separated (`3.5.1,3.6.0,3.7.1`): every job is compiled with
    /// each, one column group per version in the report.
    #[arg(long, value_name = "VERSION[,VERSION...]", value_parser = parse_triton)]
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
    #[command(flatten)]
    pub output: OutputArgs,
    /// Write the recommended config per arch as JSON an engine can load (keyed by arch and by
    /// device name); for an autotuned kernel also the autotune configs that fit each device, and
    /// with a `.py` FILE those as a Python module of `triton.Config`s.
    #[arg(long, value_name = "FILE")]
    pub emit_configs: Option<PathBuf>,
    /// With `[sweep] from_files`: write engine-ready config files into DIR: patched copies of the
    /// files whose entries miss their own device, new files for the fleet's devices that have
    /// none (named as the engine names them), `SUMMARY.md` for a pull request and
    /// `tilefit-provenance.json`. Every changed entry is compiled and judged.
    #[arg(long, value_name = "DIR")]
    pub emit_files: Option<PathBuf>,
    #[command(flatten)]
    pub compile: CompileArgs,
    /// Also judge each config file's entries with the Triton the file records it was tuned with
    /// (its `triton_version` key or SGLang's `triton_X_Y_Z/` folder), each such version in its own
    /// managed toolchain; the report shows both verdicts.
    #[arg(long)]
    pub triton_from_files: bool,
    /// Compile only shard K of N of the jobs (`2/3`), for a run spread over machines; writes the
    /// shard's results to `--json` for `tilefit merge`. `auto` reads a Kubernetes Indexed Job's
    /// `JOB_COMPLETION_INDEX` (with `TILEFIT_SHARD_COUNT`) or a Slurm array's
    /// `SLURM_ARRAY_TASK_ID`.
    #[arg(long, env = "TILEFIT_SHARD", value_name = "K/N|auto")]
    pub shard: Option<String>,
    /// Write the compile jobs as JSON to FILE and stop without compiling (benchmark baseline).
    #[arg(long, hide = true, value_name = "FILE")]
    pub dump_jobs: Option<PathBuf>,
    /// Run this worker script instead of the embedded one (testing only).
    #[arg(long, env = "TILEFIT_WORKER_SCRIPT", hide = true)]
    pub worker_script: Option<PathBuf>,
}

/// `tilefit capture`. The shared flags a capture cannot use are hidden from its help and refused
/// with the reason: `--html` (a capture has no cliff map), `--shipped` (the shipped configs are the
/// ones the script launched) and `--triton` (the script runs in `--python`'s environment).
#[derive(Debug, Args)]
#[command(
    mut_arg("html", |a| a.hide(true)),
    mut_arg("shipped", |a| a.hide(true)),
    mut_arg("triton", |a| a.hide(true))
)]
pub struct CaptureArgs {
    /// The Python script that calls the engine's host code.
    #[arg(required_unless_present = "module")]
    pub script: Option<PathBuf>,
    /// Run a module as `__main__` instead of a script (`--module pytest -- tests/`: what
    /// `pytest --tilefit-emulate` runs).
    #[arg(long, short = 'm', value_name = "MODULE", conflicts_with = "script")]
    pub module: Option<String>,
    /// The script's own arguments, after `--`.
    #[arg(last = true, value_name = "SCRIPT_ARGS")]
    pub script_args: Vec<String>,
    /// Devices or archs to emulate, comma-separated (default: the default fleet).
    #[arg(long, value_delimiter = ',', value_name = "A,B,C")]
    pub targets: Vec<String>,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Write, for each captured kernel, the probe spec its launches make into DIR, ready to
    /// sweep with `tilefit probe`.
    #[arg(long, value_name = "DIR")]
    pub emit_spec: Option<PathBuf>,
    /// Kill a target's script (and everything it started) after this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    pub script_timeout: u64,
    /// A target where the script launched nothing passes (by default it fails: nothing was
    /// judged).
    #[arg(long)]
    pub allow_empty: bool,
    /// A stop that ended the script, a thread or a test early (what it runs after is never
    /// judged) is reported, not a failure (by default it fails: `stopped-early`).
    #[arg(long)]
    pub allow_stopped: bool,
    /// Run only shard K of N (`2/3`): a test suite's share of every target's tests (a script's
    /// share of the targets), written to `--json` for `tilefit merge`. `auto` reads a Kubernetes
    /// Indexed Job's `JOB_COMPLETION_INDEX` (with `TILEFIT_SHARD_COUNT`) or a Slurm array's
    /// `SLURM_ARRAY_TASK_ID`.
    #[arg(long, value_name = "K/N|auto")]
    pub shard: Option<String>,
    /// Also write the run as JUnit XML to FILE: one case per test and target (a script's run:
    /// one per target), failing with the kernel, the bytes, the budget and the fix.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// A folder the script may write to (repeat, or comma-separate). The script runs with a home,
    /// caches and temp dir of its own, removed after; a write it makes anywhere else fails the
    /// run, named (a capture leaves the machine as it found it).
    #[arg(long, value_name = "DIR", value_delimiter = ',')]
    pub allow_writes: Vec<PathBuf>,
    #[command(flatten)]
    pub compile: CompileArgs,
    /// Run this worker script instead of the embedded one (testing only).
    #[arg(long, env = "TILEFIT_WORKER_SCRIPT", hide = true)]
    pub worker_script: Option<PathBuf>,
}

/// `tilefit diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The old report (or a version-matrix report, alone).
    #[arg(value_name = "OLD.json")]
    pub old: PathBuf,
    /// The new report.
    #[arg(value_name = "NEW.json")]
    pub new: Option<PathBuf>,
    /// Write the differences as JSON to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Print Markdown instead of text.
    #[arg(long)]
    pub markdown: bool,
}

/// `tilefit merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Every shard's `--json` file.
    #[arg(required = true, value_name = "SHARD.json")]
    pub shards: Vec<PathBuf>,
    /// The spec the shards ran (default: the path they recorded, from where they ran).
    #[arg(long, value_name = "SPEC.toml")]
    pub spec: Option<PathBuf>,
    /// For replay shards: the caches they replayed (default: the paths they recorded).
    #[arg(long, value_name = "DIR", value_delimiter = ',')]
    pub caches: Vec<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Write the recommended config per arch as JSON an engine can load (as `probe` does).
    #[arg(long, value_name = "FILE")]
    pub emit_configs: Option<PathBuf>,
    /// For capture shards: also write the merged run as JUnit XML to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

/// `tilefit toolchain`.
#[derive(Debug, Args)]
pub struct ToolchainArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: ToolchainAction,
}

/// `tilefit toolchain list|install|worker`.
#[derive(Debug, Subcommand)]
pub enum ToolchainAction {
    /// The managed environments, and the interpreter TILEFIT_PYTHON names.
    List,
    /// Make the managed environment for a Triton version (pip install triton==VERSION).
    Install {
        /// The Triton version.
        #[arg(value_name = "VERSION", value_parser = parse_triton_one)]
        triton_version: String,
    },
    /// Write the compile worker this binary runs (the Python package `tilefit_worker`) into DIR,
    /// as DIR/tilefit_worker: what the benchmarks import, without the source tree.
    Worker {
        /// The folder to write it into (made if missing).
        #[arg(value_name = "DIR")]
        dir: PathBuf,
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
    /// Read the local GPUs' budgets from the CUDA driver and compare them with the table.
    #[arg(long)]
    pub live: bool,
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

/// `--triton`: X.Y.Z releases, comma-separated, checked and deduplicated before anything is
/// provisioned (`3.6` is refused with `3.6.0` suggested).
fn parse_triton(text: &str) -> Result<String, String> {
    tilefit_core::compile::toolchain::parse_versions(text)
        .map(|versions| versions.join(","))
        .map_err(|e| format!("{e}; {}", e.hint()))
}

/// One X.Y.Z release.
fn parse_triton_one(text: &str) -> Result<String, String> {
    tilefit_core::compile::toolchain::parse_version(text).map_err(|e| format!("{e}; {}", e.hint()))
}

/// `-j N`: at least one worker.
fn parse_jobs(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err(
            "0 workers would compile nothing: give 1 or more, or leave `-j` out for one per core"
                .to_owned(),
        ),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("`{text}` is not a number of workers: {e}")),
    }
}

/// `--timeout SECONDS`: at least one second.
fn parse_timeout(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err(
            "a timeout of 0 seconds would kill every compile: give 1 or more (the default is 300)"
                .to_owned(),
        ),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("`{text}` is not a number of seconds: {e}")),
    }
}
