//! A sweep planned: the kernel's interface and key context ([`Setup`]), and the plan of one probe
//! ([`Planned`]): its prepared spec and fleet, its configs, one job per (config, arch). The run's
//! pipeline makes the setup (it asks a worker) and compiles the plan.

use crate::cancel::Cancel;
use crate::device::TargetDevice;
use crate::input::spec::Sweep;
use crate::plan::KeyContext;
use crate::plan::job;
use crate::plan::jobs::{Depth, PlannedJob, plan_jobs};
use crate::plan::listed::{ListedError, Prepared, prepare_listed};
use crate::vocab::{Config, KernelInterface};

/// The kernel's interface and what keys its compiles.
pub(crate) struct Setup {
    pub(crate) context: KeyContext,
    pub(crate) source_sha256: String,
    pub(crate) interface: KernelInterface,
}

/// The sweep planned: the prepared spec and fleet, its configs, one job per (config, arch).
pub(crate) struct Planned {
    pub(crate) prepared: Prepared,
    pub(crate) configs: Vec<Config>,
    pub(crate) jobs: Vec<PlannedJob>,
}

/// Plan a sweep: the listed configs prepared (the config files mapped to their devices, the
/// launcher's edits made), every config bound to the kernel's parameters (a bad spec fails here,
/// before any compile), one job per (config, arch).
pub(crate) fn plan_sweep(
    spec: &Sweep,
    targets: &[TargetDevice],
    setup: &Setup,
    depth: Depth,
    cancel: &Cancel,
) -> Result<Planned, ListedError> {
    let prepared = prepare_listed(spec, &setup.interface, targets, cancel)?;
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
        depth,
    );
    Ok(Planned {
        prepared,
        configs,
        jobs,
    })
}

/// The key context of what was loaded: where the kernel was extracted from its file, the digest
/// of exactly the source that ran, so an edit elsewhere in the file recompiles nothing.
pub(crate) fn loaded_context(context: KeyContext, interface: &KernelInterface) -> KeyContext {
    match interface.loaded.as_ref().and_then(|l| l.digest.clone()) {
        Some(digest) => KeyContext {
            source: digest,
            ..context
        },
        None => context,
    }
}
