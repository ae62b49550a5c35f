//! `probe`: a spec and a fleet in, a report out, as a short sequence of stage calls: inspect the
//! kernel, prepare listed configs (autotune list, config files), bind every config (a bad spec
//! fails here, before any compile), plan the jobs, compile them in the shared loop, judge each
//! result against every device of its arch and recommend a config per device.
//!
//! A sharded run ([`probe_shard`]) plans the whole sweep and compiles only its shard's jobs into a
//! [`ShardReport`]; [`merge`] plans the sweep again from the same inputs and takes every job's
//! outcome from the shards instead of compiling, so the rest of the pipeline, and the report, is
//! the one a single run makes.
//!
//! Events go to a callback (progress); this module never prints.

use std::time::Instant;

use crate::compile::toolchain::Toolchain;
use crate::compile::{
    self, CompileOutcome, Event, InspectError, OutcomeError, Scratch, Settings, WorkerFault,
};
use crate::device::TargetDevice;
use crate::input::spec::{ListKind, Preference, ProbeSpec, SpecError};
use crate::judge::listed::summarize_listed;
use crate::judge::probe::{recommend, result_for};
use crate::model::probe::{
    KernelInfo, ProbeReport, ProbeResult, ProbeStats, REPORT_SCHEMA_VERSION, RuleSummary, ToolInfo,
};
use crate::model::shard::{Invocation, SHARD_SCHEMA_VERSION, ShardOutcome, ShardReport};
use crate::plan::KeyContext;
use crate::plan::job;
use crate::plan::jobs::{PlannedJob, plan_jobs};
use crate::plan::listed::{ListedError, Prepared, prepare_listed};
use crate::plan::shard::{self, Shard};
use crate::vocab::CompileJob;
use crate::vocab::CompileStatus;
use crate::vocab::Config;
use crate::vocab::KernelInterface;

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
    /// Shards that do not make one run.
    #[error("{0}")]
    Shards(String),
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

impl From<ListedError> for ProbeError {
    fn from(error: ListedError) -> ProbeError {
        match error {
            ListedError::Spec(e) => ProbeError::Spec(e),
            ListedError::Table(e) => ProbeError::Table(e),
        }
    }
}

/// The kernel's interface and what keys its compiles: the setup `probe` and `plan` share.
struct Setup {
    context: KeyContext,
    source_sha256: String,
    interface: KernelInterface,
}

/// The kernel file's SHA-256 and the key context of its compiles under `toolchain`'s Triton and
/// Python (read from the file and the worker script; nothing runs).
fn key_context(
    spec: &ProbeSpec,
    toolchain: &Toolchain,
    settings: &Settings,
) -> Result<(String, KeyContext), ProbeError> {
    let io_error = |source| ProbeError::Io {
        path: spec.kernel_file.display().to_string(),
        source,
    };
    let source_sha256 = crate::digest::sha256(&std::fs::read(&spec.kernel_file).map_err(io_error)?);
    let worker = settings.worker_digest().map_err(|source| ProbeError::Io {
        path: settings
            .worker_script
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        source,
    })?;
    let context = KeyContext {
        source: crate::digest::kernel_digest(&spec.kernel_file).map_err(io_error)?,
        triton: toolchain.triton_version.clone(),
        python: toolchain.python_version.clone(),
        worker,
    };
    Ok((source_sha256, context))
}

fn setup(
    spec: &ProbeSpec,
    toolchain: &Toolchain,
    settings: &Settings,
    pool: &compile::Pool,
) -> Result<Setup, ProbeError> {
    let kernel_file = spec.kernel_file.display().to_string();
    let (source_sha256, context) = key_context(spec, toolchain, settings)?;
    let interface = compile::inspect(
        &spec.kernel_file,
        &spec.function,
        &spec.source,
        pool,
        settings.use_cache,
        &settings.cache_dir,
        &context,
    )
    .map_err(|error| match error {
        InspectError::Worker(fault) => ProbeError::Worker(fault),
        InspectError::Kernel(error) => ProbeError::Kernel {
            file: kernel_file.clone(),
            message: error.message,
        },
    })?;
    Ok(Setup {
        context: loaded_context(context, &interface),
        source_sha256,
        interface,
    })
}

