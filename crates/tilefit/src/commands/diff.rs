//! `tilefit diff OLD.json NEW.json`: what changed between two probe reports, bytes and verdicts;
//! exit 1 when a config that fit a device no longer does (the gate of a Triton or kernel upgrade).
//! One version-matrix report alone diffs each version against the next.

use tilefit_core::render::{Exporter, Markdown, Terminal};

use crate::cli::DiffArgs;
use crate::emit;
use crate::exit_codes;
use crate::output;

pub fn run(args: &DiffArgs) -> anyhow::Result<u8> {
    let tilefit_core::run::diff::Diffs {
        diffs,
        notes,
        new_failed_closed,
    } = tilefit_core::run::diff::diffs(&args.old, args.new.as_deref())?;
    for note in notes {
        output::note(&note);
    }
    match args.json.as_deref() {
        Some("-") => output::print(&(serde_json::to_string_pretty(&diffs)? + "\n"))?,
        Some(path) => tilefit_core::write::write_file(
            std::path::Path::new(path),
            &(serde_json::to_string_pretty(&diffs)? + "\n"),
        )?,
        None => {}
    }
    if args.json.as_deref() != Some("-") {
        for d in &diffs {
            let text = if args.markdown {
                Markdown.export(d)
            } else {
                Terminal.export(d)
            };
            output::print(&text)?;
        }
    }
    // A new capture that failed closed fails the diff as it fails its own gate.
    let new = args.new.as_deref().unwrap_or(&args.old);
    let closed = emit::failed_closed_diff(new, new_failed_closed.as_ref());
    let breaks: usize = diffs.iter().map(|d| d.breaks().len()).sum();
    if breaks > 0 {
        output::note(&format!(
            "tilefit: {breaks} configs that fit a device no longer do"
        ));
        return Ok(exit_codes::GATE_FAILED.max(closed));
    }
    Ok(closed)
}
