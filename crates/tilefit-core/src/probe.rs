//! The probe: a spec and a fleet in, a report out. Resolve the devices, ask a worker for the
//! kernel's parameters, bind every config (a bad spec fails here, before any compile), make one
//! job per (config, distinct arch), take what the cache has, compile the rest on the worker pool,
//! then judge each result against every device of its arch and pick a config per device.
//!
//! Events go to a callback (progress); this module never prints.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cache::{Lookup, ResultCache};
use crate::device::occupancy::{self, BlockNeeds, SmLimits};
use crate::device::{Backend, DeviceTable, LookupError};
use crate::job::{self, CompileJob, KernelParam, KeyContext, Target};
use crate::listed::{AutotuneConfig, ListedReport, prepare_listed, summarize_listed};
use crate::resources::{self, BinaryFormat, KernelResources};
use crate::spec::{Config, ProbeSpec, SpecError, describe_config};
use crate::toolchain::Toolchain;
use crate::verdict::{self, CompileStatus, DeviceVerdict, VerdictCode};
use crate::worker::{Pool, Reply, SourceLocation, WorkerCommand, WorkerFault};

/// Version of the report's JSON shape.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// A device of the fleet, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetDevice {
    /// The name as the user wrote it (or the short name, for the default fleet).
    pub device: String,
    /// The canonical name.
    pub name: String,
    /// Its arch.
    pub arch: String,
    /// Its backend.
    pub backend: Backend,
    /// Warp size of the arch.
    pub warp_size: u32,
    /// Per-block opt-in budget.
    pub smem_per_block_optin: u64,
    /// Per-SM shared memory.
    pub smem_per_sm: u64,
    /// Reserved per block.
    pub smem_reserved_per_block: u64,
    /// The arch's limits for the occupancy model (NVIDIA archs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_limits: Option<SmLimits>,
}

impl TargetDevice {
    /// Resolve names (products or archs) against the table.
    pub fn resolve(
        table: &DeviceTable,
        names: &[String],
    ) -> Result<Vec<TargetDevice>, LookupError> {
        let mut devices: Vec<TargetDevice> = Vec::new();
        for name in names {
            let resolved = table.resolve(name)?;
            let arch = resolved.arch();
            if devices.iter().any(|d| d.name == resolved.display_name()) {
                continue;
            }
            devices.push(TargetDevice {
                device: name.trim().to_owned(),
                name: resolved.display_name().to_owned(),
                arch: arch.arch.clone(),
                backend: arch.backend,
                warp_size: arch.warp_size.value,
                smem_per_block_optin: u64::from(arch.smem_per_block_optin.value),
                smem_per_sm: u64::from(arch.smem_per_sm.value),
                smem_reserved_per_block: u64::from(arch.smem_reserved_per_block.value),
                sm_limits: SmLimits::of(arch),
            });
        }
        Ok(devices)
    }

    /// One device per budget class, as the table marks them (`default_fleet`).
    pub fn default_fleet(table: &DeviceTable) -> Vec<TargetDevice> {
        let names: Vec<String> = table
            .products()
            .iter()
            .filter(|p| p.default_fleet)
            .map(|p| p.short_name().to_owned())
            .collect();
        TargetDevice::resolve(table, &names).expect("default-fleet names come from the table")
    }

    fn target(&self) -> Target {
        Target {
            backend: self.backend,
            arch: self.arch.clone(),
            warp_size: self.warp_size,
        }
    }
}

/// What a worker reported for one job; this is what the cache stores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompileOutcome {
    /// How it went.
    pub status: CompileStatus,
    /// `metadata.shared`.
    pub shared: Option<u64>,
    /// `metadata.tmem_size`, where the target has tensor memory.
    pub tmem_size: Option<u64>,
    /// Effective num_warps after Triton's option parsing.
    pub num_warps: Option<u64>,
    /// Effective num_stages.
    pub num_stages: Option<u64>,
    /// Arguments Triton marked divisible by 16.
    #[serde(default)]
    pub divisible_by_16: Vec<String>,
    /// Int arguments equal to 1, compiled as constants.
    #[serde(default)]
    pub specialized_to_1: Vec<String>,
    /// Error kind and first line, when not ok.
    pub error: Option<OutcomeError>,
    /// Seconds the compile took in the worker.
    pub compile_seconds: f64,
    /// The compiled binary (cubin), when binaries were asked for (`tilefit verify`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<PathBuf>,
    /// The kernel's symbol in that binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_name: Option<String>,
    /// Registers, local memory and launch bounds read from the binary (`--resources full`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<KernelResources>,
    /// Why the binary's resources could not be read, when it was sent but is unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_error: Option<String>,
    /// Parameters passed as more than a plain value (dtype constexprs, None, descriptors,
    /// heuristics, defaults).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub passed: BTreeMap<String, Passed>,
    /// Options this target's backend does not take, left out of its compile (an AMD entry's
    /// `kpack` on an NVIDIA target).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_options: Vec<String>,
}

/// What a compile reply means, for callers outside the runner (the protocol fuzzer).
pub fn outcome_of_reply(reply: &Reply) -> CompileOutcome {
    CompileOutcome::from_reply(reply)
}