/// The sweep planned: the prepared spec and fleet, its configs, one job per (config, arch).
struct Planned {
    prepared: Prepared,
    configs: Vec<Config>,
    jobs: Vec<PlannedJob>,
}

fn plan_sweep(
    spec: &ProbeSpec,
    targets: &[TargetDevice],
    setup: &Setup,
    settings: &Settings,
) -> Result<Planned, ProbeError> {
    let prepared = prepare_listed(spec, &setup.interface, targets, &settings.cancel)?;
    let configs = prepared.spec.configs();
    let bound = configs
        .iter()
        .map(|config| job::bind(&prepared.spec, &setup.interface.params, config))
        .collect::<Result<Vec<_>, _>>()?;
    let jobs = plan_jobs(
        &prepared.spec,
        &configs,
        bound,
        &prepared.targets,
        &setup.context,
        crate::plan::jobs::Depth {
            full: settings.full_compile,
            resources: settings.read_resources,
        },
    );
    Ok(Planned {
        prepared,
        configs,
        jobs,
    })
}

/// The key context of what was loaded: where the kernel was extracted from its file, the digest
/// of exactly the source that ran, so an edit elsewhere in the file recompiles nothing.
fn loaded_context(context: KeyContext, interface: &KernelInterface) -> KeyContext {
    match interface.loaded.as_ref().and_then(|l| l.digest.clone()) {
        Some(digest) => KeyContext {
            source: digest,
            ..context
        },
        None => context,
    }
}

/// Run a probe.
pub fn probe(
    spec: &ProbeSpec,
    targets: &[TargetDevice],
    toolchain: &Toolchain,
    settings: &Settings,
    on_event: &mut dyn FnMut(Event),
) -> Result<ProbeReport, ProbeError> {
    sweep(spec, targets, toolchain, settings, on_event, keep_all)
}

/// Every planned job is compiled.
fn keep_all(planned: &Planned) -> Vec<bool> {
    vec![true; planned.jobs.len()]
}

/// Plan the sweep, compile the jobs `keep` says yes to (one answer per planned job), judge and
/// report.
fn sweep(
    spec: &ProbeSpec,
    targets: &[TargetDevice],
    toolchain: &Toolchain,
    settings: &Settings,
    on_event: &mut dyn FnMut(Event),
    keep: impl FnOnce(&Planned) -> Vec<bool>,
) -> Result<ProbeReport, ProbeError> {
    let scratch = Scratch::for_run(settings, "probe");
    let pool = compile::pool_for(toolchain, settings, &scratch);
    sweep_in(&pool, spec, targets, toolchain, settings, on_event, keep)
}

/// Probe each spec, one after the other, on one pool of workers (started once, kept warm between
/// specs): for many small specs, such as the launches `tilefit capture` captured.
pub fn probe_each(
    specs: &[ProbeSpec],
    targets: &[TargetDevice],
    toolchain: &Toolchain,
    settings: &Settings,
    on_event: &mut dyn FnMut(Event),
) -> Vec<Result<ProbeReport, ProbeError>> {
    let scratch = Scratch::for_run(settings, "probe");
    let pool = compile::pool_for(toolchain, settings, &scratch);
    specs
        .iter()
        .map(|spec| {
            sweep_in(
                &pool, spec, targets, toolchain, settings, on_event, keep_all,
            )
        })
        .collect()
}

