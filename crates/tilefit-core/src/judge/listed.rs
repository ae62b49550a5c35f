//! Judging listed configs: per device and workload variant which listed configs fit and by how
//! much the others miss, and per config file each entry's verdict on the file's own device.

use crate::compile::OutcomeError;
use crate::device::TargetDevice;
use crate::input::config_files::FileProblem;
use crate::input::spec::{ListedConfigs, Sweep};
use crate::judge::probe::verdict_on;
use crate::model::listed::{DeviceFit, FileEntry, FileReport, ListedReport};
use crate::model::probe::ProbeResult;
use crate::model::verdict::VerdictCode;
use crate::plan::listed::{ListedInputs, PreparedFile};
use crate::vocab::AutotuneConfig;
use crate::vocab::Config;

/// The inputs [`summarize`] needs besides the results.
pub struct ListedRun<'a> {
    /// The listed configs.
    pub listed: &'a ListedConfigs,
    /// Origins per sweep config.
    pub origins: Vec<Vec<crate::vocab::Listing>>,
    /// Every sweep config, for the variant (the axis prefix) of each.
    pub configs: &'a [Config],
    /// The config files read, with the fleet device each maps to.
    pub files: Vec<PreparedFile>,
    /// Files that could not be read.
    pub file_problems: Vec<FileProblem>,
    /// The autotune list, when that is the source.
    pub autotune: Vec<AutotuneConfig>,
    /// The devices the user named (`[targets]`, `--targets`): a config file's entry is listed for
    /// them and for its own file's device, not for the other files' devices.
    pub explicit: Vec<String>,
}