/// The binary a reply carries, read; `None` when the reply carries none.
fn resources_of(reply: &Reply) -> Option<Result<KernelResources, String>> {
    use base64::Engine as _;
    let format = reply.body.get("binary_format")?.as_str()?;
    let encoded = reply.body.get("binary_base64")?.as_str()?;
    let read = || -> Result<KernelResources, String> {
        let format = BinaryFormat::from_asm_key(format)
            .ok_or_else(|| format!("the worker sent a binary of unknown format `{format}`"))?;
        let binary = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|e| format!("the worker's binary is not base64: {e}"))?;
        let kernel = reply.body.get("kernel_name").and_then(Value::as_str);
        let log = reply.body.get("compiler_log").and_then(Value::as_str);
        resources::read(format, &binary, kernel, log).map_err(|e| e.to_string())
    };
    Some(read())
}

/// Why a job did not produce a size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeError {
    /// Kebab-case kind.
    pub kind: String,
    /// The reason, in one line.
    pub message: String,
    /// The compiler's whole diagnostic (`at L:C:`, the source excerpt, the reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostic: Option<String>,
    /// Where in the kernel's source the compiler stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<SourceLocation>,
}

impl OutcomeError {
    /// The reason with its place, in one line: `reason (moe.py:85:21: acc = tl.load(x))`.
    pub fn one_line(&self) -> String {
        match &self.location {
            Some(at) if at.text.is_empty() => format!("{} ({})", self.message, at.short()),
            Some(at) => format!("{} ({}: {})", self.message, at.short(), at.text),
            None => self.message.clone(),
        }
    }
}

/// What a launch passed for one parameter where it is more than a plain value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Passed {
    /// `dtype` (a `tl.` dtype constexpr), `none` (a None argument, a constexpr None),
    /// `tensor-descriptor`, `heuristic` (set by `@triton.heuristics`) or `default` (the
    /// signature's default).
    pub how: String,
    /// The value, as Python would show it.
    pub value: Value,
}

impl CompileOutcome {
    pub(crate) fn from_reply(reply: &Reply) -> CompileOutcome {
        let number = |key: &str| reply.body.get(key).and_then(Value::as_u64);
        let names = |key: &str| -> Vec<String> {
            reply
                .body
                .get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        let seconds = reply
            .body
            .get("timings")
            .and_then(|t| t.get("compile_s"))
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        match &reply.error {
            None => {
                let (resources, resources_error) = match resources_of(reply) {
                    Some(Ok(resources)) => (Some(resources), None),
                    Some(Err(error)) => (None, Some(error)),
                    None => (None, None),
                };
                CompileOutcome {
                    status: CompileStatus::Ok,
                    shared: number("shared"),
                    tmem_size: number("tmem_size"),
                    num_warps: number("num_warps"),
                    num_stages: number("num_stages"),
                    divisible_by_16: names("divisible_by_16"),
                    specialized_to_1: names("specialized_to_1"),
                    error: None,
                    compile_seconds: seconds,
                    binary: reply
                        .body
                        .get("binary")
                        .and_then(Value::as_str)
                        .map(PathBuf::from),
                    kernel_name: reply
                        .body
                        .get("kernel_name")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    resources,
                    resources_error,
                    passed: reply
                        .body
                        .get("passed")
                        .cloned()
                        .and_then(|p| serde_json::from_value(p).ok())
                        .unwrap_or_default(),
                    ignored_options: names("ignored_options"),
                }
            }
            Some(error) => {
                let mut outcome = CompileOutcome::failure(
                    if error.kind == "unsupported-on-target" {
                        CompileStatus::UnsupportedOnTarget
                    } else {
                        CompileStatus::CompileError
                    },
                    &error.kind,
                    &error.message,
                );
                if let Some(failure) = outcome.error.as_mut() {
                    failure.diagnostic.clone_from(&error.diagnostic);
                    failure.location.clone_from(&error.location);
                }
                outcome
            }
        }
    }

    fn failure(status: CompileStatus, kind: &str, message: &str) -> CompileOutcome {
        CompileOutcome {
            status,
            shared: None,
            tmem_size: None,
            num_warps: None,
            num_stages: None,
            divisible_by_16: Vec::new(),
            specialized_to_1: Vec::new(),
            error: Some(OutcomeError {
                kind: kind.to_owned(),
                message: message.to_owned(),
                diagnostic: None,
                location: None,
            }),
            compile_seconds: 0.0,
            binary: None,
            kernel_name: None,
            resources: None,
            resources_error: None,
            passed: BTreeMap::new(),
            ignored_options: Vec::new(),
        }
    }

    /// A job an interrupt (SIGINT/SIGTERM) kept from running.
    pub(crate) fn interrupted() -> CompileOutcome {
        CompileOutcome::failure(
            CompileStatus::Failed,
            "interrupted",
            "the run was interrupted before this job ran",
        )
    }

    pub(crate) fn from_fault(fault: &WorkerFault) -> CompileOutcome {
        if *fault == WorkerFault::Interrupted {
            return CompileOutcome::interrupted();
        }
        let last_words = fault
            .stderr()
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| format!("; its last stderr line: {}", l.trim()))
            .unwrap_or_default();
        CompileOutcome::failure(
            CompileStatus::Failed,
            "worker-fault",
            &format!("{fault}{last_words}"),
        )
    }

