//! The fix, exported: per arch, the recommended config of every workload variant, as JSON an
//! engine can load at start-up. Keyed by arch (`sm_120`, from `torch.cuda.get_device_capability()`,
//! which never depends on a marketing string) and, beside it, a map from every product name the
//! table knows for those archs (what `torch.cuda.get_device_name()` returns, among others) to its
//! arch, so a lookup by name has a fallback instead of a silent default.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::device::DeviceTable;
use crate::probe::{KernelInfo, ProbeReport, RuleSummary, ToolInfo};

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
                    config: r.config.clone(),
                    shared_bytes: r.shared_bytes,
                    budget: target.smem_per_block_optin,
                    baseline_fits: r.baseline_fits,
                })
                .collect();
            by_arch.insert(target.arch.clone(), choices);
        }
        let mut device_names = BTreeMap::new();
        for product in table
            .products()
            .iter()
            .filter(|p| by_arch.contains_key(&p.arch))
        {
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
        }
    }
}
