//! `tilefit probe SPEC --emit-files DIR` on a config-file sweep: the fix as files an engine loads.
//!
//! - **Patched copies** of the files whose entries miss their own device: each such entry becomes
//!   the nearest config that fits with the fewest changes (`fix::files::candidates`), every other
//!   byte of the file as it was.
//! - **New files** for the fleet's devices that have none, for every shape and variant the engine
//!   ships files for: derived from the tuned file of the nearest device (same arch first, then the
//!   same backend's closest budget), each entry adjusted the same way, named as the engine's own
//!   naming function names it for that device.
//! - **A summary** for a pull request, and the provenance beside the files, never inside them.
//!
//! Every replacement is compiled and judged, never estimated: candidates are made into config
//! files in memory and swept by the same spec (its variants, its launcher edits) on the run's
//! pipeline (the probe's workers), on the device they are for, in rounds (fewer stages first,
//! then each smaller tile), until each entry has one that fits or none is left. In a made file an
//! (entry, candidate) is named by its index in the round, never by a made-up batch size. Nothing
//! is written until the binary writes the files.
//!
//! The folder is a pull request's: files of variants the spec does not describe, and files that
//! cannot be read, are listed as not judged while every other file is made; a new file never
//! takes the name of a file that is there but unreadable. Before anything is said to fit, every
//! file to be written is read back the way the engine's loader reads it (Python's `json.load`,
//! the last of repeated keys winning) and each entry is judged again on its device: a mismatch
//! is an error, never a summary line. An interrupt stops between rounds; nothing is written then.

mod error;
mod readback;
mod sweep;

pub use error::FixFilesError;

use crate::device::{DeviceTable, TargetDevice};
use crate::fix::files::render_file;
use crate::input::config_files::{ConfigFile, FileProblem};
use crate::input::spec::{ConfigSet, Sweep};
use crate::model::fix_files::{EntryFix, FileFix, FixedFiles};
use crate::model::probe::ProbeReport;
use crate::model::verdict::VerdictCode;
use crate::plan::listed::describe_variant;
use crate::run::pipeline::Pipeline;

use crate::fix::rounds::settle;
use crate::fix::rounds::{Entries, Work, next_round, plan};
use readback::{Check, Expect, rejudge};
use sweep::compile_round;

/// What cannot be made, and why: files of variants the spec does not describe, and what could
/// not be read (listed as not judged); every other file still is. Returns the files to make from,
/// the files not judged, and the names of the files that could not be read at all.
fn sort_out(
    spec: &Sweep,
    files: Vec<ConfigFile>,
    problems: &[FileProblem],
) -> (Vec<ConfigFile>, Vec<(String, String)>, Vec<String>) {
    let mut not_judged: Vec<(String, String)> = Vec::new();
    let files: Vec<ConfigFile> = files
        .into_iter()
        .filter(|f| match describe_variant(spec, f) {
            Ok(_) => true,
            Err(why) => {
                not_judged.push((f.name.clone(), why));
                false
            }
        })
        .collect();
    for problem in problems {
        not_judged.push((problem.file_name(), problem.problem.clone()));
    }
    let unreadable: Vec<String> = problems
        .iter()
        .filter(|p| p.entry.is_none())
        .map(FileProblem::file_name)
        .collect();
    (files, not_judged, unreadable)
}

/// Make the files.
pub fn fix_files(
    pipeline: &Pipeline<'_>,
    spec: &Sweep,
    report: &ProbeReport,
    fleet: &[TargetDevice],
) -> Result<FixedFiles, FixFilesError> {
    if spec.config_files.is_none() && spec.config_set.is_none() {
        return Err(FixFilesError::NotFiles(spec.origin.shown()));
    }
    let (toolchain, settings) = (pipeline.toolchain(), pipeline.settings());
    let table = DeviceTable::builtin()?;
    let interrupted = || FixedFiles {
        tilefit: env!("CARGO_PKG_VERSION").to_owned(),
        triton: toolchain.triton_version.clone(),
        files: Vec::new(),
        skipped: Vec::new(),
        not_judged: Vec::new(),
        rejudged: 0,
        complete: false,
    };
    // The files the probe judged, as it read them (read here only for a caller that has not).
    let mut read = spec.clone();
    if let Err(e) = read.read_config_files(&settings.cancel) {
        if settings.cancel.is_cancelled() {
            return Ok(interrupted());
        }
        return Err(FixFilesError::Files(e.to_string()));
    }
    let ConfigSet { files, problems } = read.config_set.unwrap_or_default();
    // The probe's own left-out entries (a key the kernel does not take) are not judged either.
    let mut problems = problems;
    if let Some(listed) = &report.listed {
        for problem in &listed.file_problems {
            if !problems.contains(problem) {
                problems.push(problem.clone());
            }
        }
    }
    let (files, not_judged, unreadable) = sort_out(spec, files, &problems);
    let mut skipped = Vec::new();
    let mut work = plan(
        &files,
        &unreadable,
        report,
        fleet,
        table,
        &toolchain.triton_version,
        &mut skipped,
    );
    crate::fix::rounds::bytes_from_report(&mut work, report);
    crate::fix::rounds::drop_unjudged(&mut work, report);
    let mut round_number = 0;
    loop {
        if settings.cancel.is_cancelled() {
            return Ok(interrupted());
        }
        let round = next_round(&work);
        if round.is_empty() {
            break;
        }
        round_number += 1;
        settings.reporter.note(&format!(
            "tilefit: --emit-files round {round_number}: {} entries or candidates to compile",
            round.len()
        ));
        let Some(results) = compile_round(pipeline, spec, &work, &round)? else {
            return Ok(interrupted());
        };
        settle(&mut work, &round, &results);
    }
    let (files, checks): (Vec<FileFix>, Vec<Check>) =
        work.into_iter().map(|item| finish(item, table)).unzip();
    settings.reporter.note(&format!(
        "tilefit: --emit-files: reading the {} files back as the engine does and judging them again",
        files.len()
    ));
    let Some(rejudged) = rejudge(pipeline, spec, &files, &checks)? else {
        return Ok(interrupted());
    };
    Ok(FixedFiles {
        tilefit: env!("CARGO_PKG_VERSION").to_owned(),
        triton: toolchain.triton_version.clone(),
        files,
        skipped,
        not_judged,
        rejudged,
        complete: true,
    })
}