    /// Only what the compiler decided is cached: a size, a compile error, an unsupported target.
    /// Worker faults and spec errors are not, so a re-run retries them.
    pub(crate) fn cacheable(&self) -> bool {
        self.error
            .as_ref()
            .is_none_or(|e| e.kind == "compile-error" || e.kind == "unsupported-on-target")
    }
}

/// One (config, arch) result with its verdicts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    /// Axis values, plus the effective num_warps and num_stages.
    pub config: BTreeMap<String, Value>,
    /// Index of the config in sweep order.
    pub config_index: usize,
    /// The arch compiled for.
    pub arch: String,
    /// Its backend.
    pub backend: Backend,
    /// How the compile went.
    pub status: CompileStatus,
    /// `metadata.shared`.
    pub shared_bytes: Option<u64>,
    /// `metadata.tmem_size`.
    pub tmem_size: Option<u64>,
    /// Error kind and first line.
    pub error: Option<OutcomeError>,
    /// Came from the result cache.
    pub cached: bool,
    /// Arguments Triton marked divisible by 16.
    pub divisible_by_16: Vec<String>,
    /// Int arguments equal to 1, compiled as constants.
    pub specialized_to_1: Vec<String>,
    /// Seconds the compile took in its worker (when it was compiled, cached or not).
    pub compile_seconds: f64,
    /// The compiled binary and its kernel symbol, when binaries were asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<PathBuf>,
    /// The kernel's symbol in the binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_name: Option<String>,
    /// Registers, local memory and spills from the binary (`--resources full`), flattened:
    /// `registers_per_thread`, `local_bytes_per_thread`, `spill_bytes`, ...
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<KernelResources>,
    /// Why the binary's resources could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_error: Option<String>,
    /// The compile job, kept with binaries so `verify --launch` can launch the same config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<CompileJob>,
    /// Parameters passed as more than a plain value: what the worker gave the JIT.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub passed: BTreeMap<String, Passed>,
    /// Options this arch's backend does not take, left out of its compile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_options: Vec<String>,
    /// One verdict per device of this arch.
    pub verdicts: Vec<DeviceVerdict>,
}

/// The recommended config of one device for one workload variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// The device as the user wrote it.
    pub device: String,
    /// Its canonical name.
    pub name: String,
    /// Its arch.
    pub arch: String,
    /// The workload variant (values of the rule's `per` axes).
    pub variant: BTreeMap<String, Value>,
    /// The recommended config, or `None` when no swept config fits.
    pub config: Option<BTreeMap<String, Value>>,
    /// Its shared memory.
    pub shared_bytes: Option<u64>,
    /// Its headroom on this device.
    pub headroom: Option<u64>,
    /// The recommendation differs from the baseline.
    pub changed: bool,
    /// The baseline config.
    pub baseline: BTreeMap<String, Value>,
    /// Whether the baseline fits this device.
    pub baseline_fits: bool,
    /// The baseline's verdict on this device.
    pub baseline_verdict: VerdictCode,
    /// By how much the baseline misses the budget, when it is over.
    pub baseline_over_by: Option<u64>,
    /// The baseline does not fit: this device needs a different config.
    pub needs_change: bool,
}

/// The rule as applied, for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleSummary {
    /// Workload axes.
    pub per: Vec<String>,
    /// Preferences, `max:num_stages`.
    pub prefer: Vec<String>,
    /// Baseline overrides.
    pub baseline: BTreeMap<String, Value>,
}

/// Tool identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// `tilefit`.
    pub name: String,
    /// Its version.
    pub version: String,
}

/// The kernel probed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelInfo {
    /// Source file.
    pub file: String,
    /// Function.
    pub function: String,
    /// SHA-256 of the file.
    pub source_sha256: String,
}

/// Counts and time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeStats {
    /// Jobs in the sweep (configs x distinct archs).
    pub jobs: usize,
    /// Compiled in this run.
    pub compiled: usize,
    /// Taken from the cache.
    pub cached: usize,
    /// Cache entries found broken and recomputed.
    pub recomputed: usize,
    /// Jobs whose worker faulted or that an interrupt stopped.
    pub failed: usize,
    /// Wall time of the run.
    pub seconds: f64,
    /// False when the run was interrupted: some results are missing (marked failed).
    #[serde(default = "complete_by_default")]
    pub complete: bool,
}

/// Reports saved before `complete` existed were complete runs.
pub(crate) fn complete_by_default() -> bool {
    true
}

