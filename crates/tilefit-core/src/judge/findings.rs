//! What the gate reads from a finished run, probe and replay alike: every verdict flattened to
//! (subject, device) ([`Judged`]), the shipped configs that miss a device and the lists that leave
//! a device with nothing ([`Miss`]). The same for a run just made and a report saved with `--json`
//! and read back, so both gate alike.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::model::naming::{config_text, varying_axes};
use crate::model::probe::{ProbeReport, Recommendation};
use crate::model::verdict::VerdictCode;
use crate::resources::KernelResources;
use crate::units::format_count;
use crate::vocab::CompileStatus;

/// What a finding is about, as data: what `--baseline` compares, whatever words a table uses for
/// it (a config's text names only the axes that vary, which a longer sweep changes).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SubjectKey {
    /// A config of a probe, by every value it sets (canonical JSON).
    Config(String),
    /// A cached kernel variant of a replay: its name and short id.
    Kernel {
        /// The kernel's name.
        name: String,
        /// Its variant's short id.
        id: String,
    },
    /// A config file's entry.
    Entry(crate::vocab::Listing),
    /// A config file.
    File(String),
    /// A kernel's autotune list, for one variant (canonical JSON of the variant).
    AutotuneList(String),
}

impl SubjectKey {
    /// A probe config's key.
    pub fn config(config: &BTreeMap<String, Value>) -> SubjectKey {
        SubjectKey::Config(serde_json::to_string(config).unwrap_or_default())
    }
}

/// One (subject, device) verdict, flattened: what a CI gate looks at, for probe and replay alike.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// The config (probe) or kernel variant (replay), as the report names it.
    pub subject: String,
    /// The same, as data.
    pub key: SubjectKey,
    /// The device as the user wrote it.
    pub device: String,
    /// The arch compiled for.
    pub arch: String,
    /// How the compile went.
    pub status: CompileStatus,
    /// Bytes per block, when compiled.
    pub shared_bytes: Option<u64>,
    /// The device's budget.
    pub budget: u64,
    /// The verdict.
    pub verdict: VerdictCode,
    /// Bytes over, when over.
    pub over_by: Option<u64>,
    /// Threads the block launches (num_warps x warp size).
    pub threads_per_block: Option<u32>,
    /// Threads per block the device allows (lowered by the registers with `--resources full`).
    pub max_threads_per_block: Option<u32>,
    /// Spill bytes, when the binary was read (`--resources full`).
    pub spill_bytes: Option<u64>,
}

/// The flattened verdicts of one result.
fn judged_of<'a>(
    (subject, key): (String, SubjectKey),
    arch: &'a str,
    status: CompileStatus,
    shared_bytes: Option<u64>,
    verdicts: &'a [crate::model::verdict::DeviceVerdict],
    resources: Option<&'a KernelResources>,
) -> impl Iterator<Item = Judged> + 'a {
    verdicts.iter().map(move |v| Judged {
        subject: subject.clone(),
        key: key.clone(),
        device: v.device.clone(),
        arch: arch.to_owned(),
        status,
        shared_bytes,
        budget: v.budget,
        verdict: v.verdict,
        over_by: v.over_by,
        threads_per_block: v.threads_per_block,
        max_threads_per_block: v.max_threads_per_block,
        spill_bytes: resources.and_then(|r| r.spill_bytes),
    })
}

/// What the gate and the exit code read from a finished run: the same for a run just made and a
/// report saved with `--json` and read back (`tilefit report`), so both exit alike.
pub trait Findings {
    /// Every verdict, flattened.
    fn judged(&self) -> Vec<Judged>;
    /// The config files that map to no device or could not be read.
    fn unmapped_files(&self) -> Vec<String> {
        Vec::new()
    }
    /// The config files, and entries of them, that could not be read or were left out.
    fn unreadable_files(&self) -> Vec<String> {
        Vec::new()
    }
    /// (jobs whose worker faulted or that an interrupt stopped, all jobs): the FAILED cells.
    fn failed_jobs(&self) -> (usize, usize);
    /// Where the shipped config misses a device: the spec's baseline (or, with `shipped`, the
    /// config an `--emit-configs` export gives the device's arch), and each config file's entries
    /// on the file's own device. Each is (subject, device, detail).
    fn shipped_misses(&self, _shipped: Option<&crate::fix::ConfigExport>) -> Vec<Miss> {
        Vec::new()
    }
    /// Where a device is left with no fitting entry: an autotune list none of whose configs fits,
    /// or a config file none of whose entries fits its own device. Each is (subject, device, detail).
    fn none_fits(&self) -> Vec<Miss> {
        Vec::new()
    }

