//! `tilefit probe SPEC.toml --triton A,B,...`: the probe under each Triton version (one pipeline
//! each), as one matrix report with what changed between versions; each version gated as its own
//! run would be.

use tilefit_core::run::matrix;

use crate::emit;
use crate::session::probe::ProbeSession;

pub fn run(run: &ProbeSession, versions: &[String]) -> anyhow::Result<u8> {
    let session = &run.session;
    let report = matrix::probe_matrix(
        &run.spec,
        &run.targets,
        versions,
        session.wanted.python.as_deref(),
        &session.settings,
    );
    session.progress.finish();
    let report = report?;
    emit::emit_without_html(&report, &run.outputs.output)?;
    emit::finish_matrix(&report, &run.outputs.output)
}
