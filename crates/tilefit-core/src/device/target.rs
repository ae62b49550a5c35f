//! The fleet a run judges against: devices resolved from the table, each with its arch's budget
//! and occupancy limits, and the compile [`Target`] of each arch.

use serde::{Deserialize, Serialize};

use super::occupancy::SmLimits;
use super::{Backend, DeviceTable, LookupError};

/// Where a job compiles for: an arch of one backend, with its warp size.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Target {
    /// `cuda` or `hip`.
    pub backend: Backend,
    /// `sm_120`, `gfx942`.
    pub arch: String,
    /// Threads per warp.
    pub warp_size: u32,
}

/// A device of the fleet, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetDevice {
    /// The name as the user wrote it (or the short name, for the default fleet).
    pub device: String,
    /// The canonical name.
    pub name: String,
    /// Its arch.
    pub arch: String,
    /// Its backend.
    pub backend: Backend,
    /// Warp size of the arch.
    pub warp_size: u32,
    /// Per-block opt-in budget.
    pub smem_per_block_optin: u64,
    /// Per-SM shared memory.
    pub smem_per_sm: u64,
    /// Reserved per block.
    pub smem_reserved_per_block: u64,
    /// Threads a block may have (`num_warps` x warp size must not exceed it): the arch's limit
    /// from the table. Absent in reports written before the thread limit was judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_threads_per_block: Option<u32>,
    /// The arch's limits for the occupancy model (NVIDIA archs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_limits: Option<SmLimits>,
}

impl TargetDevice {
    /// The most warps a block may have: threads per block over the warp size (unknown in a
    /// report written before the thread limit was judged).
    pub fn max_warps(&self) -> Option<u64> {
        self.max_threads_per_block
            .map(|limit| u64::from(limit / self.warp_size.max(1)))
    }

    /// Resolve names (products or archs) against the table.
    pub fn resolve(
        table: &DeviceTable,
        names: &[String],
    ) -> Result<Vec<TargetDevice>, LookupError> {
        let mut devices: Vec<TargetDevice> = Vec::new();
        for name in names {
            let resolved = table.resolve(name)?;
            let arch = resolved.arch();
            if devices.iter().any(|d| d.name == resolved.display_name()) {
                continue;
            }
            devices.push(TargetDevice {
                device: name.trim().to_owned(),
                name: resolved.display_name().to_owned(),
                arch: arch.arch.clone(),
                backend: arch.backend,
                warp_size: arch.warp_size.value,
                smem_per_block_optin: u64::from(arch.smem_per_block_optin.value),
                smem_per_sm: u64::from(arch.smem_per_sm.value),
                smem_reserved_per_block: u64::from(arch.smem_reserved_per_block.value),
                max_threads_per_block: Some(arch.max_threads_per_block.value),
                sm_limits: SmLimits::of(arch),
            });
        }
        Ok(devices)
    }

    /// One device per budget class, as the table marks them (`default_fleet`).
    pub fn default_fleet(table: &DeviceTable) -> Vec<TargetDevice> {
        let names: Vec<String> = table
            .products()
            .iter()
            .filter(|p| p.default_fleet)
            .map(|p| p.short_name().to_owned())
            .collect();
        TargetDevice::resolve(table, &names).expect("default-fleet names come from the table")
    }

    /// The compile target of its arch.
    pub fn target(&self) -> Target {
        Target {
            backend: self.backend,
            arch: self.arch.clone(),
            warp_size: self.warp_size,
        }
    }
}