    /// Calls that stopped where host code needed what emulation lacks (a capture's), each as
    /// `FILE:LINE on DEVICE: reason`.
    fn stopped_calls(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// The kernel's source file and function, when the report is about one kernel (a probe).
    fn kernel_source(&self) -> Option<(String, String)> {
        None
    }
    /// What the report judged, for `--baseline` to refuse another kernel's report.
    fn subject(&self) -> crate::model::identity::Subject;
}

/// A finding of the `baseline` and `none-fits` rules: what, on which device, and the detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Miss {
    /// The config, file or list, as the report names it.
    pub subject: String,
    /// The same, as data.
    pub key: SubjectKey,
    /// The device.
    pub device: String,
    /// Bytes over, or why.
    pub detail: String,
    /// For a config file's entry: the file's path and the entry's key (for an annotation on it).
    pub entry: Option<(String, String)>,
    /// For a captured launch: the launching line (file, line), where its annotation goes.
    pub site: Option<(String, u64)>,
    /// For a captured launch: the kernel's definition (file, line), a second annotation.
    pub kernel_site: Option<(String, u64)>,
}

/// Whether a verdict means the config cannot run on the device (over a budget or a limit).
fn misses(verdict: VerdictCode) -> bool {
    matches!(
        verdict,
        VerdictCode::OverBudget | VerdictCode::OverThreadLimit
    )
}

impl ProbeReport {
    /// Per recommendation, the config shipped to that device: the export's choice for its arch and
    /// variant when given, else the spec's baseline; with its verdict there.
    fn shipped_on<'a>(
        &'a self,
        rec: &'a Recommendation,
        shipped: Option<&'a crate::fix::ConfigExport>,
    ) -> Option<(
        BTreeMap<String, Value>,
        Option<&'a crate::model::verdict::DeviceVerdict>,
    )> {
        let Some(export) = shipped else {
            let verdict = self
                .results
                .iter()
                .find(|r| r.arch == rec.arch && r.config == rec.baseline)
                .and_then(|r| r.verdicts.iter().find(|v| v.device == rec.device));
            return Some((rec.baseline.clone(), verdict));
        };
        let choice = export
            .by_arch
            .get(&rec.arch)?
            .iter()
            .find(|c| c.variant == rec.variant)?;
        let config = choice.config.clone()?;
        let verdict = self
            .results
            .iter()
            .find(|r| r.arch == rec.arch && config.iter().all(|(k, v)| r.config.get(k) == Some(v)))
            .and_then(|r| r.verdicts.iter().find(|v| v.device == rec.device));
        Some((config, verdict))
    }
}

impl Findings for ProbeReport {
    /// The config files that map to no device or could not be read, each with why: where an
    /// engine would fall back to its default configs.
    fn unmapped_files(&self) -> Vec<String> {
        let Some(listed) = &self.listed else {
            return Vec::new();
        };
        let unresolved = listed.files.iter().filter_map(|f| {
            f.unresolved
                .as_ref()
                .filter(|_| f.device.is_none())
                .map(|_| f.file.clone())
        });
        let unreadable = listed
            .file_problems
            .iter()
            .filter(|p| p.entry.is_none())
            .map(crate::input::config_files::FileProblem::file_name);
        unresolved
            .chain(unreadable)
            .map(|f| crate::escape::control(&f).into_owned())
            .collect()
    }

    fn unreadable_files(&self) -> Vec<String> {
        let Some(listed) = &self.listed else {
            return Vec::new();
        };
        listed
            .file_problems
            .iter()
            .map(|p| {
                // A finding is one line of the gate's summary: names from the folder escaped.
                let file = crate::escape::control(&p.file_name()).into_owned();
                match &p.entry {
                    Some(key) => format!("{file} entry {}", crate::escape::control(key)),
                    None => file,
                }
            })
            .collect()
    }

    fn failed_jobs(&self) -> (usize, usize) {
        let failed = self
            .results
            .iter()
            .filter(|r| r.status == CompileStatus::Failed)
            .count();
        (failed, self.results.len())
    }

    fn kernel_source(&self) -> Option<(String, String)> {
        Some((self.kernel.file.clone(), self.kernel.function.clone()))
    }

    fn subject(&self) -> crate::model::identity::Subject {
        crate::model::identity::Subject::of_probe(&self.kernel)
    }

