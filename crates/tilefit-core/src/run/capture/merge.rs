//! `tilefit merge` of a capture's shards (`tilefit capture --shard K/N`, `pytest
//! --tilefit-emulate --tilefit-shard K/N`): every target's records from every shard put back
//! into one run's (`parts::merge`, the same ordering a run on one machine makes), judged again
//! with the compiles the shards made (nothing compiles), and the run's failures judged again.
//! The shards are files from other machines: each one's records are read as hostile input.

use std::path::PathBuf;

use crate::hint::Hinted;
use crate::input::capture::{Records, of_value};
use crate::judge::capture::target_failures;
use std::collections::BTreeMap;

use crate::model::capture::{CaptureReport, TargetCapture};

use super::compiles::{Compiler, judge_target};
use super::parts;

const HINT: &str = "pass every shard's `--json` of one run (`tilefit capture ... --shard K/N --json shard-K.json`), each once";

/// Every shard once, of one run: the same count, the same script, arguments, Triton and
/// allowances, none twice, none missing.
fn check_shards(shards: &[(CaptureReport, PathBuf)]) -> Result<(), Hinted> {
    let (first, first_path) = shards
        .first()
        .ok_or_else(|| Hinted::new("no shard to merge", HINT))?;
    let count = first.shard.map_or(0, |s| s.count);
    let mut seen = vec![None; count];
    for (report, path) in shards {
        let shard = report.shard.ok_or_else(|| {
            Hinted::new(
                format!(
                    "`{}` is a capture report, not a shard of one",
                    path.display()
                ),
                HINT,
            )
        })?;
        if shard.count != count {
            return Err(Hinted::new(
                format!(
                    "`{}` is shard {}/{}, `{}` one of {count}",
                    path.display(),
                    shard.index,
                    shard.count,
                    first_path.display()
                ),
                HINT,
            ));
        }
        let same = report.script == first.script
            && report.script_args == first.script_args
            && report.triton_version == first.triton_version
            && report.allow_empty == first.allow_empty
            && report.allow_stopped == first.allow_stopped;
        if !same {
            return Err(Hinted::new(
                format!(
                    "`{}` and `{}` are shards of different runs (the script, its arguments, the Triton or the allowances differ)",
                    path.display(),
                    first_path.display()
                ),
                HINT,
            ));
        }
        if let Some(other) = seen[shard.index - 1].replace(path) {
            return Err(Hinted::new(
                format!(
                    "`{}` and `{}` are both shard {}/{count}",
                    other.display(),
                    path.display(),
                    shard.index
                ),
                HINT,
            ));
        }
    }
    let missing: Vec<String> = (1..=count)
        .filter(|k| seen[k - 1].is_none())
        .map(|k| format!("{k}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(Hinted::new(
            format!(
                "the shards {} of the run are missing: a merge without them would judge part of the run",
                missing.join(", ")
            ),
            HINT,
        ));
    }
    Ok(())
}

/// The shards of one capture put back into the report one run would have made.
pub fn merge(shards: &[(CaptureReport, PathBuf)]) -> Result<CaptureReport, Hinted> {
    check_shards(shards)?;
    let (first, first_path) = &shards[0];
    let mut ordered: Vec<&(CaptureReport, PathBuf)> = shards.iter().collect();
    ordered.sort_by_key(|(r, _)| r.shard.map_or(0, |s| s.index));
    let split = first.script == "-m pytest";
    let groups = if split {
        // Every shard ran its share of every target's tests.
        let devices: Vec<&str> = first
            .targets
            .iter()
            .map(|t| t.device.device.as_str())
            .collect();
        for (report, path) in &ordered {
            let theirs: Vec<&str> = report
                .targets
                .iter()
                .map(|t| t.device.device.as_str())
                .collect();
            if theirs != devices {
                return Err(Hinted::new(
                    format!(
                        "`{}` ran other targets ({}) than `{}` ({})",
                        path.display(),
                        theirs.join(","),
                        first_path.display(),
                        devices.join(",")
                    ),
                    HINT,
                ));
            }
        }
        (0..devices.len())
            .map(|t| ordered.iter().map(|(r, p)| (&r.targets[t], p)).collect())
            .collect::<Vec<Vec<_>>>()
    } else {
        // Shard K ran the targets K, K+N, K+2N...: back into the run's order.
        let most = ordered
            .iter()
            .map(|(r, _)| r.targets.len())
            .max()
            .unwrap_or(0);
        (0..most)
            .flat_map(|round| {
                ordered
                    .iter()
                    .filter_map(move |(r, p)| r.targets.get(round).map(|t| vec![(t, p)]))
            })
            .collect()
    };
    let targets = groups
        .into_iter()
        .map(|group| merge_target(&group, first))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CaptureReport {
        targets,
        shard: None,
        incomplete: ordered.iter().any(|(r, _)| r.incomplete),
        workers: None,
        ..first.clone()
    })
}

/// One target from its shards' runs.
fn merge_target(
    group: &[(&TargetCapture, &PathBuf)],
    run: &CaptureReport,
) -> Result<TargetCapture, Hinted> {
    let (base, _) = group[0];
    let mut records: Vec<Records> = Vec::new();
    let mut failure = None;
    for (target, path) in group {
        match (&target.records, &target.failure) {
            (Some(value), _) => records.push(of_value(value.clone(), path).map_err(|e| {
                Hinted::new(
                    format!(
                        "`{}`: the records of {} do not read: {e}",
                        path.display(),
                        target.device.device
                    ),
                    HINT,
                )
            })?),
            (None, Some(why)) => failure = failure.or(Some(why.clone())),
            (None, None) => {
                return Err(Hinted::new(
                    format!(
                        "`{}` holds no records of {}: it is not a shard's report",
                        path.display(),
                        target.device.device
                    ),
                    HINT,
                ));
            }
        }
    }
    // Shards of different checkouts of the suite split different lists of tests: a merge of
    // them would drop some and count others twice.
    let counts: Vec<(u64, &PathBuf)> = records
        .iter()
        .zip(group.iter().filter(|(t, _)| t.records.is_some()))
        .filter_map(|(r, (_, path))| Some((r.collected?, *path)))
        .collect();
    if let Some((n, a)) = counts.first()
        && let Some((m, b)) = counts.iter().find(|(m, _)| m != n)
    {
        return Err(Hinted::new(
            format!(
                "the shards ran different suites on {}: `{}` collected {n} tests, `{}` {m}",
                base.device.device,
                a.display(),
                b.display()
            ),
            "run every shard on the same checkout, with the same arguments",
        ));
    }
    let report = TargetCapture {
        versions: BTreeMap::default(),
        calls: 0,
        stopped: Vec::new(),
        errors: Vec::new(),
        launches: Vec::new(),
        compiles: Vec::new(),
        tests: Vec::new(),
        checks: Vec::new(),
        assumptions: Vec::new(),
        children: group.iter().flat_map(|(t, _)| t.children.clone()).collect(),
        failure: failure.clone(),
        script: parts::combine_runs(group.iter().filter_map(|(t, _)| t.script.clone()).collect()),
        failures: Vec::new(),
        scopes: BTreeMap::default(),
        records: None,
        ..base.clone()
    };
    let shards: Vec<&TargetCapture> = group.iter().map(|(t, _)| *t).collect();
    let mut report = match failure {
        Some(_) => report,
        None => judge_target(Compiler::Shards(&shards), &parts::merge(records), report),
    };
    report.failures = target_failures(&report, run.allow_empty, run.allow_stopped);
    Ok(report)
}
