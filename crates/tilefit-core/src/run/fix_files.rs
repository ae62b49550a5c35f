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
//! Every replacement is compiled and judged, never estimated: candidates are written as config
//! files of a scratch folder and swept by the same spec (its variants, its launcher edits), on the
//! device they are for, in rounds (fewer stages first, then each smaller tile), until each entry
//! has one that fits or none is left. In a scratch file an (entry, candidate) is named by its
//! index in the round, never by a made-up batch size.
//!
//! The folder is a pull request's: files of variants the spec does not describe, and files that
//! cannot be read, are listed as not judged while every other file is made; a new file never
//! takes the name of a file that is there but unreadable. Before anything is said to fit, every
//! file to be written is read back the way the engine's loader reads it (Python's `json.load`,
//! the last of repeated keys winning) and each entry is judged again on its device: a mismatch
//! is an error, never a summary line. An interrupt stops between rounds; nothing is written then.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::compile::toolchain::Toolchain;
use crate::compile::{Event, Scratch, Settings};
use crate::plan::listed::describe_variant;
use crate::device::{DeviceTable, TargetDevice};
use crate::fix::files::{Candidate, candidates_noted, file_name_for, render_file, triton_folder};
use crate::input::config_files::{self, ConfigFile};
use crate::input::spec::ProbeSpec;
use crate::model::fix_files::{EntryFix, FileFix, FixedFiles};
use crate::model::probe::ProbeReport;
use crate::model::verdict::VerdictCode;

