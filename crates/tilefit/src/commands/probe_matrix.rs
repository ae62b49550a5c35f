//! `tilefit probe SPEC.toml --triton A,B,...`: the probe under each Triton version (one pipeline
//! each), as one matrix report with what changed between versions; each version gated as its own
//! run would be.

use tilefit_core::compile::Event;
use tilefit_core::run::matrix;

use crate::emit;
use crate::session::ProbeSession;

pub fn run(run: &ProbeSession, versions: &[String]) -> anyhow::Result<u8> {
    let session = &run.session;
    let mut on_note = |line: String| session.note(&line);
    let mut on_event = |event: Event| session.progress.event(event);
    let report = matrix::probe_matrix(
        &run.spec,
        &run.targets,
        versions,
        session.wanted.python.as_deref(),
        &session.settings,
        &mut on_note,
        &mut on_event,
    );
    session.progress.finish();
    let report = report?;
    emit::emit_without_html(&report, &run.outputs.output)?;
    emit::finish_matrix(&report, &run.outputs.output)
}
