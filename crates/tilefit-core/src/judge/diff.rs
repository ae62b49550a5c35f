//! Diffing two probe reports: results matched by (config, arch), bytes and each device's verdict
//! compared. A flip from fits to over is what a Triton or kernel upgrade must not bring.

use std::collections::BTreeMap;

use crate::model::diff::{Change, Flip, ReportDiff};
use crate::model::probe::{ProbeReport, ProbeResult};

/// What changed from `old` to `new`, in `new`'s result order.
pub fn diff(old: &ProbeReport, new: &ProbeReport) -> ReportDiff {
    diff_results(
        (&old.triton_version, &old.results),
        (&new.triton_version, &new.results),
    )
}

/// What changed between two captures of one script: each distinct compile of each target (its
/// kernel, constexprs and options as the config, its arch), its bytes and its device's verdict.
pub fn diff_captures(
    old: &crate::model::capture::CaptureReport,
    new: &crate::model::capture::CaptureReport,
) -> ReportDiff {
    diff_results(
        (&old.triton_version, &capture_results(old)),
        (&new.triton_version, &capture_results(new)),
    )
}

/// A capture's compiles as probe results keyed by what they compiled: the kernel's name joined
/// to each compile's constexprs and options.
fn capture_results(report: &crate::model::capture::CaptureReport) -> Vec<ProbeResult> {
    let mut results = Vec::new();
    for target in &report.targets {
        for compile in &target.compiles {
            let Some(result) = &compile.result else {
                continue;
            };
            let mut config = super::capture::config_of(compile);
            config.insert(
                "kernel".to_owned(),
                serde_json::Value::from(compile.kernel.function.clone()),
            );
            let mut result = result.clone();
            result.config = config.into_iter().collect();
            result.verdicts.retain(|v| v.device == target.device.device);
            results.push(result);
        }
    }
    results
}

/// [`diff`] of two lists of results, each with its Triton version.
fn diff_results(
    (old_triton, old_results): (&String, &Vec<ProbeResult>),
    (new_triton, new_results): (&String, &Vec<ProbeResult>),
) -> ReportDiff {
    let key = |r: &ProbeResult| {
        (
            serde_json::to_string(&r.config).expect("configs serialize"),
            r.arch.clone(),
        )
    };
    let before: BTreeMap<_, &ProbeResult> = old_results.iter().map(|r| (key(r), r)).collect();
    let after: BTreeMap<_, &ProbeResult> = new_results.iter().map(|r| (key(r), r)).collect();
    let mut changes = Vec::new();
    let mut compared = 0;
    for result in new_results {
        let Some(was) = before.get(&key(result)) else {
            continue;
        };
        compared += 1;
        let flips: Vec<Flip> = result
            .verdicts
            .iter()
            .filter_map(|now| {
                let then = was.verdicts.iter().find(|v| v.device == now.device)?;
                (then.verdict != now.verdict).then(|| Flip {
                    device: now.device.clone(),
                    old: then.verdict,
                    new: now.verdict,
                })
            })
            .collect();
        if was.shared_bytes != result.shared_bytes || !flips.is_empty() {
            changes.push(Change {
                config: result.config.clone(),
                arch: result.arch.clone(),
                old_bytes: was.shared_bytes,
                new_bytes: result.shared_bytes,
                flips,
            });
        }
    }
    ReportDiff {
        old_triton: old_triton.clone(),
        new_triton: new_triton.clone(),
        compared,
        changes,
        only_old: before.keys().filter(|k| !after.contains_key(*k)).count(),
        only_new: after.keys().filter(|k| !before.contains_key(*k)).count(),
    }
}