/// Per device and per config file: the listed configs' verdicts.
pub fn summarize(
    run: ListedRun<'_>,
    results: &[ProbeResult],
    targets: &[TargetDevice],
) -> ListedReport {
    let per_listed = run.listed.configs.len().max(1);
    let verdict_of = |config: usize, device: &TargetDevice| verdict_on(results, config, device);
    let compiled_for = |config: usize, arch: &str| {
        results
            .iter()
            .any(|r| r.config_index == config && r.arch == arch)
    };
    // Config files: which devices each config's files name.
    let file_devices: std::collections::HashMap<&str, &str> = run
        .files
        .iter()
        .filter_map(|f| {
            f.device
                .as_ref()
                .map(|d| (f.file.name.as_str(), d.device.as_str()))
        })
        .collect();
    let listed_for = |config: usize, device: &TargetDevice| {
        run.listed.kind != crate::input::spec::ListKind::ConfigFiles
            || run.explicit.contains(&device.device)
            || run.origins.get(config).is_some_and(|origins| {
                origins.iter().any(|origin| {
                    origin
                        .file()
                        .and_then(|file| file_devices.get(file))
                        .is_some_and(|d| *d == device.device)
                })
            })
    };
    let mut per_device = Vec::new();
    let listed_keys: Vec<String> = run.listed.axes().into_iter().map(|a| a.name).collect();
    for device in targets {
        for (variant_index, chunk) in run.configs.chunks(per_listed).enumerate() {
            let first = variant_index * per_listed;
            let variant = chunk
                .first()
                .map(|c| {
                    c.iter()
                        .filter(|(k, _)| !listed_keys.contains(k))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            let mut fit = DeviceFit {
                device: device.device.clone(),
                arch: device.arch.clone(),
                variant,
                fits: Vec::new(),
                over: Vec::new(),
                threads: Vec::new(),
                other: Vec::new(),
                total: 0,
            };
            for index in first..first + chunk.len() {
                // A config file's entry is compiled only for some archs: elsewhere it is not
                // listed at all.
                if !compiled_for(index, &device.arch) || !listed_for(index, device) {
                    continue;
                }
                fit.total += 1;
                match verdict_of(index, device) {
                    Some((_, v)) if v.verdict == VerdictCode::Fits => fit.fits.push(index),
                    Some((_, v)) if v.verdict == VerdictCode::OverBudget => {
                        fit.over.push((index, v.over_by.unwrap_or(0)));
                    }
                    Some((_, v)) if v.verdict == VerdictCode::OverThreadLimit => {
                        fit.threads.push((index, v.threads_per_block.unwrap_or(0)));
                    }
                    _ => fit.other.push(index),
                }
            }
            if fit.total > 0 {
                per_device.push(fit);
            }
        }
    }
    let files = file_reports(&run, results);
    ListedReport {
        kind: run.listed.kind,
        distinct: run.listed.configs.len(),
        origins: run.origins,
        per_device,
        files,
        file_problems: run.file_problems,
        autotune: run.autotune,
    }
}

/// Per config file: its device, variant, tuning Triton and each entry's verdict on its device.
fn file_reports(run: &ListedRun<'_>, results: &[ProbeResult]) -> Vec<FileReport> {
    let verdict_of = |config: usize, device: &TargetDevice| verdict_on(results, config, device);
    // Where each origin (`file: key`) was listed, once, instead of a scan per entry.
    let mut by_origin: std::collections::HashMap<&crate::vocab::Listing, Vec<usize>> =
        std::collections::HashMap::new();
    for (index, origins) in run.origins.iter().enumerate() {
        for origin in origins {
            by_origin.entry(origin).or_default().push(index);
        }
    }
    run.files
        .iter()
        .map(|prepared| {
            let file = &prepared.file;
            let device = &prepared.device;
            let entries = prepared
                .entries
                .iter()
                .flat_map(|(key, _, edits)| {
                    let origin = crate::vocab::Listing::Entry {
                        file: file.name.clone(),
                        key: key.clone(),
                    };
                    by_origin
                        .get(&origin)
                        .cloned()
                        .unwrap_or_default()
                        .into_iter()
                        .map(move |index| (key.clone(), index, edits.clone()))
                })
                .map(|(key, index, edits)| {
                    let judged = device.as_ref().and_then(|d| verdict_of(index, d));
                    let error = device.as_ref().and_then(|d| {
                        results
                            .iter()
                            .find(|r| r.config_index == index && r.arch == d.arch)
                            .and_then(|r| r.error.as_ref().map(OutcomeError::one_line))
                    });
                    FileEntry {
                        key,
                        config_index: index,
                        verdict: judged.map(|(_, v)| v.verdict),
                        shared_bytes: judged.and_then(|(r, _)| r.shared_bytes),
                        over_by: judged.and_then(|(_, v)| v.over_by),
                        edits,
                        error,
                    }
                })
                .collect();
            FileReport {
                file: file.name.clone(),
                path: file.path.display().to_string(),
                device_name: file.device_name.clone(),
                device: device.as_ref().map(|d| d.device.clone()),
                arch: device.as_ref().map(|d| d.arch.clone()),
                unresolved: file
                    .device
                    .as_ref()
                    .err()
                    .filter(|_| file.unsupported.is_none())
                    .cloned(),
                unsupported: file.unsupported.clone(),
                variant: file.variant(),
                undescribed: prepared.variant.as_ref().err().cloned(),
                tuned_with: file.tuned_with.clone(),
                entries,
                under_tuned: None,
            }
        })
        .collect()
}

/// The listed configs' report: per device and per config file.
pub(crate) fn summarize_listed(
    spec: &Sweep,
    configs: &[Config],
    inputs: ListedInputs,
    results: &[ProbeResult],
    targets: &[TargetDevice],
) -> ListedReport {
    summarize(
        ListedRun {
            origins: spec.config_origins(),
            listed: spec.listed.as_ref().expect("set with the listed inputs"),
            configs,
            files: inputs.files,
            file_problems: inputs.file_problems,
            autotune: inputs.autotune,
            explicit: inputs.explicit,
        },
        results,
        targets,
    )
}
