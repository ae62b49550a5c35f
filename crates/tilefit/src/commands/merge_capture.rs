//! `tilefit merge SHARD.json...` of a sharded capture: every target's records from every shard
//! put back into the single run's report (`run::capture::merge`), printed and gated like it.
//! Nothing runs and nothing compiles: the compiles are the shards'.

use std::path::PathBuf;

use tilefit_core::model::capture::CaptureReport;

use crate::cli::MergeArgs;
use crate::emit;

pub fn run(args: &MergeArgs, shards: &[(CaptureReport, PathBuf)]) -> anyhow::Result<u8> {
    let report = tilefit_core::run::capture::merge(shards)?;
    let tests: usize = report.targets.iter().map(|t| t.tests.len()).sum();
    crate::output::note(&format!(
        "tilefit: merged {} capture shards: {} targets, {tests} tests",
        shards.len(),
        report.targets.len()
    ));
    emit::finish_capture(&report, &args.output, args.junit.as_deref())
}
