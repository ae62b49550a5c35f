//! Judging a probe's compiles: each result against every device of its arch (shared memory
//! against the budget, then the thread limit and occupancy where the binary was read), and the
//! recommended config per device and workload variant under the spec's rule.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::compile::toolchain::Toolchain;
use crate::compile::{self, CompileOutcome, OutcomeError};
use crate::device::TargetDevice;
use crate::device::occupancy::{self, BlockNeeds};
use crate::input::spec::{ListKind, Preference, Sweep};
use crate::judge::verdict;
use crate::model::probe::{
    KernelInfo, ProbeReport, ProbeResult, ProbeStats, REPORT_SCHEMA_VERSION, Recommendation,
    RuleSummary, ToolInfo,
};
use crate::model::verdict::{DeviceVerdict, VerdictCode};
use crate::resources::KernelResources;
use crate::vocab::CompileJob;
use crate::vocab::Config;

pub(crate) fn result_for(
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

/// One device's verdict on a compile: shared memory against its budget, then the block's threads
/// (num_warps x the arch's warp size) against the device's limit, lowered to what the registers
/// leave where the binary's resources are known, and its occupancy.
pub fn judge_on(device: &TargetDevice, outcome: &CompileOutcome) -> DeviceVerdict {
    let verdict = verdict::judge(
        outcome.status,
        outcome.shared,
        &device.device,
        device.smem_per_block_optin,
    );
    let block = |warps: u64| {
        u32::try_from(warps)
            .unwrap_or(u32::MAX)
            .saturating_mul(device.warp_size)
    };
    let threads = outcome.num_warps.map(block);
    let occupancy = match (&device.sm_limits, &outcome.resources, outcome.shared) {
        (Some(limits), Some(resources), Some(shared)) => Some(occupancy::occupancy(
            limits,
            &BlockNeeds {
                registers_per_thread: resources.registers_per_thread,
                static_shared: resources.static_shared_bytes,
                dynamic_shared: shared,
                // Triton's default when the compile did not say.
                threads_per_block: threads.unwrap_or_else(|| block(4)),
            },
        )),
        _ => None,
    };
    verdict
        .with_occupancy(occupancy)
        .with_thread_limit(threads, device.max_threads_per_block)
}

pub(crate) fn recommend(
    spec: &Sweep,
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

/// Recommend and put the report together.
pub fn assemble(
    spec: &Sweep,
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
        triton_env: toolchain.env.clone(),
        spec: spec.origin.shown(),
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
pub fn uniform_failure(outcomes: &[(CompileOutcome, bool)]) -> Option<String> {
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