/// Everything a probe found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// [`REPORT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `probe`: tells a saved probe report from a replay report.
    pub kind: String,
    /// tilefit's name and version.
    pub tool: ToolInfo,
    /// Triton version that compiled.
    pub triton_version: String,
    /// Python version of the workers.
    pub python_version: String,
    /// The spec file.
    pub spec: String,
    /// The kernel.
    pub kernel: KernelInfo,
    /// The fleet.
    pub targets: Vec<TargetDevice>,
    /// Sweep axes, outermost first.
    pub axes: Vec<String>,
    /// Results, config-major, then arch in fleet order.
    pub results: Vec<ProbeResult>,
    /// Per device and variant.
    pub recommendations: Vec<Recommendation>,
    /// The recommendation rule.
    pub rule: RuleSummary,
    /// Counts.
    pub stats: ProbeStats,
    /// Configs listed outside the axes (a kernel's autotune list, config files): per device
    /// which fit, and per file its device's verdicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listed: Option<ListedReport>,
}

/// Why a probe could not run.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The spec is wrong.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The kernel file does not import or the function is not a Triton kernel.
    #[error("`{file}`: {message}")]
    Kernel {
        /// The kernel file.
        file: String,
        /// What the worker said.
        message: String,
    },
    /// The embedded device table does not load (a build defect).
    #[error(transparent)]
    Table(#[from] crate::device::TableError),
    /// No worker could start.
    #[error("the compile worker could not start")]
    Worker(#[source] WorkerFault),
    /// Reading the kernel source failed.
    #[error("cannot read `{path}`")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// How to run.
#[derive(Debug, Clone)]
pub struct ProbeSettings {
    /// Worker processes.
    pub jobs: usize,
    /// Read and write the result cache.
    pub use_cache: bool,
    /// Per-job timeout.
    pub job_timeout: Duration,
    /// tilefit's cache directory.
    pub cache_dir: PathBuf,
    /// A worker script to run instead of the embedded one (fault injection).
    pub worker_script: Option<PathBuf>,
    /// Keep each compiled binary in this folder (`tilefit verify`); the cache is not used then.
    pub binaries: Option<PathBuf>,
    /// Compile through the cubin instead of stopping after shared-memory allocation.
    pub full_compile: bool,
    /// Read registers, local memory, spills and launch bounds from each binary
    /// (`--resources full`); implies the whole compile.
    pub read_resources: bool,
    /// Raised on SIGINT/SIGTERM: the run stops and reports what finished, marked incomplete.
    pub cancel: crate::cancel::Cancel,
}

/// Progress, for a progress bar.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbeEvent {
    /// Jobs are known; `to_compile` of them go to workers.
    Planned {
        /// All jobs.
        jobs: usize,
        /// From the cache.
        cached: usize,
        /// To compile.
        to_compile: usize,
    },
    /// One compile finished.
    Compiled {
        /// Finished so far.
        done: usize,
        /// To compile in all.
        total: usize,
        /// What it was.
        label: String,
    },
}

const INSPECT_KIND: &str = "inspect";

/// Run a probe.
pub fn probe(
    spec: &ProbeSpec,
    targets: &[TargetDevice],
    toolchain: &Toolchain,
    settings: &ProbeSettings,
    on_event: &mut dyn FnMut(ProbeEvent),
) -> Result<ProbeReport, ProbeError> {
    let started = Instant::now();
    let kernel_file = spec.kernel_file.display().to_string();
    let io_error = |source| ProbeError::Io {
        path: kernel_file.clone(),
        source,
    };
    let source_sha256 = job::sha256(&std::fs::read(&spec.kernel_file).map_err(io_error)?);
    let kernel_digest = job::kernel_digest(&spec.kernel_file).map_err(io_error)?;
    let worker_digest = match &settings.worker_script {
        Some(script) => job::sha256(&std::fs::read(script).map_err(|source| ProbeError::Io {
            path: script.display().to_string(),
            source,
        })?),
        None => job::sha256(crate::worker::WORKER_SCRIPT.as_bytes()),
    };
    let context = KeyContext {
        kernel_digest: &kernel_digest,
        triton: &toolchain.triton_version,
        python: &toolchain.python_version,
        worker: &worker_digest,
    };
    let cache = ResultCache::new(&settings.cache_dir);
    let scratch = TritonScratch::new(&settings.cache_dir);
    let pool = worker_pool(toolchain, settings, &scratch);

    let interface = kernel_interface(spec, &pool, &cache, settings.use_cache, &context)?;
    let prepared = prepare_listed(spec, &interface, targets)?;
    let spec = &prepared.spec;
    let targets = prepared.targets.as_slice();
    let params = &interface.params;
    let configs = spec.configs();
    let bound = configs
        .iter()
        .map(|config| job::bind(spec, params, config))
        .collect::<Result<Vec<_>, _>>()?;

    let jobs = plan_jobs(spec, bound, targets, &context, settings);
    let mut outcomes: Vec<Option<(CompileOutcome, bool)>> = vec![None; jobs.len()];
    let mut recomputed = 0;
    if settings.use_cache && settings.binaries.is_none() {
        for (slot, planned) in outcomes.iter_mut().zip(&jobs) {
            match cache.get::<CompileOutcome>(&planned.key) {
                Lookup::Hit(outcome) => *slot = Some((outcome, true)),
                Lookup::Corrupt => recomputed += 1,
                Lookup::Miss => {}
            }
        }
    }
    let pending: Vec<usize> = (0..jobs.len()).filter(|&i| outcomes[i].is_none()).collect();
    on_event(ProbeEvent::Planned {
        jobs: jobs.len(),
        cached: jobs.len() - pending.len(),
        to_compile: pending.len(),
    });
    // Cached outcomes carry no binaries: a run that keeps them compiles everything.
    let cache = (settings.use_cache && settings.binaries.is_none()).then_some(&cache);
    let mut spec_error = compile_pending(
        &pool,
        &jobs,
        &pending,
        &configs,
        Keep {
            cache,
            binaries: settings.binaries.as_deref(),
        },
        &mut outcomes,
        on_event,
    );
    if spec_error.is_none() {
        spec_error = uniform_failure(&outcomes);
    }
    if let Some(message) = spec_error {
        return Err(ProbeError::Spec(SpecError::Field {
            path: spec.path.display().to_string(),
            field: "[args] / [constexprs] / [options]".to_owned(),
            problem: format!("are rejected by Triton: {message}"),
            fix: "check the names and types against the kernel's signature".to_owned(),
        }));
    }

    let mut report = assemble(
        spec,
        targets,
        toolchain,
        &configs,
        &jobs,
        outcomes,
        KernelInfo {
            file: kernel_file,
            function: spec.function.clone(),
            source_sha256,
        },
        recomputed,
        started,
    );
    report.listed = prepared
        .listed
        .map(|inputs| summarize_listed(spec, &configs, inputs, &report.results, targets));
    Ok(report)
}

/// The workers of a probe: the embedded worker (or the fault-injection script), with a private
/// Triton cache, stopped by the run's cancel flag.
fn worker_pool(toolchain: &Toolchain, settings: &ProbeSettings, scratch: &TritonScratch) -> Pool {
    let command = match &settings.worker_script {
        Some(script) => WorkerCommand::script(
            toolchain.python.clone(),
            script.clone(),
            scratch.path.clone(),
        ),
        None => WorkerCommand::embedded(toolchain.python.clone(), scratch.path.clone()),
    };
    let command = WorkerCommand {
        cancel: settings.cancel.clone(),
        ..command
    };
    Pool::new(command, settings.jobs, settings.job_timeout)
}

/// What a kernel's inspection says: its parameters and its autotune list, if it has one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelInterface {
    /// The `@triton.jit` function's parameters.
    pub params: Vec<KernelParam>,
    /// The configs of its `@triton.autotune`, when it is wrapped by one.
    pub autotune: Option<Vec<AutotuneConfig>>,
    /// The compile options each backend of the worker's Triton takes (`cuda`, `hip`).
    #[serde(default)]
    pub backend_options: BTreeMap<String, Vec<String>>,
}

