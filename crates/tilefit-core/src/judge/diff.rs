//! Diffing two probe reports, or two captures: results matched by (config, arch), bytes and each
//! device's verdict compared (a capture's launches also by their place). A flip from fits to
//! over is what a Triton, engine or kernel upgrade must not bring.

use std::collections::BTreeMap;

use crate::model::diff::{Change, Flip, ReportDiff};
use crate::model::probe::{ProbeReport, ProbeResult};
use crate::model::verdict::VerdictCode;

/// What changed from `old` to `new`, in `new`'s result order; Triton's knobs first where the
/// two ran under different ones (a knob moves bytes as a version does).
pub fn diff(old: &ProbeReport, new: &ProbeReport) -> ReportDiff {
    let mut d = diff_results(
        (&old.triton_version, &old.results),
        (&new.triton_version, &new.results),
    );
    if let Some(words) = knobs_changed(&old.triton_env, &new.triton_env) {
        d.named.insert(0, words);
    }
    d
}

/// `Triton's knobs differ: TRITON_HIP_USE_ASYNC_COPY=1 (was unset)`, where they do.
fn knobs_changed(old: &BTreeMap<String, String>, new: &BTreeMap<String, String>) -> Option<String> {
    let names: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let shown = |value: Option<&String>| value.map_or_else(|| "unset".to_owned(), Clone::clone);
    let changed: Vec<String> = names
        .into_iter()
        .filter(|name| old.get(*name) != new.get(*name))
        .map(|name| {
            format!(
                "{name}={} (was {})",
                shown(new.get(name)),
                shown(old.get(name))
            )
        })
        .collect();
    (!changed.is_empty()).then(|| format!("Triton's knobs differ: {}", changed.join(", ")))
}

/// What changed between two captures of one script: each distinct compile of each target (its
/// kernel, constexprs and options as the config, its arch), its bytes and its device's verdict.
pub fn diff_captures(
    old: &crate::model::capture::CaptureReport,
    new: &crate::model::capture::CaptureReport,
) -> ReportDiff {
    let mut d = diff_results(
        (&old.triton_version, &capture_results(old)),
        (&new.triton_version, &capture_results(new)),
    );
    launch_changes(old, new, &mut d);
    d
}

/// Launches compared by their place (target, kernel, the user's call): a launch whose config
/// changed (so no compile of it is in both reports) and that went from running to crashing
/// the engine, or back, is a change of its own.
fn launch_changes(
    old: &crate::model::capture::CaptureReport,
    new: &crate::model::capture::CaptureReport,
    d: &mut ReportDiff,
) {
    use crate::model::capture::{LaunchReport, TargetCapture};
    let crashes = |l: &LaunchReport| l.verdict.crashes();
    let keys = |t: &TargetCapture, l: &LaunchReport| -> Vec<String> {
        l.compiles
            .iter()
            .filter_map(|&i| t.compiles.get(i))
            .map(|c| {
                serde_json::to_string(&(&c.kernel.function, super::capture::config_of(c)))
                    .unwrap_or_default()
            })
            .collect()
    };
    let biggest = |t: &TargetCapture, l: &LaunchReport| {
        l.compiles
            .iter()
            .filter_map(|&i| t.compiles.get(i)?.result.as_ref()?.shared_bytes)
            .max()
    };
    for target in &new.targets {
        let Some(was) = old
            .targets
            .iter()
            .find(|t| t.device.device == target.device.device)
        else {
            continue;
        };
        for launch in &target.launches {
            let place = |l: &LaunchReport| (l.kernel.function.clone(), l.caller.clone());
            let Some(before) = was.launches.iter().find(|l| place(l) == place(launch)) else {
                continue;
            };
            let old_keys = keys(was, before);
            if keys(target, launch).iter().any(|k| old_keys.contains(k)) {
                continue;
            }
            d.compared += 1;
            if crashes(before) == crashes(launch) {
                continue;
            }
            let code = |crash: bool| {
                if crash {
                    VerdictCode::OverBudget
                } else {
                    VerdictCode::Fits
                }
            };
            let mut config = BTreeMap::new();
            config.insert(
                "kernel".to_owned(),
                serde_json::Value::from(launch.kernel.function.clone()),
            );
            if let Some(site) = &launch.caller {
                config.insert(
                    "launched at".to_owned(),
                    serde_json::Value::from(format!(
                        "{}:{}",
                        super::capture::file_name(&site.file),
                        site.line
                    )),
                );
            }
            d.changes.push(Change {
                config: config.into_iter().collect(),
                arch: target.device.arch.clone(),
                old_bytes: biggest(was, before),
                new_bytes: biggest(target, launch),
                flips: vec![Flip {
                    device: target.device.device.clone(),
                    old: code(crashes(before)),
                    new: code(crashes(launch)),
                }],
            });
        }
    }
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
    let unchanged: Vec<&ProbeResult> = new_results
        .iter()
        .filter(|r| before.contains_key(&key(r)))
        .filter(|r| {
            !changes
                .iter()
                .any(|c| c.config == r.config && c.arch == r.arch)
        })
        .collect();
    ReportDiff {
        old_triton: old_triton.clone(),
        new_triton: new_triton.clone(),
        compared,
        named: named(&changes, &unchanged),
        changes,
        only_old: before.keys().filter(|k| !after.contains_key(*k)).count(),
        only_new: after.keys().filter(|k| !before.contains_key(*k)).count(),
    }
}

