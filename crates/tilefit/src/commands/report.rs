//! `tilefit report RESULTS.json`: render a report saved with `--json` again, in any format,
//! and apply the gate, without compiling anything.

use tilefit_core::hint::Hinted;
use tilefit_core::model::saved::SavedReport;

use crate::cli::ReportArgs;
use crate::emit;

pub fn run(args: &ReportArgs) -> anyhow::Result<u8> {
    match SavedReport::read(&args.results)? {
        SavedReport::Probe(report) => {
            emit::emit(report.as_ref(), &args.output)?;
            if let Some(path) = &args.emit_configs {
                emit::emit_configs(&report, path)?;
            }
            emit::finish(report.as_ref(), &args.output)
        }
        SavedReport::Capture(report) => {
            if args.emit_configs.is_some() {
                return Err(Hinted::new(
                    "`--emit-configs` needs a probe report: a capture judges the configs its script launched",
                    "probe the specs `tilefit capture --emit-spec DIR` writes",
                )
                .into());
            }
            emit::finish_capture(&report, &args.output, None)
        }
        SavedReport::Replay(report) => {
            if args.emit_configs.is_some() {
                return Err(Hinted::new(
                    "`--emit-configs` needs a probe report: a replay has no alternative configs to recommend",
                    "run `tilefit probe` on a spec that sweeps the kernel's configs",
                )
                .into());
            }
            emit::emit(report.as_ref(), &args.output)?;
            emit::finish(report.as_ref(), &args.output)
        }
    }
}
