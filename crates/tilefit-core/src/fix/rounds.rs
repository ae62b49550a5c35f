//! What `--emit-files` makes: the patched copies (entries that miss their own device) and the new
//! files (shapes the engine ships that a fleet device lacks, from the nearest device's file), and
//! each round's next entries and candidates, and what a round's verdicts settle. Pure: the
//! compiles are `run::fix_files`'.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::device::{DeviceTable, TargetDevice};
use crate::fix::files::{Candidate, candidates_noted, file_name_for, triton_folder, within_warps};
use crate::input::config_files::ConfigFile;
use crate::model::probe::ProbeReport;
use crate::model::verdict::VerdictCode;

/// One file to make: entries to settle on one device.
pub(crate) struct Work {
    pub(crate) device: TargetDevice,
    /// The name the output has (relative).
    pub(crate) name: String,
    pub(crate) kind: &'static str,
    pub(crate) source: ConfigFile,
    /// Per entry: its key, its entry as the source has it, its candidates, where it stands.
    pub(crate) entries: Vec<Pending>,
    /// A patched copy's other entries, with their verdict on the device (they stay as they are).
    pub(crate) kept: Vec<(String, Option<VerdictCode>)>,
    /// What the summary must say of it.
    pub(crate) notes: Vec<String>,
}

/// How the entry as the source has it fares on the device.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Original {
    /// Not compiled for it yet.
    Unjudged,
    /// Its verdict (`None`: it did not compile).
    Judged(Option<VerdictCode>),
}

/// Per (work item, entry, candidate): the verdict on the item's device and the bytes.
pub(crate) type Judgements =
    BTreeMap<(usize, usize, Option<usize>), (Option<VerdictCode>, Option<u64>)>;

/// A file's entries: (key, entry).
pub(crate) type Entries = Vec<(String, BTreeMap<String, Value>)>;

pub(crate) struct Pending {
    pub(crate) key: String,
    pub(crate) entry: BTreeMap<String, Value>,
    pub(crate) candidates: Vec<Candidate>,
    /// Candidates tried so far.
    pub(crate) next: usize,
    pub(crate) bytes_before: Option<u64>,
    /// The entry as the source has it, judged on this device.
    pub(crate) original: Original,
    pub(crate) chosen: Option<(usize, Option<u64>)>,
    pub(crate) settled: bool,
    /// What bounded its candidates.
    pub(crate) notes: Vec<String>,
}

