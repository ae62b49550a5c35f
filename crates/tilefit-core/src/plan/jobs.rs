//! Planning a probe's compiles: one job per (config, distinct arch) of the fleet (or, for a config
//! file's entry, the archs it is judged on), each with the one cache key and a cost estimate.

use serde_json::Value;

use crate::device::{Target, TargetDevice};
use crate::input::spec::Sweep;
use crate::plan::job::BoundConfig;
use crate::plan::{Job, KeyContext, key};
use crate::vocab::{CompileJob, Config, Request, describe_config};

/// How far each job compiles: through the binary (`full`), and whether it sends back the binary
/// and ptxas's log for registers and spills (`resources`, which implies `full`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Depth {
    /// Compile through the binary instead of stopping once shared memory is allocated.
    pub full: bool,
    /// Read registers, local memory and spills from the binary.
    pub resources: bool,
}

/// One compile to do: which config it is, and the compile job.
#[derive(Debug, Clone)]
pub struct PlannedJob {
    /// Index of the config in sweep order.
    pub config_index: usize,
    /// The compile job.
    pub job: Job,
}

impl PlannedJob {
    /// The compile job inside the request.
    pub fn compile_job(&self) -> &CompileJob {
        match &self.job.request {
            Request::Compile { job, .. } => job,
            _ => unreachable!("a probe plans compile requests only"),
        }
    }
}

/// The distinct archs of the fleet, in fleet order: each compiles once however many of its
/// devices the fleet names.
pub fn fleet_archs(targets: &[TargetDevice]) -> Vec<Target> {
    let mut archs: Vec<Target> = Vec::new();
    for device in targets {
        if !archs.iter().any(|t| t.arch == device.arch) {
            archs.push(device.target());
        }
    }
    archs
}

/// One job per (config, arch), archs in fleet order; a config that lists its archs (a config
/// file's entry) only for those.
pub fn plan_jobs(
    spec: &Sweep,
    configs: &[Config],
    bound: Vec<BoundConfig>,
    targets: &[TargetDevice],
    context: &KeyContext,
    depth: Depth,
) -> Vec<PlannedJob> {
    let archs = fleet_archs(targets);
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
                source: spec.source.clone(),
                args: binding.args.clone(),
                constexprs: binding.constexprs.clone(),
                options: binding.options.clone(),
                target: target.clone(),
                full: depth.full || depth.resources,
                resources: depth.resources,
            };
            let cost = cost_estimate(&job);
            let request = Request::Compile {
                job,
                binary_dir: None,
            };
            jobs.push(PlannedJob {
                config_index,
                job: Job {
                    key: key(&request, context),
                    label: format!(
                        "{} {}",
                        target.arch,
                        describe_config(&configs[config_index])
                    ),
                    cost,
                    request,
                },
            });
        }
    }
    jobs
}

/// A rough, monotone guess of a compile's cost: bigger tiles and deeper pipelines take longer.
pub fn cost_estimate(job: &CompileJob) -> u64 {
    let numbers = job
        .constexprs
        .values()
        .chain(job.options.values())
        .filter_map(Value::as_u64)
        .filter(|&v| v > 1);
    numbers.fold(1_u64, u64::saturating_mul)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceTable;

    fn spec() -> Sweep {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/mla_decode/spec.toml");
        crate::input::spec::load(&path).unwrap()
    }

    fn context() -> KeyContext {
        KeyContext {
            env: std::collections::BTreeMap::new(),
            source: "kernel".into(),
            triton: "3.7.1".into(),
            python: "3.11".into(),
            worker: "w".into(),
        }
    }

    fn bound(spec: &Sweep, configs: &[Config]) -> Vec<BoundConfig> {
        configs
            .iter()
            .map(|_| BoundConfig {
                args: std::collections::BTreeMap::new(),
                constexprs: std::collections::BTreeMap::new(),
                options: spec.options.iter().cloned().collect(),
            })
            .collect()
    }

    #[test]
    fn one_job_per_config_and_distinct_arch() {
        let spec = spec();
        let table = DeviceTable::builtin().unwrap();
        // Two sm_120 devices and one sm_90: two archs.
        let names = ["rtx-pro-6000", "rtx-5090", "h100"].map(str::to_owned);
        let targets = TargetDevice::resolve(table, &names).unwrap();
        let configs = spec.configs();
        let jobs = plan_jobs(
            &spec,
            &configs,
            bound(&spec, &configs),
            &targets,
            &context(),
            Depth::default(),
        );
        assert_eq!(jobs.len(), configs.len() * 2);
        assert_eq!(jobs[0].compile_job().target.arch, "sm_120");
        assert_eq!(jobs[1].compile_job().target.arch, "sm_90");
        assert_eq!(jobs[1].config_index, 0);
        assert!(jobs[0].job.label.starts_with("sm_120 kv_dtype=bf16"));
        // Keys differ by arch, and a key is stable.
        assert_ne!(jobs[0].job.key, jobs[1].job.key);
        let again = plan_jobs(
            &spec,
            &configs,
            bound(&spec, &configs),
            &targets,
            &context(),
            Depth::default(),
        );
        assert_eq!(again[0].job.key, jobs[0].job.key);
        // Another Triton is another key.
        let other = KeyContext {
            triton: "3.6.0".into(),
            ..context()
        };
        let moved = plan_jobs(
            &spec,
            &configs,
            bound(&spec, &configs),
            &targets,
            &other,
            Depth::default(),
        );
        assert_ne!(moved[0].job.key, jobs[0].job.key);
    }

    #[test]
    fn costs_grow_with_tiles_and_stages() {
        let job = |stages: u64, block: u64| CompileJob {
            kernel_file: "k.py".into(),
            function: "k".into(),
            source: crate::vocab::KernelSource::default(),
            args: std::collections::BTreeMap::new(),
            constexprs: [("BLOCK".to_owned(), Value::from(block))].into(),
            options: [("num_stages".to_owned(), Value::from(stages))].into(),
            target: Target {
                backend: crate::device::Backend::Cuda,
                arch: "sm_90".into(),
                warp_size: 32,
            },
            full: false,
            resources: false,
        };
        assert!(cost_estimate(&job(4, 64)) > cost_estimate(&job(2, 64)));
        assert!(cost_estimate(&job(2, 128)) > cost_estimate(&job(2, 64)));
    }
}