/// Judge every result against its devices, recommend, count: the report.
#[expect(
    clippy::too_many_arguments,
    reason = "one call site; the parts of a finished run"
)]
fn assemble(
    spec: &ProbeSpec,
    targets: &[TargetDevice],
    toolchain: &Toolchain,
    configs: &[Config],
    jobs: &[PlannedJob],
    outcomes: Vec<Option<(CompileOutcome, bool)>>,
    kernel: KernelInfo,
    recomputed: usize,
    started: Instant,
) -> ProbeReport {
    let results: Vec<ProbeResult> = jobs
        .iter()
        .zip(outcomes)
        .map(|(planned, outcome)| {
            // A job an interrupt stopped before it ran has no outcome.
            let (outcome, cached) =
                outcome.unwrap_or_else(|| (CompileOutcome::interrupted(), false));
            result_for(
                &configs[planned.config_index],
                planned.config_index,
                &planned.job,
                &outcome,
                cached,
                targets,
            )
        })
        .collect();
    // Config files choose per batch size; one config per device across them would be no advice.
    let recommendations = match &spec.listed {
        Some(listed) if listed.kind == crate::spec::ListKind::ConfigFiles => Vec::new(),
        _ => recommend(spec, configs, &results, targets),
    };
    let stats = ProbeStats {
        jobs: jobs.len(),
        compiled: results.iter().filter(|r| !r.cached).count(),
        cached: results.iter().filter(|r| r.cached).count(),
        recomputed,
        failed: results
            .iter()
            .filter(|r| r.status == CompileStatus::Failed)
            .count(),
        seconds: started.elapsed().as_secs_f64(),
        complete: !results
            .iter()
            .any(|r| r.error.as_ref().is_some_and(|e| e.kind == "interrupted")),
    };
    ProbeReport {
        schema_version: REPORT_SCHEMA_VERSION,
        kind: "probe".to_owned(),
        tool: ToolInfo {
            name: "tilefit".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        },
        triton_version: toolchain.triton_version.clone(),
        python_version: toolchain.python_version.clone(),
        spec: spec.path.display().to_string(),
        kernel,
        targets: targets.to_vec(),
        axes: spec.axes().iter().map(|a| a.name.clone()).collect(),
        results,
        recommendations,
        rule: RuleSummary {
            per: spec.recommend.per.clone(),
            prefer: spec
                .recommend
                .prefer
                .iter()
                .map(crate::spec::Preference::describe)
                .collect(),
            baseline: spec.recommend.baseline.iter().cloned().collect(),
        },
        stats,
        listed: None,
    }
}

