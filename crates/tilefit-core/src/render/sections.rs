//! The report's sections beyond the sweep table, shared by every format: registers, spills and
//! occupancy per config and device (`--resources full`), and, for sweeps from an autotune list or
//! config files, the per-device fit and the per-file verdicts. Each returns a [`Table`] or lines;
//! the formats only draw them.

use super::layout::{Table, config_grid, device_columns, devices_by_arch};
use crate::device::TargetDevice;
use crate::model::naming::listed_label;
use crate::model::naming::{config_text, varying_axes};
use crate::model::probe::ProbeReport;
use crate::model::verdict::VerdictCode;
use crate::resources::KernelResources;
use crate::units::format_count;
use std::fmt::Write as _;

/// What one (result, device) cell of the resources table says: registers, spills or local
/// memory, and resident blocks per SM with what limits them. `None` when the binary was not read.
pub(crate) fn resources_cell(
    resources: Option<&KernelResources>,
    verdicts: &[crate::model::verdict::DeviceVerdict],
    device: &TargetDevice,
) -> Option<String> {
    let r = resources?;
    let mut parts = vec![match &r.amd {
        Some(amd) => format!("{} VGPRs {} SGPRs", r.registers_per_thread, amd.sgprs),
        None => format!("{} regs", r.registers_per_thread),
    }];
    match (r.spill_bytes, &r.amd) {
        (Some(bytes), _) if bytes > 0 => parts.push(format!("spills {} B", format_count(bytes))),
        (_, Some(amd)) if amd.vgpr_spills + amd.sgpr_spills > 0 => parts.push(format!(
            "spills {} VGPRs {} SGPRs",
            amd.vgpr_spills, amd.sgpr_spills
        )),
        _ if r.local_bytes_per_thread > 0 => parts.push(format!(
            "local {} B",
            format_count(r.local_bytes_per_thread)
        )),
        _ => {}
    }
    if let Some(v) = verdicts.iter().find(|v| v.device == device.device)
        && let (Some(blocks), Some(limiter)) = (v.blocks_per_sm, v.occupancy_limiter)
    {
        parts.push(format!("{blocks} blk/SM ({})", limiter.short()));
    }
    Some(parts.join(", "))
}

/// Registers, spills and occupancy per (config, device), when the binaries were read
/// (`--resources full`).
pub(crate) fn resources_table(report: &ProbeReport) -> Option<Table> {
    if report.results.iter().all(|r| r.resources.is_none()) {
        return None;
    }
    let varying = varying_axes(report);
    let devices = devices_by_arch(&report.targets);
    let (header, _) = device_columns(&devices, &["config"]);
    let rows = config_grid(report, &varying, &devices, |r, device| {
        resources_cell(r.resources.as_ref(), &r.verdicts, device)
    });
    Some(Table {
        header,
        rows,
        numeric: Vec::new(),
    })
}

/// The heading of the resources table.
pub(crate) const RESOURCES_HEADING: &str = "Registers per thread, spills and resident blocks per SM (read from each binary; blocks from NVIDIA's occupancy model, limited by smem, regs, threads or blocks)";

