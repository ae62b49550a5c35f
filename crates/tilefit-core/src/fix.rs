//! The fix, exported: per arch, the recommended config of every workload variant, as JSON an
//! engine can load at start-up. Keyed by arch (`sm_120`, from `torch.cuda.get_device_capability()`,
//! which never depends on a marketing string) and, beside it, a map from every product name the
//! table knows for those archs (what `torch.cuda.get_device_name()` returns, among others) to its
//! arch, so a lookup by name has a fallback instead of a silent default. For an autotuned kernel it
//! also carries the pruned autotune list of every arch and device: the configs that fit there,
//! as JSON or as a Python module of `triton.Config`s ready to paste or import.

pub mod files;
pub mod launch;
pub mod rounds;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::device::DeviceTable;
use crate::input::spec::ListKind;
use crate::model::probe::{KernelInfo, ProbeReport, RuleSummary, ToolInfo};
use crate::vocab::AutotuneConfig;

/// Version of the exported file's shape.
pub const CONFIGS_SCHEMA_VERSION: u32 = 1;

/// One variant's recommendation on one arch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArchChoice {
    /// The workload variant (values of the rule's `per` axes).
    pub variant: BTreeMap<String, Value>,
    /// The config to use, or `null` when no swept config fits this arch.
    pub config: Option<BTreeMap<String, Value>>,
    /// Its shared memory per block.
    pub shared_bytes: Option<u64>,
    /// The arch's per-block budget.
    pub budget: u64,
    /// Whether the baseline config fits this arch as it is.
    pub baseline_fits: bool,
}

/// The exported file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigExport {
    /// [`CONFIGS_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// tilefit's name and version.
    pub tool: ToolInfo,
    /// The Triton version the sizes come from.
    pub triton_version: String,
    /// The kernel.
    pub kernel: KernelInfo,
    /// How the recommendations were chosen.
    pub rule: RuleSummary,
    /// Arch -> one choice per variant.
    pub by_arch: BTreeMap<String, Vec<ArchChoice>>,
    /// Product name or alias (as drivers and people write them) -> arch.
    pub device_names: BTreeMap<String, String>,
    /// The fleet's devices as the user named them -> arch.
    pub devices: BTreeMap<String, String>,
    /// The autotune list pruned per arch and device, for an autotuned kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autotune: Option<AutotuneExport>,
}

/// The autotune configs that fit, for one workload variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrunedList {
    /// The workload variant (the spec's axes crossed with the list; empty without).
    pub variant: BTreeMap<String, Value>,
    /// The configs that fit, in the kernel's order.
    pub configs: Vec<AutotuneConfig>,
    /// Their places in the kernel's list.
    pub kept: Vec<usize>,
}

/// The pruned autotune lists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutotuneExport {
    /// The list as the kernel writes it.
    pub listed: usize,
    /// Arch -> pruned list per variant.
    pub by_arch: BTreeMap<String, Vec<PrunedList>>,
    /// Device (as the fleet names it) -> pruned list per variant.
    pub by_device: BTreeMap<String, Vec<PrunedList>>,
    /// Devices where no listed config fits: the autotuner has nothing to choose from there.
    pub none_fits: Vec<String>,
}

/// The pruned lists of a report from an autotune sweep.
fn autotune_export(report: &ProbeReport) -> Option<AutotuneExport> {
    let listed = report.listed.as_ref()?;
    if listed.kind != ListKind::Autotune {
        return None;
    }
    let place = |index: usize| -> Option<usize> {
        listed
            .origins
            .get(index)?
            .iter()
            .find_map(crate::vocab::Listing::autotune_place)
    };
    let mut by_arch: BTreeMap<String, Vec<PrunedList>> = BTreeMap::new();
    let mut by_device: BTreeMap<String, Vec<PrunedList>> = BTreeMap::new();
    let mut none_fits = Vec::new();
    for fit in &listed.per_device {
        let kept: Vec<usize> = fit.fits.iter().filter_map(|&i| place(i)).collect();
        let pruned = PrunedList {
            variant: fit.variant.clone(),
            configs: kept
                .iter()
                .filter_map(|&k| listed.autotune.get(k).cloned())
                .collect(),
            kept,
        };
        if fit.none_fits() && !none_fits.contains(&fit.device) {
            none_fits.push(fit.device.clone());
        }
        let arch = by_arch.entry(fit.arch.clone()).or_default();
        if !arch.iter().any(|p| p.variant == pruned.variant) {
            arch.push(pruned.clone());
        }
        by_device
            .entry(fit.device.clone())
            .or_default()
            .push(pruned);
    }
    Some(AutotuneExport {
        listed: listed.autotune.len(),
        by_arch,
        by_device,
        none_fits,
    })
}

/// The lookup the Python export ends with: keyed by the arch the driver reports, the names only a
/// way to ask for another device (the same rule as the `tilefit` package's `config_for`).
const PYTHON_LOOKUP: &str = r#"}


def current_arch(device=None):
    """The arch of a CUDA/HIP device as the driver reports it (torch): the key of CONFIGS_BY_ARCH."""
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device() if device is None else device)
    if getattr(torch.version, "hip", None):
        return props.gcnArchName.split(":")[0]
    return f"sm_{props.major}{props.minor}"


def configs_for(device=None, variant=None):
    """The pruned list for the current device (None), an arch ("sm_120") or a device name."""
    if device is None:
        arch = current_arch()
    elif device.startswith(("sm_", "gfx")):
        arch = device
    elif device in DEVICE_ARCH:
        arch = DEVICE_ARCH[device]
    else:
        raise KeyError(f"{device!r} is not a device name tilefit's table knows: pass its arch (sm_90, gfx942)")
    key = arch if variant is None else (arch, variant)
    if key not in CONFIGS_BY_ARCH:
        raise KeyError(f"{key} was not probed by tilefit: probe with --targets {arch} and export again")
    return CONFIGS_BY_ARCH[key]