/// A kernel that fails the same way for every config and every target (two jobs or more) is not
/// a finding about budgets: the spec gives it something it cannot compile (a constexpr of the
/// wrong type, ...). The shared message, then.
fn uniform_failure(outcomes: &[Option<(CompileOutcome, bool)>]) -> Option<String> {
    let messages: Vec<String> = outcomes
        .iter()
        .flatten()
        .map(|(outcome, _)| {
            outcome
                .error
                .as_ref()
                .filter(|e| e.kind == "compile-error")
                .map_or(String::new(), OutcomeError::one_line)
        })
        .collect();
    let first = messages.first()?;
    (messages.len() >= 2
        && messages.len() == outcomes.len()
        && !first.is_empty()
        && messages.iter().all(|m| m == first))
    .then(|| format!("the kernel does not compile for any config or target: {first}"))
}

/// One compile to do: which config, the job, its cache key.
struct PlannedJob {
    config_index: usize,
    job: CompileJob,
    key: String,
}

/// One job per (config, distinct arch), archs in fleet order: each arch compiles once, however
/// many of its devices the fleet names.
fn plan_jobs(
    spec: &ProbeSpec,
    bound: Vec<job::BoundConfig>,
    targets: &[TargetDevice],
    context: &KeyContext<'_>,
    settings: &ProbeSettings,
) -> Vec<PlannedJob> {
    let mut archs: Vec<Target> = Vec::new();
    for device in targets {
        if !archs.iter().any(|t| t.arch == device.arch) {
            archs.push(device.target());
        }
    }
    let config_archs = spec.config_archs();
    let mut jobs = Vec::new();
    for (config_index, binding) in bound.into_iter().enumerate() {
        let only = config_archs.get(config_index).cloned().flatten();
        for target in archs
            .iter()
            .filter(|t| only.as_ref().is_none_or(|only| only.contains(&t.arch)))
        {
            let job = CompileJob {
                kernel_file: spec.kernel_file.clone(),
                function: spec.function.clone(),
                args: binding.args.clone(),
                constexprs: binding.constexprs.clone(),
                options: binding.options.clone(),
                target: target.clone(),
                full: settings.full_compile || settings.read_resources,
                resources: settings.read_resources,
            };
            let key = job::job_key(&job, context);
            jobs.push(PlannedJob {
                config_index,
                job,
                key,
            });
        }
    }
    jobs
}

/// Where compile results go besides the report: the result cache, and a folder for binaries.
#[derive(Clone, Copy)]
struct Keep<'a> {
    cache: Option<&'a ResultCache>,
    binaries: Option<&'a Path>,
}

/// Compile the pending jobs on the pool, storing each outcome (and caching it) as it arrives.
/// Returns the first spec error a worker reported (Triton refused a name or a type).
fn compile_pending(
    pool: &Pool,
    jobs: &[PlannedJob],
    pending: &[usize],
    configs: &[Config],
    keep: Keep<'_>,
    outcomes: &mut [Option<(CompileOutcome, bool)>],
    on_event: &mut dyn FnMut(ProbeEvent),
) -> Option<String> {
    if pending.is_empty() {
        return None;
    }
    // Identical jobs (same key: same kernel source, config and arch) compile once.
    let mut twins: Vec<(usize, usize)> = Vec::new();
    let mut unique: Vec<usize> = Vec::new();
    for &slot in pending {
        match unique.iter().find(|&&u| jobs[u].key == jobs[slot].key) {
            Some(&original) => twins.push((slot, original)),
            None => unique.push(slot),
        }
    }
    // The slowest jobs first (the pool keeps this order within each arch), so the sweep does not
    // end waiting on one long compile.
    unique.sort_by_key(|&slot| std::cmp::Reverse(cost_estimate(&jobs[slot].job)));
    let pending = unique.as_slice();
    let mut spec_error: Option<String> = None;
    let requests = pending
        .iter()
        .map(|&i| {
            let mut request = jobs[i].job.request();
            if let Some(dir) = keep.binaries {
                request["binary_dir"] = Value::from(dir.display().to_string());
            }
            request
        })
        .collect();
    let mut done = 0;
    pool.run(requests, |position, result| {
        let slot = pending[position];
        let outcome = match &result {
            Ok(reply) => CompileOutcome::from_reply(reply),
            Err(fault) => CompileOutcome::from_fault(fault),
        };
        if let Some(error) = &outcome.error
            && (error.kind == "bad-spec" || error.kind == "bad-kernel")
        {
            spec_error.get_or_insert_with(|| error.message.clone());
        }
        if let Some(cache) = keep.cache
            && outcome.cacheable()
        {
            // A cache that cannot be written only costs the next run time.
            let _ = cache.put(&jobs[slot].key, &outcome);
        }
        done += 1;
        let planned = &jobs[slot];
        on_event(ProbeEvent::Compiled {
            done,
            total: pending.len(),
            label: format!(
                "{} {}",
                planned.job.target.arch,
                describe_config(&configs[planned.config_index])
            ),
        });
        outcomes[slot] = Some((outcome, false));
    });
    for (slot, original) in twins {
        let twin = outcomes[original].clone();
        outcomes[slot] = twin;
    }
    spec_error
}