/// The heading and the per-device table of a sweep from listed configs: how many fit, which
/// miss and by how much, and the devices where none fits.
pub(crate) fn listed_table(report: &ProbeReport) -> Option<(String, Table)> {
    let listed = report.listed.as_ref()?;
    let heading = match listed.kind {
        crate::input::spec::ListKind::Autotune => format!(
            "The @triton.autotune configs per device ({} listed; #N is a config's place in the list)",
            listed.distinct
        ),
        crate::input::spec::ListKind::ConfigFiles => format!(
            "The config files' configs per device ({} distinct, #N as in the rows above; each on its files' devices and the fleet's devices of the same backend)",
            listed.distinct
        ),
    };
    let with_variant = listed.per_device.iter().any(|d| !d.variant.is_empty());
    let rows = listed
        .per_device
        .iter()
        .map(|fit| {
            let mut row = vec![fit.device.clone(), fit.arch.clone()];
            if with_variant {
                let axes: Vec<String> = fit.variant.keys().cloned().collect();
                row.push(config_text(&fit.variant, &axes));
            }
            row.push(format!("{}/{}", fit.fits.len(), fit.total));
            let mut misses: Vec<String> = fit
                .over
                .iter()
                .map(|(index, over)| {
                    format!("{} +{}", listed_label(report, *index), format_count(*over))
                })
                .collect();
            misses.extend(fit.threads.iter().map(|(index, threads)| {
                format!(
                    "{} THREADS {}",
                    listed_label(report, *index),
                    format_count(u64::from(*threads))
                )
            }));
            if !fit.other.is_empty() {
                misses.push(format!("{} did not compile", fit.other.len()));
            }
            let verdict = if fit.none_fits() {
                match listed.kind {
                    crate::input::spec::ListKind::Autotune => {
                        "NONE FITS: the autotuner has nothing to choose from".to_owned()
                    }
                    crate::input::spec::ListKind::ConfigFiles => "NONE FITS".to_owned(),
                }
            } else if misses.is_empty() {
                "all fit".to_owned()
            } else {
                format!("{} miss", fit.total - fit.fits.len())
            };
            row.push(verdict);
            row.push(misses.join(", "));
            row
        })
        .collect();
    let mut header: Vec<String> = vec!["device".into(), "arch".into()];
    if with_variant {
        header.push("variant".into());
    }
    header.extend(["fit".into(), "verdict".into(), "over budget (by)".into()]);
    let fit_column = header.len() - 3;
    Some((
        heading,
        Table {
            header,
            rows,
            numeric: vec![fit_column],
        },
    ))
}

/// A judged file's line: its device and how its entries fare there; whether every entry fits.
/// How a file's entries fare under the Triton it was tuned with: `2/3 fit there; 256 needs
/// 147,456 bytes, OVER +46,080`, or why that Triton could not judge them.
fn under_tuned_text(under: &crate::model::listed::UnderTuned) -> String {
    if let Some(why) = &under.error {
        return format!("not judged with it: {why}");
    }
    let fits = under
        .entries
        .iter()
        .filter(|e| e.verdict == Some(VerdictCode::Fits))
        .count();
    let mut text = format!("{fits}/{} fit under it", under.entries.len());
    let over: Vec<String> = under
        .entries
        .iter()
        .filter(|e| e.verdict == Some(VerdictCode::OverBudget))
        .map(|e| {
            format!(
                "{} needs {} bytes, OVER +{}",
                e.key,
                format_count(e.shared_bytes.unwrap_or(0)),
                format_count(e.over_by.unwrap_or(0))
            )
        })
        .collect();
    if !over.is_empty() {
        let _ = write!(text, "; {}", over.join("; "));
    }
    text
}

fn judged_file_line(
    report: &ProbeReport,
    file: &crate::model::listed::FileReport,
    device: &str,
) -> (String, bool) {
    let over: Vec<String> = file
        .entries
        .iter()
        .filter(|e| e.verdict == Some(VerdictCode::OverBudget))
        .map(|e| {
            format!(
                "{} ({}) needs {} bytes, OVER +{}",
                e.key,
                listed_label(report, e.config_index),
                format_count(e.shared_bytes.unwrap_or(0)),
                format_count(e.over_by.unwrap_or(0))
            )
        })
        .collect();
    let failed: Vec<String> = file
        .entries
        .iter()
        .filter_map(|e| e.error.as_ref().map(|why| format!("{}: {why}", e.key)))
        .collect();
    let fits = file
        .entries
        .iter()
        .filter(|e| e.verdict == Some(VerdictCode::Fits))
        .count();
    let arch = file.arch.as_deref().unwrap_or("?");
    let mut line = format!(
        "{} -> {device} ({arch}): {fits}/{} configs fit",
        file.file,
        file.entries.len()
    );
    if !over.is_empty() {
        let _ = write!(line, "; OVER on its own device: {}", over.join("; "));
    }
    if !failed.is_empty() {
        let _ = write!(line, "; did not compile: {}", failed.join("; "));
    }
    (line, over.is_empty() && failed.is_empty())
}