impl Pending {
    /// `device`: where the entry is judged; an entry whose `num_warps` is over its thread limit
    /// has every candidate lower them.
    pub(crate) fn new(
        key: String,
        entry: BTreeMap<String, Value>,
        judged: Original,
        device: &TargetDevice,
    ) -> Pending {
        let (candidates, notes) = candidates_noted(&entry);
        let candidates = within_warps(&entry, candidates, device.max_warps());
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

    pub(crate) fn fits_as_is(&self) -> bool {
        self.original == Original::Judged(Some(VerdictCode::Fits))
    }
}

/// A file's name without the folders before it (SGLang's `triton_X_Y_Z/`).
pub(crate) fn base_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// The shape of a file: its name with the device and the Triton folder taken out.
pub(crate) fn shape_of(name: &str) -> String {
    let file = base_name(name);
    file_name_for(file, "*").unwrap_or_else(|| file.to_owned())
}

/// The name a device's file gets: the table's sourced reported name, else none.
pub(crate) fn reported(table: &DeviceTable, device: &TargetDevice) -> Option<String> {
    let resolved = table.resolve(&device.device).ok()?;
    resolved
        .product()?
        .reports
        .as_ref()
        .map(|r| r.value.clone())
}

/// The entries a patched file fixes were judged already: their bytes are the report's.
pub(crate) fn bytes_from_report(work: &mut [Work], report: &ProbeReport) {
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
}

/// A new file carries only the entries its source's own device judged (compiled to a verdict):
/// an entry left out there (a key the kernel does not take, a `NaN`), or one that did not compile,
/// is not carried over, and the summary says so.
pub(crate) fn drop_unjudged(work: &mut [Work], report: &ProbeReport) {
    let Some(listed) = &report.listed else { return };
    for item in work.iter_mut().filter(|w| w.kind == "new") {
        let judged = listed.files.iter().find(|f| f.file == item.source.name);
        let verdict = |key: &str| {
            judged
                .and_then(|f| f.entries.iter().find(|e| e.key == key))
                .and_then(|e| e.verdict)
        };
        let mut dropped = Vec::new();
        item.entries.retain(|p| {
            let keep = verdict(&p.key).is_some();
            if !keep {
                dropped.push(p.key.clone());
            }
            keep
        });
        if !dropped.is_empty() {
            item.notes.push(format!(
                "not carried over from the source: {} (not judged on the source's own device: left out or did not compile)",
                dropped.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
            ));
        }
    }
}

/// The files to make: patched copies, then new files.
pub(crate) fn plan(
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
pub(crate) fn patch_work(files: &[ConfigFile], report: &ProbeReport) -> Vec<Work> {
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
        // Over the budget, or over the thread limit: the engine crashes on either.
        let over: Vec<(&str, Option<VerdictCode>)> = judged
            .entries
            .iter()
            .filter(|e| {
                matches!(
                    e.verdict,
                    Some(VerdictCode::OverBudget | VerdictCode::OverThreadLimit)
                )
            })
            .map(|e| (e.key.as_str(), e.verdict))
            .collect();
        if over.is_empty() {
            continue;
        }
        let verdict_of = |key: &str| over.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        let entries = file
            .entries
            .iter()
            .filter_map(|(k, v)| {
                let verdict = verdict_of(k)?;
                Some(Pending::new(
                    k.clone(),
                    v.clone(),
                    Original::Judged(verdict),
                    device,
                ))
            })
            .collect();
        let kept: Vec<(String, Option<VerdictCode>)> = judged
            .entries
            .iter()
            .filter(|e| verdict_of(&e.key).is_none())
            .map(|e| (e.key.clone(), e.verdict))
            .collect();
        // Entries the probe left out (a key the kernel does not take): the copy keeps them as
        // they are, unjudged, and says so.
        let unjudged: Vec<String> = file
            .entries
            .iter()
            .map(|(k, _)| k)
            .filter(|k| !judged.entries.iter().any(|e| e.key == **k))
            .map(|k| format!("`{k}`"))
            .collect();
        let mut notes = Vec::new();
        if !unjudged.is_empty() {
            notes.push(format!(
                "kept as the source has them and not judged (left out: see below): {}",
                unjudged.join(", ")
            ));
        }
        work.push(Work {
            device: device.clone(),
            name: file.name.clone(),
            kind: "patched",
            source: file.clone(),
            entries,
            kept,
            notes,
        });
    }
    work
}

/// The rank of a source file for a device without one: same arch first, then the same backend's
/// closest budget (other backends never); ties by name.
pub(crate) fn source_rank(
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
pub(crate) fn new_work(
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
            if unreadable.contains(&new_name) {
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
                    .map(|(k, v)| Pending::new(k.clone(), v.clone(), Original::Unjudged, device))
                    .collect(),
                kept: Vec::new(),
                notes: Vec::new(),
            });
        }
    }
    work
}

/// What one round sends: per work item and entry, the candidate index (`None`: the entry as
/// the source has it).
pub(crate) type Round = Vec<(usize, usize, Option<usize>)>;

/// The next round: each unsettled entry's original (if never judged on this device), else its
/// next group of candidates (the stage reductions of one tile, so the fewest changes win).
pub(crate) fn next_round(work: &[Work]) -> Round {
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

/// Take a round's verdicts into the work: an entry is settled once a candidate fits (the round
/// held its tile's whole group, fewest changes first) or none is left.
pub(crate) fn settle(work: &mut [Work], round: &Round, results: &Judgements) {
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