"#;

impl ConfigExport {
    /// The pruned autotune lists as a Python module: `CONFIGS_BY_ARCH`, `DEVICE_ARCH` and
    /// `configs_for(device=None)` (by the live arch, an arch or a name), to paste into the kernel's
    /// module or import. `None` when the kernel was not autotuned.
    pub fn python(&self) -> Option<String> {
        let autotune = self.autotune.as_ref()?;
        // Values that came from a report (paths, names, versions) are written only as string
        // literals, never as raw text in code or comments.
        let lit = crate::escape::python_str;
        let mut out = format!(
            "# Written by tilefit: the @triton.autotune configs that fit each arch's shared memory\n# per block. Where they came from is in TILEFIT_SOURCE.\nimport triton\n\nTILEFIT_SOURCE = {{\n    \"tilefit\": {},\n    \"kernel_file\": {},\n    \"kernel_function\": {},\n    \"triton_version\": {},\n}}\n\n",
            lit(&self.tool.version),
            lit(&self.kernel.file),
            lit(&self.kernel.function),
            lit(&self.triton_version)
        );
        out.push_str("CONFIGS_BY_ARCH = {\n");
        for (arch, lists) in &autotune.by_arch {
            for list in lists {
                let key = if list.variant.is_empty() {
                    lit(arch)
                } else {
                    let variant = crate::model::naming::variant_text(&list.variant);
                    format!("({}, {})", lit(arch), lit(&variant))
                };
                if list.configs.is_empty() {
                    let _ = writeln!(
                        out,
                        "    {key}: [],  # none fits: the autotuner would have nothing to try"
                    );
                    continue;
                }
                let _ = writeln!(out, "    {key}: [");
                for (config, place) in list.configs.iter().zip(&list.kept) {
                    let _ = writeln!(out, "        {},  # #{place}", config.python());
                }
                out.push_str("    ],\n");
            }
        }
        out.push_str("}\n\nDEVICE_ARCH = {\n");
        for (name, arch) in self.device_names.iter().chain(&self.devices) {
            let _ = writeln!(out, "    {}: {},", lit(name), lit(arch));
        }
        out.push_str(PYTHON_LOOKUP);
        Some(out)
    }
}

/// What a launch passes of a config: the kernel's parameters and compile options, never a spec's
/// placeholder axes (`kv_dtype`, which picks argument types and stays in the variant). A report
/// without the parameter list (older tilefit) keeps every value.
fn launch_values(
    config: &BTreeMap<String, Value>,
    parameters: &[String],
) -> BTreeMap<String, Value> {
    use crate::input::cache_index::{BACKEND_OPTIONS, PORTABLE_OPTIONS};
    if parameters.is_empty() {
        return config.clone();
    }
    config
        .iter()
        .filter(|(k, _)| {
            parameters.contains(k)
                || PORTABLE_OPTIONS.contains(&k.as_str())
                || BACKEND_OPTIONS.contains(&k.as_str())
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

impl ConfigExport {
    /// Build the export from a probe report.
    pub fn from_probe(report: &ProbeReport, table: &DeviceTable) -> ConfigExport {
        let mut by_arch: BTreeMap<String, Vec<ArchChoice>> = BTreeMap::new();
        for target in &report.targets {
            if by_arch.contains_key(&target.arch) {
                continue;
            }
            // Every device of an arch has the same bytes and budget: its first device speaks for it.
            let choices = report
                .recommendations
                .iter()
                .filter(|r| r.device == target.device)
                .map(|r| ArchChoice {
                    variant: r.variant.clone(),
                    config: r
                        .config
                        .as_ref()
                        .map(|c| launch_values(c, &report.kernel.parameters)),
                    shared_bytes: r.shared_bytes,
                    budget: target.smem_per_block_optin,
                    baseline_fits: r.baseline_fits,
                })
                .collect();
            by_arch.insert(target.arch.clone(), choices);
        }
        // Every product name of the table, whatever its arch: a lookup by a name whose arch
        // was not probed then says so (or takes the caller's fallback) instead of not knowing it.
        let mut device_names = BTreeMap::new();
        for product in table.products() {
            for name in std::iter::once(&product.name).chain(&product.aliases) {
                device_names.insert(name.clone(), product.arch.clone());
            }
        }
        ConfigExport {
            schema_version: CONFIGS_SCHEMA_VERSION,
            tool: report.tool.clone(),
            triton_version: report.triton_version.clone(),
            kernel: report.kernel.clone(),
            rule: report.rule.clone(),
            by_arch,
            device_names,
            devices: report
                .targets
                .iter()
                .map(|t| (t.device.clone(), t.arch.clone()))
                .collect(),
            autotune: autotune_export(report),
        }
    }
}

impl ConfigExport {
    /// Read an export written elsewhere (`--shipped`): parsed through `input::untrusted` (every
    /// string checked); a file of another shape is an error naming it.
    pub fn read(path: &std::path::Path) -> Result<ConfigExport, crate::model::read::ReadError> {
        const HINT: &str = "pass a file written by `tilefit probe --emit-configs FILE.json`";
        let json = crate::input::untrusted::read_json_expecting(path, HINT)?;
        serde_json::from_value(json).map_err(|e| {
            crate::hint::Hinted::new(
                format!("`{}` is not a tilefit config export: {e}", path.display()),
                HINT,
            )
            .into()
        })
    }
}
