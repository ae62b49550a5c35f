//! `tilefit verify INPUT`: on a machine with an NVIDIA GPU, compile the spec's configs (or the
//! cache's kernels, or a saved report's source) for the local arch with binaries kept, put each
//! before the driver, and report prediction against driver with the agreement rate. Exit 1 on any
//! disagreement, 2 when there is no driver.

use tilefit_core::render::{Exporter, Terminal};
use tilefit_core::run::verify_local::verify_local;

use crate::cli::VerifyArgs;
use crate::exit_codes;
use crate::output;
use crate::session::verify::VerifySession;

pub fn run(args: &VerifyArgs) -> anyhow::Result<u8> {
    let run = VerifySession::of(args)?;
    let report = verify_local(&run.request, &run.settings);
    run.progress.0.finish();
    let report = report?;
    match run.json.as_deref() {
        Some("-") => output::print_json(&report)?,
        Some(path) => tilefit_core::write::write_file(
            std::path::Path::new(path),
            &(serde_json::to_string_pretty(&report)? + "\n"),
        )?,
        None => {}
    }
    if run.json.as_deref() != Some("-") {
        output::print(&Terminal.export(&report))?;
    }
    let disagreements = report.rows.len() - report.agreed;
    if disagreements > 0 {
        output::note(&format!(
            "tilefit: {disagreements} predictions disagree with the driver"
        ));
        return Ok(exit_codes::GATE_FAILED);
    }
    Ok(exit_codes::OK)
}
