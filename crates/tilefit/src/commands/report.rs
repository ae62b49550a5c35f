//! `tilefit report RESULTS.json`: render a report saved with `--json` again, in any format,
//! and apply the gate, without compiling anything.

use super::output::{self, SavedReport};
use crate::cli::ReportArgs;
use crate::failure::hinted;

pub fn run(args: &ReportArgs) -> anyhow::Result<u8> {
    match output::read_report(&args.results)? {
        SavedReport::Probe(report) => {
            output::emit(report.as_ref(), &args.output)?;
            if let Some(path) = &args.emit_configs {
                output::emit_configs(&report, path)?;
            }
            output::finish(report.as_ref(), &args.output)
        }
        SavedReport::Replay(report) => {
            if args.emit_configs.is_some() {
                return Err(hinted(
                    "`--emit-configs` needs a probe report: a replay has no alternative configs to recommend",
                    "run `tilefit probe` on a spec that sweeps the kernel's configs",
                ));
            }
            output::emit(report.as_ref(), &args.output)?;
            output::finish(report.as_ref(), &args.output)
        }
    }
}
