//! The probe pipeline of one run: one pool of workers and one scratch folder, started once and
//! shared by every sweep the run makes (a probe, each target of a capture, each round of
//! `--emit-files` and its read-back). A sweep is a [`Sweep`] with its configs as values:
//! inspect the kernel, prepare the listed configs, bind every config (a bad spec fails here,
//! before any compile), plan one job per (config, arch), compile them in the shared loop, judge
//! each result against every device of its arch and recommend a config per device.
//!
//! Progress goes to the settings' reporter; this module never prints.

use std::path::Path;
use std::time::Instant;

use crate::compile::toolchain::Toolchain;
use crate::compile::{self, InspectError, Scratch, Settings};
use crate::device::TargetDevice;
use crate::input::spec::{SpecError, Sweep};
pub(crate) use crate::judge::report::{Totals, report_of};
use crate::model::probe::ProbeReport;
use crate::plan::KeyContext;
use crate::plan::jobs::{Depth, PlannedJob};
pub(crate) use crate::plan::sweep::{Planned, Setup, loaded_context, plan_sweep};
use crate::vocab::CompileJob;

use super::probe_error::ProbeError;

/// One run's workers and scratch folder, and the toolchain and settings they run with.
pub struct Pipeline<'a> {
    toolchain: &'a Toolchain,
    settings: &'a Settings,
    scratch: Scratch,
    pool: compile::Pool,
}

