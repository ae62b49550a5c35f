//! Diffing two probe reports: results matched by (config, arch), bytes and each device's verdict
//! compared. A flip from fits to over is what a Triton or kernel upgrade must not bring.

use std::collections::BTreeMap;

use crate::model::diff::{Change, Flip, ReportDiff};
use crate::model::probe::{ProbeReport, ProbeResult};

/// What changed from `old` to `new`, in `new`'s result order.
pub fn diff(old: &ProbeReport, new: &ProbeReport) -> ReportDiff {
    let key = |r: &ProbeResult| {
        (
            serde_json::to_string(&r.config).expect("configs serialize"),
            r.arch.clone(),
        )
    };
    let before: BTreeMap<_, &ProbeResult> = old.results.iter().map(|r| (key(r), r)).collect();
    let after: BTreeMap<_, &ProbeResult> = new.results.iter().map(|r| (key(r), r)).collect();
    let mut changes = Vec::new();
    let mut compared = 0;
    for result in &new.results {
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
        old_triton: old.triton_version.clone(),
        new_triton: new.triton_version.clone(),
        compared,
        changes,
        only_old: before.keys().filter(|k| !after.contains_key(*k)).count(),
        only_new: after.keys().filter(|k| !before.contains_key(*k)).count(),
    }
}