/// [`sweep`] on a pool the caller started.
fn sweep_in(
    pool: &compile::Pool,
    spec: &ProbeSpec,
    targets: &[TargetDevice],
    toolchain: &Toolchain,
    settings: &Settings,
    on_event: &mut dyn FnMut(Event),
    keep: impl FnOnce(&Planned) -> Vec<bool>,
) -> Result<ProbeReport, ProbeError> {
    let started = Instant::now();
    let setup = setup(spec, toolchain, settings, pool)?;
    let mut planned = plan_sweep(spec, targets, &setup, settings)?;
    let mut kept = keep(&planned).into_iter();
    planned.jobs.retain(|_| kept.next().unwrap_or(false));
    let compile_jobs: Vec<crate::plan::Job> = planned.jobs.iter().map(|p| p.job.clone()).collect();
    let compiled = compile::compile_all(&compile_jobs, pool, settings, on_event);
    let input_error = compiled.input_error.clone();
    let totals = Totals {
        recomputed: compiled.recomputed,
        seconds: started.elapsed().as_secs_f64(),
        workers: compiled.workers.clone(),
        interrupted: settings.cancel.is_cancelled(),
    };
    report_of(
        planned,
        setup,
        toolchain,
        &compiled.outcomes,
        input_error,
        totals,
    )
}

/// The spec's arguments, constexprs or options are rejected by Triton.
fn rejected(spec: &ProbeSpec, message: &str) -> ProbeError {
    ProbeError::Spec(SpecError::Field {
        path: spec.path.display().to_string(),
        field: "[args] / [constexprs] / [options]".to_owned(),
        problem: format!("are rejected by Triton: {message}"),
        fix: "check the names and types against the kernel's signature".to_owned(),
    })
}

/// What a report counts besides its outcomes.
struct Totals {
    recomputed: usize,
    seconds: f64,
    workers: Option<compile::WorkersUsed>,
    /// The run was interrupted somewhere (its jobs may all have come from the cache).
    interrupted: bool,
}

/// Judge every outcome, recommend, and put the report together.
fn report_of(
    planned: Planned,
    setup: Setup,
    toolchain: &Toolchain,
    outcomes: &[(CompileOutcome, bool)],
    input_error: Option<String>,
    totals: Totals,
) -> Result<ProbeReport, ProbeError> {
    let Planned {
        prepared,
        configs,
        jobs,
    } = planned;
    let spec = &prepared.spec;
    let targets = prepared.targets.as_slice();
    if let Some(message) = input_error.or_else(|| uniform_failure(outcomes)) {
        return Err(rejected(spec, &message));
    }
    let results: Vec<ProbeResult> = jobs
        .iter()
        .zip(outcomes)
        .map(|(planned, (outcome, cached))| {
            result_for(
                &configs[planned.config_index],
                planned.config_index,
                planned.compile_job(),
                outcome,
                *cached,
                targets,
            )
        })
        .collect();
    let mut report = assemble(
        spec,
        targets,
        toolchain,
        &configs,
        results,
        kernel_info(spec, &setup.interface, setup.source_sha256),
        ProbeStats {
            jobs: jobs.len(),
            compiled: outcomes.iter().filter(|(_, c)| !c).count(),
            cached: outcomes.iter().filter(|(_, c)| *c).count(),
            recomputed: totals.recomputed,
            failed: outcomes
                .iter()
                .filter(|(o, _)| o.status == CompileStatus::Failed)
                .count(),
            seconds: totals.seconds,
            // Interrupted anywhere (mid-walk of a config folder too): incomplete, even when
            // every job it kept came from the cache.
            complete: compile::complete(outcomes.iter().map(|(o, _)| o)) && !totals.interrupted,
            workers: totals.workers,
        },
    );
    report.listed = prepared
        .listed
        .map(|inputs| summarize_listed(spec, &configs, inputs, &report.results, targets));
    Ok(report)
}