/// A rough, monotone guess of a compile's cost: bigger tiles and deeper pipelines take longer.
fn cost_estimate(job: &CompileJob) -> u64 {
    let numbers = job
        .constexprs
        .values()
        .chain(job.options.values())
        .filter_map(Value::as_u64)
        .filter(|&v| v > 1);
    numbers.fold(1_u64, u64::saturating_mul)
}

/// The compile jobs a probe would run, without compiling: for the benchmark's baseline, which
/// compiles the same jobs in a plain Python loop.
pub fn plan(
    spec: &ProbeSpec,
    targets: &[TargetDevice],
    toolchain: &Toolchain,
    settings: &ProbeSettings,
) -> Result<Vec<CompileJob>, ProbeError> {
    let io_error = |source| ProbeError::Io {
        path: spec.kernel_file.display().to_string(),
        source,
    };
    let kernel_digest = job::kernel_digest(&spec.kernel_file).map_err(io_error)?;
    let worker_digest = job::sha256(crate::worker::WORKER_SCRIPT.as_bytes());
    let context = KeyContext {
        kernel_digest: &kernel_digest,
        triton: &toolchain.triton_version,
        python: &toolchain.python_version,
        worker: &worker_digest,
    };
    let scratch = TritonScratch::new(&settings.cache_dir);
    let command = WorkerCommand::embedded(toolchain.python.clone(), scratch.path.clone());
    let pool = Pool::new(command, 1, settings.job_timeout);
    let cache = ResultCache::new(&settings.cache_dir);
    let interface = kernel_interface(spec, &pool, &cache, settings.use_cache, &context)?;
    let prepared = prepare_listed(spec, &interface, targets)?;
    let spec = &prepared.spec;
    let bound = spec
        .configs()
        .iter()
        .map(|config| job::bind(spec, &interface.params, config))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(
        plan_jobs(spec, bound, &prepared.targets, &context, settings)
            .into_iter()
            .map(|planned| planned.job)
            .collect(),
    )
}

/// A private TRITON_CACHE_DIR for the workers, removed when the probe ends, so Triton's own cache
/// can neither hide a compile nor fill the user's.
struct TritonScratch {
    path: PathBuf,
}

impl TritonScratch {
    fn new(cache_dir: &Path) -> TritonScratch {
        let path = cache_dir.join("scratch").join(format!(
            "triton-{}-{}",
            std::process::id(),
            Instant::now().elapsed().as_nanos()
        ));
        TritonScratch { path }
    }
}

impl Drop for TritonScratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn kernel_interface(
    spec: &ProbeSpec,
    pool: &Pool,
    cache: &ResultCache,
    use_cache: bool,
    context: &KeyContext<'_>,
) -> Result<KernelInterface, ProbeError> {
    let key = job::sha256(
        serde_json::json!({ "kind": INSPECT_KIND, "function": spec.function, "context": context })
            .to_string()
            .as_bytes(),
    );
    if use_cache && let Lookup::Hit(interface) = cache.get::<KernelInterface>(&key) {
        return Ok(interface);
    }
    pool.warm_up().map_err(ProbeError::Worker)?;
    let request = serde_json::json!({
        "type": INSPECT_KIND,
        "kernel_file": spec.kernel_file,
        "function": spec.function,
    });
    let reply = pool.request(request).map_err(ProbeError::Worker)?;
    if let Some(error) = reply.error {
        return Err(ProbeError::Kernel {
            file: spec.kernel_file.display().to_string(),
            message: error.message,
        });
    }
    let params: Vec<KernelParam> = reply
        .body
        .get("params")
        .cloned()
        .and_then(|p| serde_json::from_value(p).ok())
        .ok_or_else(|| {
            ProbeError::Worker(WorkerFault::Garbled {
                line: "an inspect reply without params".to_owned(),
                stderr: String::new(),
            })
        })?;
    let autotune: Option<Vec<AutotuneConfig>> = match reply.body.get("autotune_configs") {
        None | Some(Value::Null) => None,
        Some(list) => Some(serde_json::from_value(list.clone()).map_err(|e| {
            ProbeError::Worker(WorkerFault::Garbled {
                line: format!("an inspect reply with unreadable autotune configs: {e}"),
                stderr: String::new(),
            })
        })?),
    };
    let backend_options = reply
        .body
        .get("backend_options")
        .cloned()
        .and_then(|o| serde_json::from_value(o).ok())
        .unwrap_or_default();
    let interface = KernelInterface {
        params,
        autotune,
        backend_options,
    };
    if use_cache {
        let _ = cache.put(&key, &interface);
    }
    Ok(interface)
}