/// What the byte changes have in common: a config value that every change has and no unchanged
/// result has, then the factor (`x2.00`) or the fixed amount (`+1,536`) every change moved by.
fn named(changes: &[Change], unchanged: &[&ProbeResult]) -> Vec<String> {
    let sized: Vec<(u64, u64)> = changes
        .iter()
        .filter_map(|c| Some((c.old_bytes?, c.new_bytes?)))
        .filter(|(old, new)| old != new && *old > 0)
        .collect();
    if sized.is_empty() {
        return Vec::new();
    }
    let mut words = Vec::new();
    let first = &changes[0].config;
    for (axis, value) in first {
        let shared = changes.iter().all(|c| c.config.get(axis) == Some(value));
        let others: Vec<String> = unchanged
            .iter()
            .filter_map(|r| r.config.get(axis))
            .filter(|v| *v != value)
            .map(crate::model::naming::value_text)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let none_alike = unchanged.iter().all(|r| r.config.get(axis) != Some(value));
        if shared && none_alike && !others.is_empty() {
            words.push(format!(
                "every change has {axis}={}; none with {axis}={} changed",
                crate::model::naming::value_text(value),
                others.join(" or ")
            ));
        }
    }
    #[allow(clippy::cast_precision_loss)]
    let factors: Vec<f64> = sized
        .iter()
        .map(|(old, new)| *new as f64 / *old as f64)
        .collect();
    let (low, high) = factors
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), f| (l.min(*f), h.max(*f)));
    let steps: std::collections::BTreeSet<i128> = sized
        .iter()
        .map(|(old, new)| i128::from(*new) - i128::from(*old))
        .collect();
    let growth = if high - low < 0.005 {
        format!("bytes x{low:.2} in every change")
    } else if let [step] = steps.iter().collect::<Vec<_>>()[..] {
        let sign = if *step > 0 { "+" } else { "-" };
        format!(
            "{sign}{} bytes in every change (a fixed amount, not a factor: x{low:.2} to x{high:.2})",
            crate::units::format_count(u64::try_from(step.unsigned_abs()).unwrap_or(u64::MAX))
        )
    } else {
        format!("bytes x{low:.2} to x{high:.2}")
    };
    words.push(growth);
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(precision: &str, stages: u64, bytes: u64) -> ProbeResult {
        serde_json::from_value(serde_json::json!({
            "config": {"PRECISION": precision, "num_stages": stages},
            "config_index": 0,
            "arch": "sm_89",
            "backend": "cuda",
            "status": "ok",
            "shared_bytes": bytes,
            "tmem_size": null,
            "error": null,
            "cached": false,
            "divisible_by_16": [],
            "specialized_to_1": [],
            "compile_seconds": 0.0,
            "verdicts": [],
        }))
        .unwrap()
    }

    #[test]
    fn the_changes_are_named_by_the_value_they_share_and_how_the_bytes_moved() {
        let old = vec![
            result("tf32", 2, 1536),
            result("tf32x3", 2, 1536),
            result("tf32x3", 3, 2560),
        ];
        let fixed = vec![
            result("tf32", 2, 1536),
            result("tf32x3", 2, 3072),
            result("tf32x3", 3, 4096),
        ];
        let d = diff_results((&"3.6.0".into(), &old), (&"3.8.0".into(), &fixed));
        assert_eq!(d.changes.len(), 2);
        assert_eq!(
            d.named,
            [
                "every change has PRECISION=tf32x3; none with PRECISION=tf32 changed",
                "+1,536 bytes in every change (a fixed amount, not a factor: x1.60 to x2.00)",
            ]
        );
        // One factor for every change: named as the factor.
        let doubled = vec![
            result("tf32", 2, 1536),
            result("tf32x3", 2, 3072),
            result("tf32x3", 3, 5120),
        ];
        let d = diff_results((&"3.6.0".into(), &old), (&"3.8.0".into(), &doubled));
        assert_eq!(d.named[1], "bytes x2.00 in every change");
        // Nothing changed: nothing named.
        let d = diff_results((&"3.6.0".into(), &old), (&"3.7.1".into(), &old));
        assert!(d.named.is_empty());
        // Knobs that differ are named, whatever moved.
        let set: BTreeMap<String, String> =
            [("TRITON_HIP_USE_ASYNC_COPY".to_owned(), "1".to_owned())].into();
        assert_eq!(
            knobs_changed(&BTreeMap::new(), &set).as_deref(),
            Some("Triton's knobs differ: TRITON_HIP_USE_ASYNC_COPY=1 (was unset)")
        );
        assert_eq!(knobs_changed(&set, &set), None);
    }
}