/// The entries of the config files tuned with `toolchain`'s Triton, judged with it: the probe
/// restricted to the configs those files list (each on its file's device and the fleet, as in the
/// main run), for [`attach_tuned`].
pub fn probe_tuned(
    spec: &ProbeSpec,
    targets: &[TargetDevice],
    toolchain: &Toolchain,
    settings: &Settings,
    on_event: &mut dyn FnMut(Event),
) -> Result<ProbeReport, ProbeError> {
    let version = toolchain.triton_version.clone();
    sweep(
        spec,
        targets,
        toolchain,
        settings,
        on_event,
        move |planned| {
            let tuned: Vec<String> = planned
                .prepared
                .listed
                .iter()
                .flat_map(|inputs| &inputs.files)
                .filter(|f| f.file.tuned_with.as_deref() == Some(version.as_str()))
                .map(|f| f.file.name.clone())
                .collect();
            let origins = planned.prepared.spec.config_origins();
            planned
                .jobs
                .iter()
                .map(|job| {
                    origins.get(job.config_index).is_some_and(|o| {
                        o.iter()
                            .any(|o| o.file().is_some_and(|f| tuned.iter().any(|t| t == f)))
                    })
                })
                .collect()
        },
    )
}

/// Put each config file's entries as `tuned` (a [`probe_tuned`] run) judged them beside the
/// main run's, for the files tuned with `tuned`'s Triton.
pub fn attach_tuned(report: &mut ProbeReport, tuned: &ProbeReport) {
    let Some(listed) = report.listed.as_mut() else {
        return;
    };
    let others = tuned
        .listed
        .as_ref()
        .map_or(&[][..], |l| l.files.as_slice());
    for file in &mut listed.files {
        if file.tuned_with.as_deref() != Some(tuned.triton_version.as_str()) {
            continue;
        }
        if let Some(other) = others.iter().find(|o| o.path == file.path) {
            file.under_tuned = Some(crate::model::listed::UnderTuned {
                triton: tuned.triton_version.clone(),
                entries: other.entries.clone(),
                error: None,
            });
        }
    }
}

/// Mark the files tuned with `version` as not judged under it, and why.
pub fn tuned_unavailable(report: &mut ProbeReport, version: &str, why: &str) {
    let Some(listed) = report.listed.as_mut() else {
        return;
    };
    for file in &mut listed.files {
        let judged =
            file.device.is_some() && file.undescribed.is_none() && file.unsupported.is_none();
        if judged && file.tuned_with.as_deref() == Some(version) {
            file.under_tuned = Some(crate::model::listed::UnderTuned {
                triton: version.to_owned(),
                entries: Vec::new(),
                error: Some(why.to_owned()),
            });
        }
    }
}

/// The digest that says two shards belong to one run: the spec file, the fleet, and every job's
/// config and cache key in plan order (the keys cover the kernel source, the Triton and Python
/// versions and the worker script).
fn plan_digest(spec: &ProbeSpec, planned: &Planned) -> Result<String, ProbeError> {
    let spec_bytes = std::fs::read(&spec.path).map_err(|source| ProbeError::Io {
        path: spec.path.display().to_string(),
        source,
    })?;
    let material = serde_json::json!({
        "spec": crate::digest::sha256(&spec_bytes),
        "targets": planned.prepared.targets,
        "jobs": planned.jobs.iter().map(|job| serde_json::json!([
            job.config_index,
            crate::vocab::describe_config(&planned.configs[job.config_index]),
            job.job.key,
        ])).collect::<Vec<_>>(),
    });
    Ok(crate::digest::sha256(material.to_string().as_bytes()))
}

/// The report's kernel: the spec's file and function, how the worker loaded it, its parameters,
/// and the digest of its source.
fn kernel_info(
    spec: &ProbeSpec,
    interface: &crate::vocab::KernelInterface,
    source_sha256: String,
) -> KernelInfo {
    KernelInfo {
        file: spec.kernel_file.display().to_string(),
        function: spec.function.clone(),
        loaded: interface.loaded.clone(),
        source_sha256,
        parameters: interface.params.iter().map(|p| p.name.clone()).collect(),
    }
}