impl<'a> Pipeline<'a> {
    /// The pipeline of a run labelled `label` (the scratch folder's name). Nothing starts until
    /// a sweep needs a worker.
    pub fn new(toolchain: &'a Toolchain, settings: &'a Settings, label: &str) -> Pipeline<'a> {
        let scratch = Scratch::for_run(settings, label);
        let pool = compile::pool_for(toolchain, settings, &scratch);
        Pipeline {
            toolchain,
            settings,
            scratch,
            pool,
        }
    }

    /// The toolchain its workers run.
    pub fn toolchain(&self) -> &'a Toolchain {
        self.toolchain
    }

    /// The run's settings.
    pub fn settings(&self) -> &'a Settings {
        self.settings
    }

    /// The run's scratch folder (removed when the pipeline is dropped, unless binaries are kept).
    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// How the run's workers started, so far.
    pub fn workers(&self) -> compile::WorkersUsed {
        self.pool.start_mode()
    }

    /// Read the spec's config files into it, once, for the probe and the `--emit-files` after
    /// it. The kernel is inspected first (its interface is cached), as a probe that reads them
    /// itself does: an interrupt in a long walk still finds a kernel to judge the files read.
    pub fn read_config_files(&self, spec: &mut Sweep) -> Result<(), ProbeError> {
        if spec.config_files.is_some() && spec.config_set.is_none() {
            self.setup(spec)?;
            spec.read_config_files(&self.settings.cancel)?;
        }
        Ok(())
    }

    /// Probe a sweep on `targets`.
    pub fn probe(&self, spec: &Sweep, targets: &[TargetDevice]) -> Result<ProbeReport, ProbeError> {
        self.probe_kept(spec, targets, |planned| vec![true; planned.jobs.len()])
    }

    /// Probe many small sweeps (a capture's distinct compiles) on `targets` as one batch: each
    /// planned on its own, every job of all of them compiled together on the pool (the workers
    /// busy side by side, not one single-job batch per sweep), then each judged into its report.
    /// One answer per sweep, in order.
    pub fn probe_all(
        &self,
        specs: &[Sweep],
        targets: &[TargetDevice],
    ) -> Vec<Result<ProbeReport, ProbeError>> {
        let started = Instant::now();
        let planned: Vec<Result<(Setup, Planned), ProbeError>> = specs
            .iter()
            .map(|spec| {
                let setup = self.setup(spec)?;
                let planned = self.plan(spec, targets, &setup)?;
                Ok((setup, planned))
            })
            .collect();
        let jobs: Vec<crate::plan::Job> = planned
            .iter()
            .flatten()
            .flat_map(|(_, p)| p.jobs.iter().map(|j| j.job.clone()))
            .collect();
        let compiled = self.compile(&jobs);
        let interrupted = self.settings.cancel.is_cancelled();
        let mut outcomes = compiled.outcomes.into_iter();
        planned
            .into_iter()
            .zip(specs)
            .map(|(planned, spec)| {
                let (setup, planned) = planned?;
                let mine: Vec<_> = outcomes.by_ref().take(planned.jobs.len()).collect();
                let input_error = mine.iter().find_map(|(o, _)| {
                    let error = o.error.as_ref().filter(|e| e.kind.is_input_error())?;
                    Some(error.message.clone())
                });
                // The batch's counts: its sweeps were compiled together.
                let totals = Totals {
                    recomputed: compiled.recomputed,
                    seconds: started.elapsed().as_secs_f64(),
                    workers: compiled.workers.clone(),
                    interrupted,
                };
                report_of(planned, setup, self.toolchain, &mine, input_error, totals)
                    .map_err(|message| rejected(spec, &message))
            })
            .collect()
    }

    /// Plan the sweep, compile the jobs `keep` says yes to (one answer per planned job), judge
    /// and report.
    pub(crate) fn probe_kept(
        &self,
        spec: &Sweep,
        targets: &[TargetDevice],
        keep: impl FnOnce(&Planned) -> Vec<bool>,
    ) -> Result<ProbeReport, ProbeError> {
        let started = Instant::now();
        let setup = self.setup(spec)?;
        let mut planned = self.plan(spec, targets, &setup)?;
        let mut kept = keep(&planned).into_iter();
        planned.jobs.retain(|_| kept.next().unwrap_or(false));
        let jobs: Vec<crate::plan::Job> = planned.jobs.iter().map(|p| p.job.clone()).collect();
        let compiled = self.compile(&jobs);
        let totals = Totals {
            recomputed: compiled.recomputed,
            seconds: started.elapsed().as_secs_f64(),
            workers: compiled.workers.clone(),
            interrupted: self.settings.cancel.is_cancelled(),
        };
        report_of(
            planned,
            setup,
            self.toolchain,
            &compiled.outcomes,
            compiled.input_error,
            totals,
        )
        .map_err(|message| rejected(spec, &message))
    }

    /// The compile jobs a probe of `spec` would run, without compiling: for the benchmark's
    /// baseline, which compiles the same jobs in a plain Python loop.
    pub fn jobs(
        &self,
        spec: &Sweep,
        targets: &[TargetDevice],
    ) -> Result<Vec<CompileJob>, ProbeError> {
        let setup = self.setup(spec)?;
        Ok(self
            .plan(spec, targets, &setup)?
            .jobs
            .iter()
            .map(|planned: &PlannedJob| planned.compile_job().clone())
            .collect())
    }

    /// Plan a sweep with the run's settings.
    pub(crate) fn plan(
        &self,
        spec: &Sweep,
        targets: &[TargetDevice],
        setup: &Setup,
    ) -> Result<Planned, ProbeError> {
        Ok(plan_sweep(
            spec,
            targets,
            setup,
            depth(self.settings),
            &self.settings.cancel,
        )?)
    }

    /// Compile `jobs` on the run's pool.
    pub(crate) fn compile(&self, jobs: &[crate::plan::Job]) -> compile::Compiled {
        compile::compile_all(jobs, &self.pool, self.settings)
    }

    /// The kernel's interface (asked of a worker, or read from the cache) and its key context.
    pub(crate) fn setup(&self, spec: &Sweep) -> Result<Setup, ProbeError> {
        let kernel_file = spec.kernel_file.display().to_string();
        let (source_sha256, context) = key_context(spec, self.toolchain, self.settings)?;
        let interface = compile::inspect(
            &spec.kernel_file,
            &spec.function,
            &spec.source,
            &self.pool,
            self.settings.use_cache,
            &self.settings.cache_dir,
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
}

/// Probe `spec` on `targets` with a pipeline of its own: for a run that makes one sweep.
pub fn probe(
    spec: &Sweep,
    targets: &[TargetDevice],
    toolchain: &Toolchain,
    settings: &Settings,
) -> Result<ProbeReport, ProbeError> {
    Pipeline::new(toolchain, settings, "probe").probe(spec, targets)
}

/// How deep the run's compiles go.
pub(crate) fn depth(settings: &Settings) -> Depth {
    Depth {
        full: settings.full_compile,
        resources: settings.read_resources,
    }
}

/// The kernel file's SHA-256 and the key context of its compiles under `toolchain`'s Triton and
/// Python (read from the file and the worker script; nothing runs).
pub(crate) fn key_context(
    spec: &Sweep,
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
        env: toolchain.env.clone(),
    };
    Ok((source_sha256, context))
}

/// The spec's arguments, constexprs or options are rejected by Triton.
pub(crate) fn rejected(spec: &Sweep, message: &str) -> ProbeError {
    ProbeError::Spec(SpecError::Field {
        path: spec.origin.shown(),
        field: "[args] / [constexprs] / [options]".to_owned(),
        problem: format!("are rejected by Triton: {message}"),
        fix: "check the names and types against the kernel's signature".to_owned(),
    })
}
