//! One round of `--emit-files`: the entries and candidates written as scratch config files (an
//! (entry, candidate) keyed by its index in its item's list, never a made-up batch size), swept
//! by the spec per arch, and each entry settled.

use std::collections::BTreeMap;
use std::path::Path;

use crate::compile::toolchain::Toolchain;
use crate::compile::{Event, Settings};
use crate::device::TargetDevice;
use crate::fix::files::{file_name_for, render_file};
use crate::input::spec::ProbeSpec;
use crate::model::verdict::VerdictCode;

use super::error::FixFilesError;
use super::work::{Entries, Judgements, Original, Round, Work, base_name};

/// Per (work item, entry key): the verdict on the item's device and the bytes.
pub(super) type Swept = BTreeMap<(usize, String), (Option<VerdictCode>, Option<u64>)>;

/// Per work item, file name and entries: what one sweep folder holds.
pub(super) type Folder = BTreeMap<usize, (String, Entries)>;

/// Sweep scratch folders with the spec, one per arch (a scratch file's entries are compiled for
/// its own device's arch only): for each folder its items as (relative name, entries), written
/// under `root/<arch>/`. Returns, per item and entry key, the verdict on the item's device and the
/// bytes; `None` when the run was interrupted.
pub(super) fn sweep_folders(
    spec: &ProbeSpec,
    items: &BTreeMap<String, (Vec<TargetDevice>, Folder)>,
    root: &Path,
    toolchain: &Toolchain,
    settings: &Settings,
    on_event: &mut dyn FnMut(Event),
) -> Result<Option<Swept>, FixFilesError> {
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
pub(super) fn checked_name(name: &str) -> Result<&Path, FixFilesError> {
    let path = Path::new(name);
    let plain = !name.is_empty()
        && path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if plain {
        Ok(path)
    } else {
        Err(FixFilesError::Name(
            crate::escape::control(name).into_owned(),
        ))
    }
}

/// Compile one round: each item's entries and candidates as one scratch file (named for its
/// device so the sweep maps it there), each (entry, candidate) under a key that is its index in
/// the item's list. `None` when interrupted.
pub(super) fn compile_round(
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

pub(super) fn settle(work: &mut [Work], round: &Round, results: &Judgements) {
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