/// What the summary says of a file besides its entries: the work's own notes, kept entries that
/// do not fit, keys written twice.
fn notes_of(item: &Work) -> Vec<String> {
    let mut notes = item.notes.clone();
    for (key, verdict) in item
        .kept
        .iter()
        .filter(|(_, v)| *v != Some(VerdictCode::Fits))
    {
        notes.push(format!(
            "entry `{key}` is kept as the source has it, and does not fit: {}",
            verdict.map_or("it did not compile", VerdictCode::as_str)
        ));
    }
    notes.extend(item
        .source
        .repeated_keys
        .iter()
        .map(|key| format!("key `{key}` is written more than once in the source; the engine's `json.load` keeps the last copy, which is the one judged and patched")));
    notes
}

fn finish(item: Work, table: &DeviceTable) -> (FileFix, Check) {
    let budget = table
        .resolve(&item.device.device)
        .map_or(item.device.smem_per_block_optin, |r| {
            u64::from(r.arch().budget())
        });
    let mut fixes = Vec::new();
    let mut replacements = Vec::new();
    let mut expect = Vec::new();
    for pending in &item.entries {
        let (changes, bytes_after, entry, unfixable) = match &pending.chosen {
            Some((i, bytes)) => {
                let c = &pending.candidates[*i];
                (c.changes.clone(), *bytes, Some(c.entry.clone()), false)
            }
            None if pending.fits_as_is() => (
                Vec::new(),
                pending.bytes_before,
                Some(pending.entry.clone()),
                false,
            ),
            None => (Vec::new(), None, None, true),
        };
        if let (Some(entry), false) = (&entry, changes.is_empty()) {
            replacements.push((pending.key.clone(), entry.clone()));
        }
        match (&entry, item.kind) {
            (Some(e), _) => expect.push((pending.key.clone(), Some(e.clone()), Expect::Fits)),
            (None, "patched") => expect.push((pending.key.clone(), None, Expect::NotFits)),
            (None, _) => {}
        }
        fixes.push((
            EntryFix {
                key: pending.key.clone(),
                bytes_before: pending.bytes_before,
                bytes_after,
                changes,
                unfixable,
                notes: pending.notes.clone(),
            },
            entry,
        ));
    }
    for (key, verdict) in &item.kept {
        expect.push((key.clone(), None, Expect::Same(*verdict)));
    }
    let mut notes = notes_of(&item);
    let text = if item.kind == "patched" {
        let original = std::fs::read_to_string(&item.source.path).unwrap_or_default();
        match crate::fix::files::patch_text(&original, &replacements) {
            Ok(text) => text,
            Err(why) => {
                notes.push(format!("not patched: {why}"));
                original
            }
        }
    } else {
        // The source's key order inside each entry, and no metadata key: the engine's loader
        // reads every key as a batch size.
        let source_text = std::fs::read_to_string(&item.source.path).unwrap_or_default();
        let entries: Entries = fixes
            .iter()
            .filter_map(|(f, e)| e.clone().map(|e| (f.key.clone(), e)))
            .collect();
        let order: Vec<Vec<String>> = entries
            .iter()
            .map(|(k, _)| crate::fix::files::entry_key_order(&source_text, k))
            .collect();
        render_file(&entries, &order)
    };
    let check = Check {
        device: item.device.clone(),
        expect,
        exact_keys: item.kind == "new",
    };
    let fix = FileFix {
        name: item.name,
        kind: item.kind,
        device: item.device.device.clone(),
        budget,
        source: item.source.name.clone(),
        entries: fixes.into_iter().map(|(f, _)| f).collect(),
        // A new file's entries are those it carries over; a patched copy's, the source's.
        entries_in_source: if item.kind == "new" {
            item.entries.len()
        } else {
            item.source.entries.len()
        },
        notes,
        text,
    };
    (fix, check)
}