    fn shipped_misses(&self, shipped: Option<&crate::fix::ConfigExport>) -> Vec<Miss> {
        let varying = varying_axes(self);
        let mut found = Vec::new();
        for rec in &self.recommendations {
            let Some((config, verdict)) = self.shipped_on(rec, shipped) else {
                continue;
            };
            if let Some(v) = verdict.filter(|v| misses(v.verdict)) {
                found.push(Miss {
                    site: None,
                    kernel_site: None,
                    entry: None,
                    key: SubjectKey::config(&config),
                    subject: config_text(&config, &varying),
                    device: rec.device.clone(),
                    detail: v.over_by.map_or_else(
                        || v.verdict.as_str().to_owned(),
                        |b| format!("+{}", format_count(b)),
                    ),
                });
            }
        }
        if let Some(listed) = &self.listed {
            for file in &listed.files {
                let Some(device) = &file.device else { continue };
                for entry in file
                    .entries
                    .iter()
                    .filter(|e| e.verdict.is_some_and(misses))
                {
                    let listing = crate::vocab::Listing::Entry {
                        file: file.file.clone(),
                        key: entry.key.clone(),
                    };
                    found.push(Miss {
                        site: None,
                        kernel_site: None,
                        entry: Some((file.path.clone(), entry.key.clone())),
                        subject: listing.to_string(),
                        key: SubjectKey::Entry(listing),
                        device: device.clone(),
                        detail: entry
                            .over_by
                            .map_or_else(String::new, |b| format!("+{}", format_count(b))),
                    });
                }
            }
        }
        found
    }

    fn none_fits(&self) -> Vec<Miss> {
        let Some(listed) = &self.listed else {
            return Vec::new();
        };
        let mut found = Vec::new();
        if listed.kind == crate::input::spec::ListKind::Autotune {
            for fit in listed.per_device.iter().filter(|f| f.none_fits()) {
                let variant = crate::model::naming::variant_text(&fit.variant);
                found.push(Miss {
                    site: None,
                    kernel_site: None,
                    entry: None,
                    key: SubjectKey::AutotuneList(
                        serde_json::to_string(&fit.variant).unwrap_or_default(),
                    ),
                    subject: format!(
                        "the autotune list{}",
                        if variant.is_empty() {
                            String::new()
                        } else {
                            format!(" ({variant})")
                        }
                    ),
                    device: fit.device.clone(),
                    detail: format!("0 of {} fit", fit.total),
                });
            }
        }
        for file in &listed.files {
            let Some(device) = &file.device else { continue };
            if !file.entries.is_empty()
                && file.entries.iter().all(|e| e.verdict.is_some())
                && !file
                    .entries
                    .iter()
                    .any(|e| e.verdict == Some(VerdictCode::Fits))
            {
                found.push(Miss {
                    site: None,
                    kernel_site: None,
                    entry: Some((file.path.clone(), String::new())),
                    key: SubjectKey::File(file.file.clone()),
                    subject: file.file.clone(),
                    device: device.clone(),
                    detail: format!("0 of {} entries fit", file.entries.len()),
                });
            }
        }
        found
    }

    fn judged(&self) -> Vec<Judged> {
        let varying = varying_axes(self);
        self.results
            .iter()
            .flat_map(|r| {
                judged_of(
                    (
                        config_text(&r.config, &varying),
                        SubjectKey::config(&r.config),
                    ),
                    &r.arch,
                    r.status,
                    r.shared_bytes,
                    &r.verdicts,
                    r.resources.as_ref(),
                )
            })
            .collect()
    }
}

/// A saved report read back (`--baseline`), as the findings the gate compares.
impl From<crate::model::saved::SavedReport> for Box<dyn Findings> {
    fn from(saved: crate::model::saved::SavedReport) -> Box<dyn Findings> {
        match saved {
            crate::model::saved::SavedReport::Probe(report) => report,
            crate::model::saved::SavedReport::Replay(report) => report,
            crate::model::saved::SavedReport::Capture(report) => report,
        }
    }
}

impl Findings for crate::model::replay::ReplayReport {
    fn subject(&self) -> crate::model::identity::Subject {
        crate::model::identity::Subject::of_replay(self)
    }

    fn failed_jobs(&self) -> (usize, usize) {
        let failed = self
            .results
            .iter()
            .filter(|r| r.status == CompileStatus::Failed)
            .count();
        let unreadable = self.stats.unreadable_shipped;
        (failed + unreadable, self.results.len() + unreadable)
    }

    fn judged(&self) -> Vec<Judged> {
        self.results
            .iter()
            .flat_map(|r| {
                judged_of(
                    (
                        format!("{} #{}", r.kernel.name, r.kernel.id),
                        SubjectKey::Kernel {
                            name: r.kernel.name.clone(),
                            id: r.kernel.id.clone(),
                        },
                    ),
                    &r.arch,
                    r.status,
                    r.shared_bytes,
                    &r.verdicts,
                    r.resources.as_ref(),
                )
            })
            .collect()
    }
}
