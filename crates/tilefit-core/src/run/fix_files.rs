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
//! has one that fits or none is left.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::compile::toolchain::Toolchain;
use crate::compile::{Event, Scratch, Settings};
use crate::device::{DeviceTable, TargetDevice};
use crate::fix::files::{Candidate, candidates, file_name_for, render_file, triton_folder};
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
}

/// How the entry as the source has it fares on the device.
#[derive(Clone, Copy, PartialEq)]
enum Original {
    /// Not compiled for it yet.
    Unjudged,
    /// Its verdict (`None`: it did not compile).
    Judged(Option<VerdictCode>),
}

/// Per (work item, round key): the verdict on the item's device and the bytes.
type Judgements = BTreeMap<(usize, String), (Option<VerdictCode>, Option<u64>)>;

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
}

impl Pending {
    fn new(key: String, entry: BTreeMap<String, Value>, judged: Original) -> Pending {
        let candidates = candidates(&entry);
        Pending {
            key,
            entry,
            candidates,
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
    report: &ProbeReport,
    fleet: &[TargetDevice],
    table: &DeviceTable,
    triton: &str,
    skipped: &mut Vec<(String, String)>,
) -> Vec<Work> {
    let mut work = patch_work(files, report);
    work.extend(new_work(files, fleet, table, triton, skipped));
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
        work.push(Work {
            device: device.clone(),
            name: file.name.clone(),
            kind: "patched",
            source: file.clone(),
            entries,
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

/// The batch-size key a round gives an (entry, candidate): unique within a scratch file.
fn round_key(entry: usize, candidate: Option<usize>) -> String {
    (entry * 1000 + candidate.map_or(0, |c| c + 1) + 1).to_string()
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
    let (files, _) =
        config_files::read(pattern, table).map_err(|e| FixFilesError::Files(e.to_string()))?;
    let mut skipped = Vec::new();
    let mut work = plan(
        &files,
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
        let round = next_round(&work);
        if round.is_empty() {
            break;
        }
        round_number += 1;
        on_note(format!(
            "tilefit: --emit-files round {round_number}: {} entries or candidates to compile",
            round.len()
        ));
        let results = compile_round(
            spec,
            &work,
            &round,
            scratch.path(),
            round_number,
            toolchain,
            settings,
            on_event,
        )?;
        settle(&mut work, &round, &results);
    }
    let files = work.into_iter().map(|item| finish(item, table)).collect();
    Ok(FixedFiles {
        tilefit: env!("CARGO_PKG_VERSION").to_owned(),
        triton: toolchain.triton_version.clone(),
        files,
        skipped,
    })
}

/// Write the round's scratch files (one folder per work item, named for its device so the sweep
/// maps it there), sweep them with the spec, and return (work, entry, candidate) -> (verdict,
/// bytes).
#[expect(
    clippy::too_many_arguments,
    reason = "one round's whole context, passed once"
)]
fn compile_round(
    spec: &ProbeSpec,
    work: &[Work],
    round: &Round,
    scratch: &Path,
    number: usize,
    toolchain: &Toolchain,
    settings: &Settings,
    on_event: &mut dyn FnMut(Event),
) -> Result<Judgements, FixFilesError> {
    let mut by_item: BTreeMap<usize, Entries> = BTreeMap::new();
    for &(w, e, c) in round {
        let pending = &work[w].entries[e];
        let entry = c.map_or_else(
            || pending.entry.clone(),
            |c| pending.candidates[c].entry.clone(),
        );
        by_item.entry(w).or_default().push((round_key(e, c), entry));
    }
    // One folder per arch, one sub-folder per work item: a scratch file's entries are compiled
    // for its own device's arch only.
    let mut fleets: BTreeMap<String, Vec<TargetDevice>> = BTreeMap::new();
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    for (w, entries) in &by_item {
        let item = &work[*w];
        let file = base_name(&item.source.name);
        // The canonical name resolves to the device whatever it reports.
        let name = file_name_for(file, &item.device.name).unwrap_or_else(|| file.to_owned());
        let dir = scratch
            .join(format!("round-{number}-{}", item.device.arch))
            .join(format!("item-{w}"));
        std::fs::create_dir_all(&dir)
            .map_err(|e| FixFilesError::Scratch(dir.display().to_string(), e))?;
        let path = dir.join(&name);
        std::fs::write(&path, render_file(entries, &[]))
            .map_err(|e| FixFilesError::Scratch(path.display().to_string(), e))?;
        names.insert(format!("item-{w}/{name}"), *w);
        let fleet = fleets.entry(item.device.arch.clone()).or_default();
        if !fleet.iter().any(|d| d.name == item.device.name) {
            fleet.push(item.device.clone());
        }
    }
    let mut round_spec = spec.clone();
    round_spec.listed = None;
    let mut out = BTreeMap::new();
    for (arch, fleet) in fleets {
        round_spec.config_files = Some(scratch.join(format!("round-{number}-{arch}")));
        let report = crate::run::probe::probe(&round_spec, &fleet, toolchain, settings, on_event)
            .map_err(|e| FixFilesError::Probe(Box::new(e)))?;
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
    Ok(out)
}

fn settle(work: &mut [Work], round: &Round, results: &Judgements) {
    for &(w, e, c) in round {
        let pending = &mut work[w].entries[e];
        let (verdict, bytes) = results
            .get(&(w, round_key(e, c)))
            .copied()
            .unwrap_or((None, None));
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

fn finish(item: Work, table: &DeviceTable) -> FileFix {
    let budget = table
        .resolve(&item.device.device)
        .map_or(item.device.smem_per_block_optin, |r| {
            u64::from(r.arch().budget())
        });
    let mut fixes = Vec::new();
    let mut replacements = Vec::new();
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
        fixes.push((
            EntryFix {
                key: pending.key.clone(),
                bytes_before: pending.bytes_before,
                bytes_after,
                changes,
                unfixable,
            },
            entry,
        ));
    }
    let text = if item.kind == "patched" {
        let original = std::fs::read_to_string(&item.source.path).unwrap_or_default();
        crate::fix::files::patch_text(&original, &replacements).unwrap_or(original)
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
    FileFix {
        name: item.name,
        kind: item.kind,
        device: item.device.device.clone(),
        budget,
        source: item.source.name.clone(),
        entries: fixes.into_iter().map(|(f, _)| f).collect(),
        entries_in_source: item.source.entries.len(),
        text,
    }
}
