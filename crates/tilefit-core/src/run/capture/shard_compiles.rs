//! A sharded capture's compiles and fixes, taken from the shards' reports instead of compiled
//! again (`tilefit merge`): each compile by the kernel and every value it was compiled with, each
//! crashing launch's fix from the shard that judged the same launch.

use std::collections::BTreeMap;

use crate::model::capture::{CompileReport, LaunchReport, TargetCapture};
use crate::plan::capture::Compile;

/// What identifies a compile across shards: the kernel and every value it was compiled with.
fn key_of_compile(c: &Compile) -> String {
    serde_json::json!([c.kernel, c.args, c.constexprs, c.options, c.globals]).to_string()
}

fn key_of_report(c: &CompileReport) -> String {
    serde_json::json!([c.kernel, c.args, c.constexprs, c.options, c.globals]).to_string()
}

/// The compiles from the shards' reports: each taken from the first shard that made it.
pub(super) fn from_shards(shards: &[&TargetCapture], compiles: &[Compile]) -> Vec<CompileReport> {
    let made: BTreeMap<String, &CompileReport> = shards
        .iter()
        .flat_map(|t| t.compiles.iter())
        .map(|c| (key_of_report(c), c))
        .rev()
        .collect();
    compiles
        .iter()
        .map(|compile| match made.get(&key_of_compile(compile)) {
            Some(report) => (*report).clone(),
            None => CompileReport {
                kernel: compile.kernel.clone(),
                args: compile.args.clone(),
                constexprs: compile.constexprs.clone(),
                options: compile.options.clone(),
                globals: compile.globals.clone(),
                result: None,
                error: Some(
                    "no shard's report holds this compile: the shards are not of one run"
                        .to_owned(),
                ),
                inductor_shared: compile.inductor_shared,
                inductor_choice: compile.inductor_choice.clone(),
                inductor_rescaled: compile.inductor_rescaled.clone(),
            },
        })
        .collect()
}

/// Each crashing launch's fix, from the shard that judged the same launch.
pub(super) fn fixes_from_shards(shards: &[&TargetCapture], report: &mut TargetCapture) {
    let keys = |target: &TargetCapture, launch: &LaunchReport| {
        let compiles: Vec<String> = launch
            .compiles
            .iter()
            .filter_map(|&i| target.compiles.get(i).map(key_of_report))
            .collect();
        (
            serde_json::to_string(&launch.kernel).unwrap_or_default(),
            serde_json::to_string(&launch.caller).unwrap_or_default(),
            compiles,
        )
    };
    let fixes: Vec<_> = report
        .launches
        .iter()
        .map(|launch| {
            if !launch.verdict.crashes() {
                return None;
            }
            let wanted = keys(report, launch);
            shards.iter().find_map(|shard| {
                shard
                    .launches
                    .iter()
                    .find(|l| l.fix.is_some() && keys(shard, l) == wanted)
                    .and_then(|l| l.fix.clone())
            })
        })
        .collect();
    for (launch, fix) in report.launches.iter_mut().zip(fixes) {
        launch.fix = fix;
    }
}