/// Run shard `shard` of a probe: plan the whole sweep, compile this shard's jobs.
pub fn probe_shard(
    spec: &ProbeSpec,
    invocation: Invocation,
    targets: &[TargetDevice],
    toolchain: &Toolchain,
    settings: &Settings,
    shard: Shard,
    on_event: &mut dyn FnMut(Event),
) -> Result<ShardReport, ProbeError> {
    let started = Instant::now();
    let scratch = Scratch::new(&settings.cache_dir, "probe");
    let pool = compile::pool_for(toolchain, settings, &scratch);
    let setup = setup(spec, toolchain, settings, &pool)?;
    let planned = plan_sweep(spec, targets, &setup, settings)?;
    let plan_sha256 = plan_digest(spec, &planned)?;
    let all: Vec<crate::plan::Job> = planned.jobs.iter().map(|p| p.job.clone()).collect();
    let mine: Vec<crate::plan::Job> = all
        .iter()
        .zip(shard::assign(&all, shard.count))
        .filter(|(_, s)| *s == shard.index)
        .map(|(job, _)| job.clone())
        .collect();
    let compiled = compile::compile_all(&mine, &pool, settings, on_event);
    if let Some(message) = compiled.input_error {
        return Err(rejected(spec, &message));
    }
    Ok(ShardReport {
        schema_version: SHARD_SCHEMA_VERSION,
        kind: crate::model::kind::ReportKind::ProbeShard,
        tool: ToolInfo::current(),
        shard,
        plan_sha256,
        jobs_total: all.len(),
        invocation,
        triton_version: toolchain.triton_version.clone(),
        python_version: toolchain.python_version.clone(),
        toolchain: toolchain.origin,
        kernel: kernel_info(spec, &setup.interface, setup.source_sha256),
        interface: setup.interface,
        outcomes: mine
            .iter()
            .zip(compiled.outcomes)
            .map(|(job, (outcome, cached))| ShardOutcome {
                key: job.key.clone(),
                outcome,
                cached,
            })
            .collect(),
        recomputed: compiled.recomputed,
        seconds: started.elapsed().as_secs_f64(),
        workers: compiled.workers,
    })
}

/// Put the shards of one run back together: check they are all there and of the same inputs,
/// plan the sweep again from `spec` (which must be the spec they ran) and judge every job with
/// the outcome its shard compiled. Needs no Python: the kernel's interface and the toolchain's
/// versions come from the shards.
pub fn merge(
    spec: &ProbeSpec,
    targets: &[TargetDevice],
    settings: &Settings,
    shards: &[ShardReport],
) -> Result<ProbeReport, ProbeError> {
    let first = shards
        .first()
        .ok_or_else(|| ProbeError::Shards("no shards to merge".to_owned()))?;
    check_shards(shards)?;
    let toolchain = Toolchain {
        // Not run: the merge compiles nothing.
        python: std::path::PathBuf::new(),
        python_version: first.python_version.clone(),
        triton_version: first.triton_version.clone(),
        origin: first.toolchain,
    };
    let (source_sha256, context) = key_context(spec, &toolchain, settings)?;
    let setup = Setup {
        context: loaded_context(context, &first.interface),
        source_sha256,
        interface: first.interface.clone(),
    };
    let planned = plan_sweep(spec, targets, &setup, settings)?;
    if plan_digest(spec, &planned)? != first.plan_sha256 {
        return Err(ProbeError::Shards(format!(
            "the shards were not made from `{}` as it is here (the spec, its kernel, its config files, the fleet or tilefit itself differ)",
            spec.path.display()
        )));
    }
    let by_key = crate::model::shard::by_key(shards.iter().flat_map(|s| &s.outcomes));
    let mut outcomes = Vec::with_capacity(planned.jobs.len());
    for job in &planned.jobs {
        let found = by_key.get(job.job.key.as_str()).ok_or_else(|| {
            ProbeError::Shards(format!(
                "no shard has the job `{}`: merge every shard of the run",
                job.job.label
            ))
        })?;
        outcomes.push((found.outcome.clone(), found.cached));
    }
    let input_error = outcomes.iter().find_map(|(o, _)| {
        o.error
            .as_ref()
            .filter(|e| e.kind.is_input_error())
            .map(|e| e.message.clone())
    });
    let totals = Totals {
        recomputed: shards.iter().map(|s| s.recomputed).sum(),
        // The shards ran side by side: the run took as long as its slowest shard.
        seconds: shards.iter().map(|s| s.seconds).fold(0.0, f64::max),
        workers: None,
        interrupted: false,
    };
    report_of(planned, setup, &toolchain, &outcomes, input_error, totals)
}

