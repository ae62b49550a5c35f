//! `tilefit probe SPEC.toml --triton A,B,...`: the probe under each Triton version (one pipeline
//! each), as one matrix report with what changed between versions; each version gated as its own
//! run would be.

use tilefit_core::compile::Event;
use tilefit_core::input::spec;
use tilefit_core::run::{fleet, matrix};

use crate::cli::ProbeArgs;
use crate::emit;
use crate::session::Session;

pub fn run(args: &ProbeArgs, versions: &[String]) -> anyhow::Result<u8> {
    let spec = spec::load(&args.spec)?;
    let targets = fleet::of_spec(&spec, &args.targets)?;
    let session = Session::new(&args.compile, args.worker_script.clone())?;
    let mut on_note = |line: String| session.note(&line);
    let mut on_event = |event: Event| session.progress.event(event);
    let report = matrix::probe_matrix(
        &spec,
        &targets,
        versions,
        args.compile.python.python.as_deref(),
        &session.settings,
        &mut on_note,
        &mut on_event,
    );
    session.progress.finish();
    let report = report?;
    emit::emit_without_html(&report, &args.output)?;
    emit::finish_matrix(&report, &args.output)
}
