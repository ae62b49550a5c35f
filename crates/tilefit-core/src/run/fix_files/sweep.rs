//! One round of `--emit-files`: the entries and candidates made into config files as values (an
//! (entry, candidate) keyed by its index in its item's list, never a made-up batch size; no text
//! is written or parsed), swept
//! by the spec per arch on the run's pipeline, and each entry settled.

use std::collections::BTreeMap;
use std::path::Path;

use crate::device::{DeviceTable, TargetDevice};
use crate::fix::files::file_name_for;
use crate::input::config_files;
use crate::input::spec::{ConfigSet, Sweep};
use crate::model::verdict::VerdictCode;
use crate::run::pipeline::Pipeline;

use super::error::FixFilesError;
use crate::fix::rounds::{Entries, Judgements, Round, Work, base_name};

/// Per (work item, entry key): the verdict on the item's device and the bytes.
pub(super) type Swept = BTreeMap<(usize, String), (Option<VerdictCode>, Option<u64>)>;

/// Per work item, file name and entries: the files of one arch's sweep.
pub(super) type Folder = BTreeMap<usize, (String, Entries)>;

/// Sweep config files made in memory with the spec, one sweep per arch on the run's pipeline (a
/// made file's entries are compiled for its own device's arch only): for each arch its items as
/// (relative name, entries), made into config files as the reader makes read ones. Returns, per
/// item and entry key, the verdict on the item's device and the bytes; `None` when the run was
/// interrupted.
pub(super) fn sweep_files(
    pipeline: &Pipeline<'_>,
    spec: &Sweep,
    items: &BTreeMap<String, (Vec<TargetDevice>, Folder)>,
) -> Result<Option<Swept>, FixFilesError> {
    let table = DeviceTable::builtin()?;
    let cancel = &pipeline.settings().cancel;
    let mut out = BTreeMap::new();
    let mut round_spec = spec.clone();
    round_spec.listed = None;
    for (fleet, folder) in items.values() {
        let mut names: BTreeMap<String, usize> = BTreeMap::new();
        let mut set = ConfigSet::default();
        for (w, (name, entries)) in folder {
            let relative = checked_name(name)?;
            match config_files::from_entries(relative, entries, table, &mut set.problems) {
                Ok(file) => set.files.push(file),
                Err(problem) => set.problems.push(problem),
            }
            names.insert(name.clone(), *w);
        }
        round_spec.config_set = Some(set);
        let report = pipeline.probe(&round_spec, fleet);
        // An interrupt may end the sweep anywhere, an error included: it is an interrupt.
        if cancel.is_cancelled() {
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

/// Compile one round: each item's entries and candidates as one config file (named for its
/// device so the sweep maps it there), each (entry, candidate) under a key that is its index in
/// the item's list. `None` when interrupted.
pub(super) fn compile_round(
    pipeline: &Pipeline<'_>,
    spec: &Sweep,
    work: &[Work],
    round: &Round,
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
    let Some(results) = sweep_files(pipeline, spec, &items)? else {
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