/// Why the files could not be made.
#[derive(Debug, thiserror::Error)]
pub enum FixFilesError {
    /// The spec sweeps no config files.
    #[error("`--emit-files` writes engine config files, and `{0}` sweeps none")]
    NotFiles(String),
    /// The config files could not be read again.
    #[error("cannot read the config files again: {0}")]
    Files(String),
    /// A round of candidates could not be compiled.
    #[error("compiling the candidate configs failed")]
    Probe(#[source] Box<crate::run::probe::ProbeError>),
    /// The scratch folder.
    #[error("cannot write `{0}`")]
    Scratch(String, #[source] std::io::Error),
    /// The embedded device table.
    #[error(transparent)]
    Table(#[from] crate::device::TableError),
    /// A name to write leaves the output folder.
    #[error("refusing to write `{0}`: a written file's name must be a relative path below the output folder")]
    Name(String),
    /// Read back as the engine reads them, the files do not say what was judged.
    #[error("the files to write were read back as the engine reads them and judged again, and {} did not hold: {}", .0.len(), .0.join("; "))]
    Rejudged(Vec<String>),
    /// The engine's loader could not be run.
    #[error("cannot run `{0}` to read the written files as the engine does")]
    Loader(String, #[source] std::io::Error),
}

impl crate::hint::Hint for FixFilesError {
    fn hint(&self) -> Option<String> {
        match self {
            FixFilesError::NotFiles(_) => Some(
                "use it with `[sweep] from_files = \"configs/*.json\"` (and `[files]` for the launcher's edits)"
                    .to_owned(),
            ),
            FixFilesError::Probe(e) => crate::hint::Hint::hint(e.as_ref()),
            _ => None,
        }
    }
}

/// One file to make: entries to settle on one device.
struct Work {
    device: TargetDevice,
    /// The name the output has (relative).
    name: String,
    kind: &'static str,
    source: ConfigFile,
    /// Per entry: its key, its entry as the source has it, its candidates, where it stands.
    entries: Vec<Pending>,
    /// A patched copy's other entries, with their verdict on the device (they stay as they are).
    kept: Vec<(String, Option<VerdictCode>)>,
}

/// How the entry as the source has it fares on the device.
#[derive(Clone, Copy, PartialEq)]
enum Original {
    /// Not compiled for it yet.
    Unjudged,
    /// Its verdict (`None`: it did not compile).
    Judged(Option<VerdictCode>),
}

/// Per (work item, entry, candidate): the verdict on the item's device and the bytes.
type Judgements = BTreeMap<(usize, usize, Option<usize>), (Option<VerdictCode>, Option<u64>)>;

/// A file's entries: (key, entry).
type Entries = Vec<(String, BTreeMap<String, Value>)>;

struct Pending {
    key: String,
    entry: BTreeMap<String, Value>,
    candidates: Vec<Candidate>,
    /// Candidates tried so far.
    next: usize,
    bytes_before: Option<u64>,
    /// The entry as the source has it, judged on this device.
    original: Original,
    chosen: Option<(usize, Option<u64>)>,
    settled: bool,
    /// What bounded its candidates.
    notes: Vec<String>,
}

impl Pending {
    fn new(key: String, entry: BTreeMap<String, Value>, judged: Original) -> Pending {
        let (candidates, notes) = candidates_noted(&entry);
        Pending {
            key,
            entry,
            candidates,
            notes,
            next: 0,
            bytes_before: None,
            original: judged,
            chosen: None,
            settled: false,
        }
    }

    fn fits_as_is(&self) -> bool {
        self.original == Original::Judged(Some(VerdictCode::Fits))
    }
}

/// A file's name without the folders before it (SGLang's `triton_X_Y_Z/`).
fn base_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// The shape of a file: its name with the device and the Triton folder taken out.
fn shape_of(name: &str) -> String {
    let file = base_name(name);
    file_name_for(file, "*").unwrap_or_else(|| file.to_owned())
}

/// The name a device's file gets: the table's sourced reported name, else none.
fn reported(table: &DeviceTable, device: &TargetDevice) -> Option<String> {
    let resolved = table.resolve(&device.device).ok()?;
    resolved
        .product()?
        .reports
        .as_ref()
        .map(|r| r.value.clone())
}

/// The files to make: patched copies, then new files.
fn plan(
    files: &[ConfigFile],
    unreadable: &[String],
    report: &ProbeReport,
    fleet: &[TargetDevice],
    table: &DeviceTable,
    triton: &str,
    skipped: &mut Vec<(String, String)>,
) -> Vec<Work> {
    let mut work = patch_work(files, report);
    work.extend(new_work(files, unreadable, fleet, table, triton, skipped));
    work
}

/// The files whose entries miss their own device, with those entries to settle.
fn patch_work(files: &[ConfigFile], report: &ProbeReport) -> Vec<Work> {
    let mut work = Vec::new();
    let listed = report.listed.as_ref();
    for file in files {
        let Ok(device_name) = &file.device else {
            continue;
        };
        let Some(device) = report.targets.iter().find(|d| &d.name == device_name) else {
            continue;
        };
        let Some(judged) = listed.and_then(|l| l.files.iter().find(|f| f.file == file.name)) else {
            continue;
        };
        let over: Vec<&str> = judged
            .entries
            .iter()
            .filter(|e| e.verdict == Some(VerdictCode::OverBudget))
            .map(|e| e.key.as_str())
            .collect();
        if over.is_empty() {
            continue;
        }
        let entries = file
            .entries
            .iter()
            .filter(|(k, _)| over.contains(&k.as_str()))
            .map(|(k, v)| {
                Pending::new(
                    k.clone(),
                    v.clone(),
                    Original::Judged(Some(VerdictCode::OverBudget)),
                )
            })
            .collect();
        let kept = judged
            .entries
            .iter()
            .filter(|e| !over.contains(&e.key.as_str()))
            .map(|e| (e.key.clone(), e.verdict))
            .collect();
        work.push(Work {
            device: device.clone(),
            name: file.name.clone(),
            kind: "patched",
            source: file.clone(),
            entries,
            kept,
        });
    }
    work
}

/// The rank of a source file for a device without one: same arch first, then the same backend's
/// closest budget (other backends never); ties by name.
fn source_rank(
    file: &ConfigFile,
    device: &TargetDevice,
    budget: u32,
    table: &DeviceTable,
) -> (u8, u64, String) {
    let resolved = file
        .device
        .as_ref()
        .ok()
        .and_then(|d| table.resolve(d).ok());
    let Some(r) = resolved else {
        return (3, u64::MAX, file.name.clone());
    };
    let arch = r.arch();
    let distance = u64::from(arch.budget().abs_diff(budget));
    (
        u8::from(arch.arch != device.arch) + u8::from(arch.backend != device.backend),
        distance,
        file.name.clone(),
    )
}

/// New files for the fleet's devices, one per shape the engine ships that the device lacks.
fn new_work(
    files: &[ConfigFile],
    unreadable: &[String],
    fleet: &[TargetDevice],
    table: &DeviceTable,
    triton: &str,
    skipped: &mut Vec<(String, String)>,
) -> Vec<Work> {
    let mut work = Vec::new();
    let mut shapes: BTreeMap<String, Vec<&ConfigFile>> = BTreeMap::new();
    for file in files
        .iter()
        .filter(|f| f.device.is_ok() && f.unsupported.is_none())
    {
        shapes.entry(shape_of(&file.name)).or_default().push(file);
    }
    for device in fleet {
        let Some(name) = reported(table, device) else {
            skipped.push((
                device.device.clone(),
                "the table has no sourced name this device reports, so the engine's file name for it is unknown".to_owned(),
            ));
            continue;
        };
        let Some(budget) = table
            .resolve(&device.device)
            .ok()
            .map(|r| r.arch().budget())
        else {
            continue;
        };
        for sources in shapes.values() {
            if sources
                .iter()
                .any(|f| f.device.as_ref().is_ok_and(|d| *d == device.name))
            {
                continue;
            }
            let Some(source) = sources
                .iter()
                .filter(|f| source_rank(f, device, budget, table).0 < 2)
                .min_by_key(|f| source_rank(f, device, budget, table))
            else {
                continue;
            };
            let file = base_name(&source.name);
            let Some(new_name) = file_name_for(file, &name) else {
                continue;
            };
            // SGLang keeps configs in a folder per tuning Triton: the new file goes in the one of
            // the Triton it was judged with.
            // A file of that name is in the folder but cannot be read: the engine may read it
            // (or fail on it); it is for its owner to fix, never to be replaced unseen.
            if unreadable.iter().any(|u| *u == new_name) {
                skipped.push((
                    device.device.clone(),
                    format!(
                        "`{new_name}` is in the folder and could not be read, so no new file of that name is made; fix that file"
                    ),
                ));
                continue;
            }
            let new_name = match source.name.rsplit_once('/') {
                Some((folder, _)) if folder.starts_with("triton_") => {
                    format!("{}/{new_name}", triton_folder(triton))
                }
                Some((folder, _)) => format!("{folder}/{new_name}"),
                None => new_name,
            };
            work.push(Work {
                device: device.clone(),
                name: new_name,
                kind: "new",
                source: (*source).clone(),
                entries: source
                    .entries
                    .iter()
                    .map(|(k, v)| Pending::new(k.clone(), v.clone(), Original::Unjudged))
                    .collect(),
                kept: Vec::new(),
            });
        }
    }
    work
}

/// What one round sends: per work item and entry, the candidate index (`None`: the entry as
/// the source has it).
type Round = Vec<(usize, usize, Option<usize>)>;

/// The next round: each unsettled entry's original (if never judged on this device), else its
/// next group of candidates (the stage reductions of one tile, so the fewest changes win).
fn next_round(work: &[Work]) -> Round {
    let mut round = Vec::new();
    for (w, item) in work.iter().enumerate() {
        for (e, pending) in item.entries.iter().enumerate() {
            if pending.settled {
                continue;
            }
            if pending.original == Original::Unjudged {
                round.push((w, e, None));
                continue;
            }
            // One tile's candidates: until the tile changes.
            let mut i = pending.next;
            let tiles = |c: &Candidate| {
                c.changes
                    .iter()
                    .filter(|x| !x.starts_with("num_stages"))
                    .cloned()
                    .collect::<Vec<_>>()
            };
            let first = pending.candidates.get(i).map(tiles);
            while let Some(c) = pending.candidates.get(i) {
                if Some(tiles(c)) != first {
                    break;
                }
                round.push((w, e, Some(i)));
                i += 1;
            }
        }
    }
    round
}

/// Make the files.
pub fn fix_files(
    spec: &ProbeSpec,
    report: &ProbeReport,
    fleet: &[TargetDevice],
    toolchain: &Toolchain,
    settings: &Settings,
    on_note: &mut dyn FnMut(String),
    on_event: &mut dyn FnMut(Event),
) -> Result<FixedFiles, FixFilesError> {
    let Some(pattern) = &spec.config_files else {
        return Err(FixFilesError::NotFiles(spec.path.display().to_string()));
    };
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
    let (files, problems) = match config_files::read(pattern, table, &settings.cancel) {
        Ok(read) => read,
        Err(config_files::ConfigFilesError::Interrupted(_)) => return Ok(interrupted()),
        Err(e) => return Err(FixFilesError::Files(e.to_string())),
    };
    // What cannot be made: files of variants the spec does not describe, of GPUs tilefit does
    // not compile for, and what could not be read. Every other file still is.
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
    for problem in &problems {
        let file = problem.path.file_name().map_or_else(
            || problem.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        not_judged.push((file, problem.problem.clone()));
    }
    let unreadable: Vec<String> = problems
        .iter()
        .filter(|p| p.entry.is_none())
        .filter_map(|p| p.path.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
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
    // The entries a patched file fixes were judged already: their bytes are the report's.
    if let Some(listed) = &report.listed {
        for item in work.iter_mut().filter(|w| w.kind == "patched") {
            if let Some(judged) = listed.files.iter().find(|f| f.file == item.source.name) {
                for pending in &mut item.entries {
                    pending.bytes_before = judged
                        .entries
                        .iter()
                        .find(|e| e.key == pending.key)
                        .and_then(|e| e.shared_bytes);
                }
            }
        }
    }
    let scratch = Scratch::new(&settings.cache_dir, "emit-files");
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
        on_note(format!(
            "tilefit: --emit-files round {round_number}: {} entries or candidates to compile",
            round.len()
        ));
        let Some(results) = compile_round(
            spec,
            &work,
            &round,
            &scratch.path().join(format!("round-{round_number}")),
            toolchain,
            settings,
            on_event,
        )?
        else {
            return Ok(interrupted());
        };
        settle(&mut work, &round, &results);
    }
    let (files, checks): (Vec<FileFix>, Vec<Check>) =
        work.into_iter().map(|item| finish(item, table)).unzip();
    on_note(format!(
        "tilefit: --emit-files: reading the {} files back as the engine does and judging them again",
        files.len()
    ));
    let Some(rejudged) = rejudge(
        spec,
        &files,
        &checks,
        &scratch.path().join("written"),
        toolchain,
        settings,
        on_event,
    )?
    else {
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

/// Per work item, file name and entries: what one sweep folder holds.
type Folder = BTreeMap<usize, (String, Entries)>;

/// Sweep scratch folders with the spec, one per arch (a scratch file's entries are compiled for
/// its own device's arch only): for each folder its items as (relative name, entries), written
/// under `root/<arch>/`. Returns, per item and entry key, the verdict on the item's device and the
/// bytes; `None` when the run was interrupted.
fn sweep_folders(
    spec: &ProbeSpec,
    items: &BTreeMap<String, (Vec<TargetDevice>, Folder)>,
    root: &Path,
    toolchain: &Toolchain,
    settings: &Settings,
    on_event: &mut dyn FnMut(Event),
) -> Result<Option<BTreeMap<(usize, String), (Option<VerdictCode>, Option<u64>)>>, FixFilesError> {
    let mut out = BTreeMap::new();
    let mut round_spec = spec.clone();
    round_spec.listed = None;
    for (arch, (fleet, folder)) in items {
        let dir = root.join(arch);
        let mut names: BTreeMap<String, usize> = BTreeMap::new();
        for (w, (name, entries)) in folder {
            let path = dir.join(checked_name(name)?);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| FixFilesError::Scratch(parent.display().to_string(), e))?;
            }
            std::fs::write(&path, render_file(entries, &[]))
                .map_err(|e| FixFilesError::Scratch(path.display().to_string(), e))?;
            names.insert(name.clone(), *w);
        }
        round_spec.config_files = Some(dir);
        let report = crate::run::probe::probe(&round_spec, fleet, toolchain, settings, on_event);
        // An interrupt may end the sweep anywhere, an error included: it is an interrupt.
        if settings.cancel.is_cancelled() {
            return Ok(None);
        }
        let report = report.map_err(|e| FixFilesError::Probe(Box::new(e)))?;
        if !report.stats.complete {
            return Ok(None);
        }
        let Some(listed) = report.listed else {
            continue;
        };
        for file in &listed.files {
            let Some(&w) = names.get(&file.file) else {
                continue;
            };
            for entry in &file.entries {
                out.insert((w, entry.key.clone()), (entry.verdict, entry.shared_bytes));
            }
        }
    }
    Ok(Some(out))
}

/// A name from the plan as a path below a folder: relative, every part a plain name.
fn checked_name(name: &str) -> Result<&Path, FixFilesError> {
    let path = Path::new(name);
    let plain = !name.is_empty()
        && path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if plain {
        Ok(path)
    } else {
        Err(FixFilesError::Name(crate::escape::control(name).into_owned()))
    }
}

/// Compile one round: each item's entries and candidates as one scratch file (named for its
/// device so the sweep maps it there), each (entry, candidate) under a key that is its index in
/// the item's list. `None` when interrupted.
fn compile_round(
    spec: &ProbeSpec,
    work: &[Work],
    round: &Round,
    root: &Path,
    toolchain: &Toolchain,
    settings: &Settings,
    on_event: &mut dyn FnMut(Event),
) -> Result<Option<Judgements>, FixFilesError> {
    let mut by_item: BTreeMap<usize, Vec<(usize, Option<usize>)>> = BTreeMap::new();
    for &(w, e, c) in round {
        by_item.entry(w).or_default().push((e, c));
    }
    let mut items: BTreeMap<String, (Vec<TargetDevice>, Folder)> = BTreeMap::new();
    for (w, list) in &by_item {
        let item = &work[*w];
        let entries: Entries = list
            .iter()
            .enumerate()
            .map(|(i, &(e, c))| {
                let pending = &item.entries[e];
                let entry = c.map_or_else(
                    || pending.entry.clone(),
                    |c| pending.candidates[c].entry.clone(),
                );
                (i.to_string(), entry)
            })
            .collect();
        let file = base_name(&item.source.name);
        // The canonical name resolves to the device whatever it reports.
        let name = file_name_for(file, &item.device.name).unwrap_or_else(|| file.to_owned());
        let (fleet, folder) = items.entry(item.device.arch.clone()).or_default();
        if !fleet.iter().any(|d| d.name == item.device.name) {
            fleet.push(item.device.clone());
        }
        folder.insert(*w, (format!("item-{w}/{name}"), entries));
    }
    let Some(results) = sweep_folders(spec, &items, root, toolchain, settings, on_event)? else {
        return Ok(None);
    };
    let mut out = Judgements::new();
    for (w, list) in &by_item {
        for (i, &(e, c)) in list.iter().enumerate() {
            let judged = results
                .get(&(*w, i.to_string()))
                .copied()
                .unwrap_or((None, None));
            out.insert((*w, e, c), judged);
        }
    }
    Ok(Some(out))
}

fn settle(work: &mut [Work], round: &Round, results: &Judgements) {
    for &(w, e, c) in round {
        let pending = &mut work[w].entries[e];
        let (verdict, bytes) = results.get(&(w, e, c)).copied().unwrap_or((None, None));
        match c {
            None => {
                pending.bytes_before = bytes;
                pending.original = Original::Judged(verdict);
                if verdict == Some(VerdictCode::Fits) {
                    pending.settled = true;
                }
            }
            Some(i) => {
                pending.next = pending.next.max(i + 1);
                if verdict == Some(VerdictCode::Fits) && pending.chosen.is_none_or(|(j, _)| i < j) {
                    pending.chosen = Some((i, bytes));
                }
            }
        }
    }
    // An entry is settled once a candidate fits (the round held its tile's whole group, fewest
    // changes first) or none is left.
    for item in work.iter_mut() {
        for pending in &mut item.entries {
            let judged = pending.original != Original::Unjudged;
            if judged && (pending.chosen.is_some() || pending.next >= pending.candidates.len()) {
                pending.settled = true;
            }
        }
    }
}

/// What a written file must say when read back: per key, the entry the engine must read (when
/// tilefit wrote or chose it) and whether it must fit its device.
struct Check {
    device: TargetDevice,
    /// (key, the entry read back must equal this, the verdict it must have).
    expect: Vec<(String, Option<BTreeMap<String, Value>>, Expect)>,
    /// A new file holds exactly the keys it was given.
    exact_keys: bool,
}

/// The verdict a written entry must have when judged again.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Fits,
    /// Left as the source has it: the verdict it had.
    Same(Option<VerdictCode>),
    /// No candidate fits (left in a patched copy as it was): anything but fits.
    NotFits,
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
    let mut notes: Vec<String> = item
        .source
        .repeated_keys
        .iter()
        .map(|key| format!("key `{key}` is written more than once in the source; the engine's `json.load` keeps the last copy, which is the one judged and patched"))
        .collect();
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
        entries_in_source: item.source.entries.len(),
        notes,
        text,
    };
    (fix, check)
}

/// The engine's loader: Python's `json.load` on each file, as vLLM's and SGLang's
/// `get_moe_configs` call it (`with open(path) as f: json.load(f)`), each file's object written
/// back as one JSON line (or the loader's error).
const LOADER: &str = r#"
import json, sys
for path in sys.argv[1:]:
    try:
        with open(path) as f:
            print(json.dumps({"ok": json.load(f)}))
    except Exception as e:
        print(json.dumps({"error": type(e).__name__ + ": " + str(e)}))
"#;

/// Write every file as it will be written, read each back with the engine's loader, check each
/// entry is the one judged, and judge every entry again on the file's device. Returns how many
/// entries were judged again (`None`: interrupted).
fn rejudge(
    spec: &ProbeSpec,
    files: &[FileFix],
    checks: &[Check],
    root: &Path,
    toolchain: &Toolchain,
    settings: &Settings,
    on_event: &mut dyn FnMut(Event),
) -> Result<Option<usize>, FixFilesError> {
    if files.is_empty() {
        return Ok(Some(0));
    }
    let mut wrong = Vec::new();
    // As the engine reads them.
    let loaded_root = root.join("loaded");
    let mut paths = Vec::new();
    for file in files {
        let path = loaded_root.join(checked_name(&file.name)?);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| FixFilesError::Scratch(parent.display().to_string(), e))?;
        }
        std::fs::write(&path, &file.text)
            .map_err(|e| FixFilesError::Scratch(path.display().to_string(), e))?;
        paths.push(path);
    }
    let output = std::process::Command::new(&toolchain.python)
        .arg("-c")
        .arg(LOADER)
        .args(&paths)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| FixFilesError::Loader(toolchain.python.display().to_string(), e))?;
    let lines: Vec<&str> = std::str::from_utf8(&output.stdout)
        .unwrap_or_default()
        .lines()
        .collect();
    let mut loaded: Vec<Option<serde_json::Map<String, Value>>> = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let read = lines
            .get(i)
            .and_then(|l| crate::input::json_text::python_loads(l).ok());
        match read.as_ref().and_then(|r| r.get("ok")).and_then(Value::as_object) {
            Some(map) => loaded.push(Some(map.clone())),
            None => {
                let why = read
                    .as_ref()
                    .and_then(|r| r.get("error"))
                    .and_then(Value::as_str)
                    .unwrap_or("the loader gave no answer")
                    .to_owned();
                wrong.push(format!("`{}`: the engine's json.load fails: {why}", file.name));
                loaded.push(None);
            }
        }
    }
    // Judged again, per arch, from a folder of the files exactly as written.
    let mut items: BTreeMap<String, (Vec<TargetDevice>, Folder)> = BTreeMap::new();
    for (w, (file, check)) in files.iter().zip(checks).enumerate() {
        let Some(map) = &loaded[w] else { continue };
        let entries: Entries = map
            .iter()
            .filter_map(|(k, v)| {
                v.as_object()
                    .map(|o| (k.clone(), o.iter().map(|(a, b)| (a.clone(), b.clone())).collect()))
            })
            .collect();
        for (key, want, _) in &check.expect {
            let got = entries.iter().find(|(k, _)| k == key).map(|(_, e)| e);
            if let Some(want) = want
                && got != Some(want)
            {
                wrong.push(format!(
                    "`{}` entry `{key}`: the engine reads another config than the one judged",
                    file.name
                ));
            }
        }
        if check.exact_keys && map.len() != check.expect.len() {
            wrong.push(format!(
                "`{}`: the engine reads {} keys, and {} were written",
                file.name,
                map.len(),
                check.expect.len()
            ));
        }
        let (fleet, folder) = items.entry(check.device.arch.clone()).or_default();
        if !fleet.iter().any(|d| d.name == check.device.name) {
            fleet.push(check.device.clone());
        }
        let name = match file.name.rsplit_once('/') {
            Some((_, base)) => format!("file-{w}/{base}"),
            None => format!("file-{w}/{}", file.name),
        };
        // The device's canonical name: the file as written names the device as it reports
        // itself, which resolves to the same device.
        folder.insert(w, (name, entries));
    }
    let Some(results) = sweep_folders(spec, &items, &root.join("judged"), toolchain, settings, on_event)? else {
        return Ok(None);
    };
    let mut count = 0;
    for (w, (file, check)) in files.iter().zip(checks).enumerate() {
        if loaded[w].is_none() {
            continue;
        }
        for (key, _, expect) in &check.expect {
            let verdict = results.get(&(w, key.clone())).and_then(|(v, _)| *v);
            count += 1;
            let holds = match expect {
                Expect::Fits => verdict == Some(VerdictCode::Fits),
                Expect::NotFits => verdict != Some(VerdictCode::Fits),
                Expect::Same(before) => verdict == *before,
            };
            if !holds {
                wrong.push(format!(
                    "`{}` entry `{key}` on {}: judged again it is {}, and {} was expected",
                    file.name,
                    check.device.device,
                    verdict.map_or("not judged", |v| v.as_str()),
                    match expect {
                        Expect::Fits => "fits".to_owned(),
                        Expect::NotFits => "none fits".to_owned(),
                        Expect::Same(v) => v.map_or("not judged", |v| v.as_str()).to_owned(),
                    }
                ));
            }
        }
    }
    if wrong.is_empty() {
        Ok(Some(count))
    } else {
        Err(FixFilesError::Rejudged(wrong))
    }
}
