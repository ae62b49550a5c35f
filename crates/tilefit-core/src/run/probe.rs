//! `probe`: a spec and a fleet in, a report out, as a short sequence of stage calls: inspect the
//! kernel, prepare listed configs (autotune list, config files), bind every config (a bad spec
//! fails here, before any compile), plan the jobs, compile them in the shared loop, judge each
//! result against every device of its arch and recommend a config per device.
//!
//! Events go to a callback (progress); this module never prints.

use std::time::Instant;

use crate::compile::CompileJob;
use crate::compile::CompileStatus;
use crate::compile::toolchain::Toolchain;
use crate::compile::{
    self, CompileOutcome, Event, InspectError, KernelInterface, KeyContext, OutcomeError, Scratch,
    Settings, WorkerFault,
};
use crate::device::TargetDevice;
use crate::input::spec::{Config, ListKind, Preference, ProbeSpec, SpecError};
use crate::judge::listed::summarize_listed;
use crate::judge::probe::{recommend, result_for};
use crate::model::probe::{
    KernelInfo, ProbeReport, ProbeResult, ProbeStats, REPORT_SCHEMA_VERSION, RuleSummary, ToolInfo,
};
use crate::plan::job;
use crate::plan::jobs::{PlannedJob, plan_jobs};
use crate::plan::listed::{ListedError, prepare_listed};

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

fn setup(
    spec: &ProbeSpec,
    toolchain: &Toolchain,
    settings: &Settings,
    pool: &compile::Pool,
) -> Result<Setup, ProbeError> {
    let kernel_file = spec.kernel_file.display().to_string();
    let io_error = |source| ProbeError::Io {
        path: kernel_file.clone(),
        source,
    };
    let source_sha256 = compile::sha256(&std::fs::read(&spec.kernel_file).map_err(io_error)?);
    let worker = settings.worker_digest().map_err(|source| ProbeError::Io {
        path: settings
            .worker_script
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        source,
    })?;
    let context = KeyContext {
        source: compile::kernel_digest(&spec.kernel_file).map_err(io_error)?,
        triton: toolchain.triton_version.clone(),
        python: toolchain.python_version.clone(),
        worker,
    };
    let interface = compile::inspect(
        &spec.kernel_file,
        &spec.function,
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
        context,
        source_sha256,
        interface,
    })
}

/// Run a probe.
pub fn probe(
    spec: &ProbeSpec,
    targets: &[TargetDevice],
    toolchain: &Toolchain,
    settings: &Settings,
    on_event: &mut dyn FnMut(Event),
) -> Result<ProbeReport, ProbeError> {
    let started = Instant::now();
    let scratch = Scratch::new(&settings.cache_dir, "probe");
    let pool = compile::pool_for(toolchain, settings, &scratch);
    let setup = setup(spec, toolchain, settings, &pool)?;
    let prepared = prepare_listed(spec, &setup.interface, targets)?;
    let spec = &prepared.spec;
    let targets = prepared.targets.as_slice();
    let configs = spec.configs();
    let bound = configs
        .iter()
        .map(|config| job::bind(spec, &setup.interface.params, config))
        .collect::<Result<Vec<_>, _>>()?;
    let jobs = plan_jobs(spec, &configs, bound, targets, &setup.context, settings);
    let compile_jobs: Vec<compile::Job> = jobs.iter().map(|p| p.job.clone()).collect();
    let compiled = compile::compile_all(&compile_jobs, &pool, settings, on_event);
    let input_error = compiled
        .input_error
        .clone()
        .or_else(|| uniform_failure(&compiled.outcomes));
    if let Some(message) = input_error {
        return Err(ProbeError::Spec(SpecError::Field {
            path: spec.path.display().to_string(),
            field: "[args] / [constexprs] / [options]".to_owned(),
            problem: format!("are rejected by Triton: {message}"),
            fix: "check the names and types against the kernel's signature".to_owned(),
        }));
    }
    let results: Vec<ProbeResult> = jobs
        .iter()
        .zip(&compiled.outcomes)
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
        KernelInfo {
            file: spec.kernel_file.display().to_string(),
            function: spec.function.clone(),
            source_sha256: setup.source_sha256,
        },
        ProbeStats {
            jobs: jobs.len(),
            compiled: compiled.outcomes.iter().filter(|(_, c)| !c).count(),
            cached: compiled.outcomes.iter().filter(|(_, c)| *c).count(),
            recomputed: compiled.recomputed,
            failed: compiled
                .outcomes
                .iter()
                .filter(|(o, _)| o.status == CompileStatus::Failed)
                .count(),
            seconds: started.elapsed().as_secs_f64(),
            complete: compile::complete(compiled.outcomes.iter().map(|(o, _)| o)),
        },
    );
    report.listed = prepared
        .listed
        .map(|inputs| summarize_listed(spec, &configs, inputs, &report.results, targets));
    Ok(report)
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
        kind: "probe".to_owned(),
        tool: ToolInfo {
            name: "tilefit".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        },
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
    let prepared = prepare_listed(spec, &setup.interface, targets)?;
    let spec = &prepared.spec;
    let configs = spec.configs();
    let bound = configs
        .iter()
        .map(|config| job::bind(spec, &setup.interface.params, config))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(plan_jobs(
        spec,
        &configs,
        bound,
        &prepared.targets,
        &setup.context,
        settings,
    )
    .iter()
    .map(|planned: &PlannedJob| planned.compile_job().clone())
    .collect())
}