/// Every shard of one run, each once.
fn check_shards(shards: &[ShardReport]) -> Result<(), ProbeError> {
    let identities: Vec<_> = shards.iter().map(ShardReport::identity).collect();
    crate::model::shard::check_one_run(&identities).map_err(ProbeError::Shards)
}

/// Recommend and put the report together.
fn assemble(
    spec: &ProbeSpec,
    targets: &[TargetDevice],
    toolchain: &Toolchain,
    configs: &[Config],
    results: Vec<ProbeResult>,
    kernel: KernelInfo,
    stats: ProbeStats,
) -> ProbeReport {
    // Config files choose per batch size; one config per device across them would be no advice.
    let recommendations = match &spec.listed {
        Some(listed) if listed.kind == ListKind::ConfigFiles => Vec::new(),
        _ => recommend(spec, configs, &results, targets),
    };
    ProbeReport {
        schema_version: REPORT_SCHEMA_VERSION,
        kind: crate::model::kind::ReportKind::Probe,
        tool: ToolInfo::current(),
        triton_version: toolchain.triton_version.clone(),
        python_version: toolchain.python_version.clone(),
        toolchain: Some(toolchain.origin),
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
                .map(Preference::describe)
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
fn uniform_failure(outcomes: &[(CompileOutcome, bool)]) -> Option<String> {
    let messages: Vec<String> = outcomes
        .iter()
        .map(|(outcome, _)| {
            outcome
                .error
                .as_ref()
                .filter(|e| e.kind == compile::ErrorKind::CompileError)
                .map_or(String::new(), OutcomeError::one_line)
        })
        .collect();
    let first = messages.first()?;
    (messages.len() >= 2 && !first.is_empty() && messages.iter().all(|m| m == first))
        .then(|| format!("the kernel does not compile for any config or target: {first}"))
}

/// The compile jobs a probe would run, without compiling: for the benchmark's baseline, which
/// compiles the same jobs in a plain Python loop.
pub fn plan(
    spec: &ProbeSpec,
    targets: &[TargetDevice],
    toolchain: &Toolchain,
    settings: &Settings,
) -> Result<Vec<CompileJob>, ProbeError> {
    let scratch = Scratch::new(&settings.cache_dir, "plan");
    let pool = compile::pool_for(toolchain, settings, &scratch);
    let setup = setup(spec, toolchain, settings, &pool)?;
    Ok(plan_sweep(spec, targets, &setup, settings)?
        .jobs
        .iter()
        .map(|planned: &PlannedJob| planned.compile_job().clone())
        .collect())
}

impl crate::hint::Hint for ProbeError {
    fn hint(&self) -> Option<String> {
        match self {
            ProbeError::Spec(e) => Some(e.hint()),
            ProbeError::Table(e) => crate::hint::Hint::hint(e),
            ProbeError::Kernel { .. } => Some(
                "check the function is decorated with @triton.jit; where the file imports what is not installed, tilefit extracts the kernel, and `[globals]` gives the names it cannot evaluate".to_owned(),
            ),
            ProbeError::Shards(_) => Some(
                "merge the `--json` files of every shard of one run (`--shard 1/N` .. `N/N`), made from the same spec and Triton".to_owned(),
            ),
            ProbeError::Worker(_) | ProbeError::Io { .. } => None,
        }
    }
}