fn result_for(
    config: &Config,
    index: usize,
    job: &CompileJob,
    outcome: &CompileOutcome,
    cached: bool,
    targets: &[TargetDevice],
) -> ProbeResult {
    let mut shown: BTreeMap<String, Value> = config.iter().cloned().collect();
    for (option, value) in [
        ("num_warps", outcome.num_warps),
        ("num_stages", outcome.num_stages),
    ] {
        if let Some(value) = value {
            shown.entry(option.to_owned()).or_insert(Value::from(value));
        } else if let Some(value) = job.options.get(option) {
            shown.entry(option.to_owned()).or_insert(value.clone());
        }
    }
    let verdicts = targets
        .iter()
        .filter(|d| d.arch == job.target.arch)
        .map(|d| judge_on(d, outcome))
        .collect();
    ProbeResult {
        config: shown,
        config_index: index,
        arch: job.target.arch.clone(),
        backend: job.target.backend,
        status: outcome.status,
        shared_bytes: outcome.shared,
        tmem_size: outcome.tmem_size,
        error: outcome.error.clone(),
        cached,
        divisible_by_16: outcome.divisible_by_16.clone(),
        specialized_to_1: outcome.specialized_to_1.clone(),
        compile_seconds: outcome.compile_seconds,
        binary: outcome.binary.clone(),
        kernel_name: outcome.kernel_name.clone(),
        resources: outcome.resources.clone(),
        resources_error: outcome.resources_error.clone(),
        job: outcome.binary.is_some().then(|| job.clone()),
        passed: outcome.passed.clone(),
        ignored_options: outcome.ignored_options.clone(),
        verdicts,
    }
}

/// A config's result for a device's arch and that device's verdict on it, when it was compiled
/// for that arch.
pub(crate) fn verdict_on<'a>(
    results: &'a [ProbeResult],
    config: usize,
    device: &TargetDevice,
) -> Option<(&'a ProbeResult, &'a DeviceVerdict)> {
    results
        .iter()
        .find(|r| r.config_index == config && r.arch == device.arch)
        .and_then(|r| {
            r.verdicts
                .iter()
                .find(|v| v.device == device.device)
                .map(|v| (r, v))
        })
}

/// One device's verdict on a compile: shared memory against its budget, then, where the binary's
/// resources are known, the thread limit its registers leave and its occupancy.
pub fn judge_on(device: &TargetDevice, outcome: &CompileOutcome) -> DeviceVerdict {
    let verdict = verdict::judge(
        outcome.status,
        outcome.shared,
        &device.device,
        device.smem_per_block_optin,
    );
    let occupancy = match (&device.sm_limits, &outcome.resources, outcome.shared) {
        (Some(limits), Some(resources), Some(shared)) => {
            let warps = outcome.num_warps.unwrap_or(4);
            Some(occupancy::occupancy(
                limits,
                &BlockNeeds {
                    registers_per_thread: resources.registers_per_thread,
                    static_shared: resources.static_shared_bytes,
                    dynamic_shared: shared,
                    threads_per_block: u32::try_from(warps)
                        .unwrap_or(u32::MAX)
                        .saturating_mul(device.warp_size),
                },
            ))
        }
        _ => None,
    };
    verdict.with_occupancy(occupancy)
}

fn recommend(
    spec: &ProbeSpec,
    configs: &[Config],
    results: &[ProbeResult],
    targets: &[TargetDevice],
) -> Vec<Recommendation> {
    let rule = &spec.recommend;
    let groups = verdict::variants(configs, rule);
    let lookup = |config: usize, device: &TargetDevice| verdict_on(results, config, device);
    let mut recommendations = Vec::new();
    for device in targets {
        for (variant, members) in &groups {
            let fits =
                |i: usize| lookup(i, device).is_some_and(|(_, v)| v.verdict == VerdictCode::Fits);
            let measured = |i: usize| {
                lookup(i, device).map_or_else(verdict::Measured::default, |(r, v)| {
                    verdict::Measured {
                        spills: r.resources.as_ref().and_then(KernelResources::spills),
                        occupancy_percent: v.occupancy_percent,
                    }
                })
            };
            let choice = verdict::choose_measured(configs, members, fits, &measured, rule);
            let chosen = choice.recommended.and_then(|i| lookup(i, device));
            let config_map = |i: usize| -> BTreeMap<String, Value> {
                lookup(i, device).map_or_else(
                    || configs[i].iter().cloned().collect(),
                    |(r, _)| r.config.clone(),
                )
            };
            recommendations.push(Recommendation {
                device: device.device.clone(),
                name: device.name.clone(),
                arch: device.arch.clone(),
                variant: variant.iter().cloned().collect(),
                config: choice.recommended.map(config_map),
                shared_bytes: chosen.and_then(|(r, _)| r.shared_bytes),
                headroom: chosen.and_then(|(_, v)| v.headroom),
                changed: choice.changed(),
                baseline: config_map(choice.baseline),
                baseline_fits: choice.baseline_fits,
                baseline_verdict: lookup(choice.baseline, device)
                    .map_or(VerdictCode::Failed, |(_, v)| v.verdict),
                baseline_over_by: lookup(choice.baseline, device).and_then(|(_, v)| v.over_by),
                needs_change: !choice.baseline_fits,
            });
        }
    }
    recommendations
}