/// Past this many files, the files whose every entry fits its own device are counted per device
/// instead of listed one per line.
const LIST_EVERY_FILE_UP_TO: usize = 20;

/// One line per config file: the device it maps to and its configs' verdicts there, or why it
/// maps to none or is not judged; in folders of more than [`LIST_EVERY_FILE_UP_TO`] files, the
/// files that fit entirely as one count per device. Then which Triton the files were tuned with,
/// and the files and entries that could not be read.
pub(crate) fn file_lines(report: &ProbeReport) -> Vec<String> {
    let Some(listed) = &report.listed else {
        return Vec::new();
    };
    let collapse = listed.files.len() > LIST_EVERY_FILE_UP_TO;
    let judged_with = &report.triton_version;
    let mut lines = Vec::new();
    let mut clean: Vec<(String, usize)> = Vec::new();
    for file in &listed.files {
        let tuned = file
            .tuned_with
            .as_ref()
            .filter(|t| *t != judged_with)
            .map(|t| match &file.under_tuned {
                Some(under) => format!(" (tuned with Triton {t}: {})", under_tuned_text(under)),
                None => format!(" (tuned with Triton {t}, judged with {judged_with})"),
            })
            .unwrap_or_default();
        let line = match (&file.device, &file.unresolved) {
            _ if file.unsupported.is_some() => format!(
                "{}: NOT JUDGED: {}",
                file.file,
                file.unsupported.as_deref().unwrap_or_default()
            ),
            (None, Some(reason)) => format!("{}: NO DEVICE: {reason}", file.file),
            (_, _) if file.undescribed.is_some() => format!(
                "{}: NOT JUDGED: {}",
                file.file,
                file.undescribed.as_deref().unwrap_or_default()
            ),
            (Some(device), _) => {
                let (line, clean_file) = judged_file_line(report, file, device);
                if clean_file && collapse {
                    match clean.iter_mut().find(|(d, _)| d == device) {
                        Some((_, count)) => *count += 1,
                        None => clean.push((device.clone(), 1)),
                    }
                    continue;
                }
                line
            }
            (None, None) => format!("{}: no device", file.file),
        };
        lines.push(format!("{line}{tuned}"));
    }
    if !clean.is_empty() {
        let files: usize = clean.iter().map(|(_, n)| n).sum();
        let per_device: Vec<String> = clean.iter().map(|(d, n)| format!("{d} {n}")).collect();
        lines.insert(
            0,
            format!(
                "{files} files: every entry fits its own device ({})",
                per_device.join(", ")
            ),
        );
    }
    let mut tuned: Vec<(String, usize)> = Vec::new();
    for file in &listed.files {
        let version = file
            .tuned_with
            .clone()
            .unwrap_or_else(|| "not recorded".to_owned());
        match tuned.iter_mut().find(|(v, _)| *v == version) {
            Some((_, count)) => *count += 1,
            None => tuned.push((version, 1)),
        }
    }
    if tuned.iter().any(|(v, _)| v != "not recorded") {
        tuned.sort();
        lines.push(format!(
            "Tuned with: {}; judged with Triton {judged_with}",
            tuned
                .iter()
                .map(|(v, n)| format!("{v} ({n} files)"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for problem in &listed.file_problems {
        let name = problem.file_name();
        let what = if problem.entry.is_some() {
            "ENTRY LEFT OUT"
        } else {
            "SKIPPED"
        };
        lines.push(format!("{name}: {what}: {}", problem.problem));
    }
    lines
}
