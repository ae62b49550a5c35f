//! NVIDIA's register-allocation model: how many threads per block the driver allows a kernel
//! that uses R registers per thread. Used to read a `threads` OutOfResources message backwards
//! (which register counts give that limit) and, later, for occupancy.
//!
//! The model (docs/reference/devices.md §1.5): registers are allocated per warp in units of 256,
//! from 4 sub-partitions of `regs_per_sm / 4` each. Measured once on an H200 (80 registers ->
//! 768 threads) and stated by a third-party occupancy model for sm_86; treat results as estimates.

use super::table::{ArchSpec, Backend};

/// Registers are handed to a warp in multiples of this many.
pub const REGISTER_ALLOCATION_UNIT: u32 = 256;

/// The register file is split into this many sub-partitions, one per warp scheduler.
pub const REGISTER_SUBPARTITIONS: u32 = 4;

/// Threads per block the driver allows a kernel using `regs_per_thread` registers, or `None` when
/// the arch is not NVIDIA or its register file is not in the table.
pub fn max_threads_per_block(arch: &ArchSpec, regs_per_thread: u32) -> Option<u32> {
    if arch.backend != Backend::Cuda || regs_per_thread == 0 {
        return None;
    }
    let regs_per_sm = arch.regs_per_sm.as_ref()?.value;
    let regs_cap = arch.regs_per_thread.as_ref()?.value;
    if regs_per_thread > regs_cap {
        return Some(0);
    }
    let warp = arch.warp_size.value;
    let per_warp =
        (regs_per_thread * warp).div_ceil(REGISTER_ALLOCATION_UNIT) * REGISTER_ALLOCATION_UNIT;
    let warps = REGISTER_SUBPARTITIONS * ((regs_per_sm / REGISTER_SUBPARTITIONS) / per_warp);
    Some((warps * warp).min(arch.max_threads_per_block.value))
}

/// The range of registers per thread for which the driver would allow exactly `limit` threads per
/// block, or `None` when no register count gives that limit on this arch.
pub fn registers_giving_thread_limit(arch: &ArchSpec, limit: u32) -> Option<(u32, u32)> {
    let cap = arch.regs_per_thread.as_ref()?.value;
    let matching: Vec<u32> = (1..=cap)
        .filter(|&r| max_threads_per_block(arch, r) == Some(limit))
        .collect();
    Some((*matching.first()?, *matching.last()?))
}

/// The most registers per thread a block of `threads` threads can use on this arch.
pub fn max_registers_for_threads(arch: &ArchSpec, threads: u32) -> Option<u32> {
    let cap = arch.regs_per_thread.as_ref()?.value;
    (1..=cap)
        .rev()
        .find(|&r| max_threads_per_block(arch, r).is_some_and(|t| t >= threads))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceTable;

    #[test]
    fn h200_measurement_80_registers_allow_768_threads() {
        let table = DeviceTable::builtin().unwrap();
        let sm90 = table.arch("sm_90").unwrap();
        assert_eq!(max_threads_per_block(sm90, 80), Some(768));
        assert_eq!(max_threads_per_block(sm90, 32), Some(1024));
        assert_eq!(max_threads_per_block(sm90, 255), Some(256));
        let (lo, hi) = registers_giving_thread_limit(sm90, 768).unwrap();
        assert!(lo <= 80 && 80 <= hi, "{lo}..{hi}");
        assert_eq!(max_registers_for_threads(sm90, 1024), Some(64));
    }

    #[test]
    fn amd_archs_have_no_register_model_yet() {
        let table = DeviceTable::builtin().unwrap();
        assert_eq!(
            max_threads_per_block(table.arch("gfx942").unwrap(), 64),
            None
        );
    }
}
