//! NVIDIA's resource model for one block: how many threads per block the driver allows a kernel
//! that uses R registers per thread, and how many blocks stay resident on one SM, limited by
//! shared memory, registers, warps and the block slots. It follows the vendor's own occupancy
//! calculator (cuda_occupancy.h: `cudaOccMaxBlocksPerSMRegsLimit`, `...SmemLimit`,
//! `...WarpsLimit`), fed with the table's sourced limits and granularities and with what the
//! compiler produced (registers from the binary, shared memory from `metadata.shared`).
//! `tilefit verify` checks the result against `cuOccupancyMaxActiveBlocksPerMultiprocessor` and
//! `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK` on a real GPU.

use serde::{Deserialize, Serialize};

use super::table::KIB;
use super::table::{ArchSpec, Backend};

/// One SM's limits, as the occupancy model needs them; built from an arch of the table that has
/// them all (NVIDIA archs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SmLimits {
    /// Threads per warp.
    pub warp_size: u32,
    /// 32-bit registers per SM.
    pub regs_per_sm: u32,
    /// 32-bit registers one block may use.
    pub regs_per_block: u32,
    /// Registers one thread may use.
    pub regs_per_thread: u32,
    /// Resident threads per SM.
    pub max_threads_per_sm: u32,
    /// Threads per block.
    pub max_threads_per_block: u32,
    /// Resident blocks per SM.
    pub max_blocks_per_sm: u32,
    /// Largest shared-memory carveout.
    pub smem_per_sm: u64,
    /// Per-block opt-in budget.
    pub smem_per_block_optin: u64,
    /// Per-block limit without the opt-in.
    pub smem_per_block_default: u64,
    /// Reserved per resident block.
    pub smem_reserved_per_block: u64,
    /// Carveout sizes in bytes, ascending.
    pub smem_carveouts: Vec<u64>,
    /// Shared-memory allocation granularity.
    pub smem_allocation_unit: u64,
    /// Register allocation granularity (per warp).
    pub reg_allocation_unit: u32,
    /// Register-file sub-partitions.
    pub register_subpartitions: u32,
}

impl SmLimits {
    /// The limits of an arch, or `None` when the table lacks any of them (AMD archs today).
    pub fn of(arch: &ArchSpec) -> Option<SmLimits> {
        if arch.backend != Backend::Cuda {
            return None;
        }
        let mut carveouts: Vec<u64> = arch
            .smem_carveouts_kib
            .as_ref()?
            .value
            .iter()
            .map(|k| u64::from(k * KIB))
            .collect();
        carveouts.sort_unstable();
        Some(SmLimits {
            warp_size: arch.warp_size.value,
            regs_per_sm: arch.regs_per_sm.as_ref()?.value,
            regs_per_block: arch.regs_per_block.as_ref()?.value,
            regs_per_thread: arch.regs_per_thread.as_ref()?.value,
            max_threads_per_sm: arch.max_threads_per_sm.as_ref()?.value,
            max_threads_per_block: arch.max_threads_per_block.value,
            max_blocks_per_sm: arch.max_blocks_per_sm.as_ref()?.value,
            smem_per_sm: u64::from(arch.smem_per_sm.value),
            smem_per_block_optin: u64::from(arch.smem_per_block_optin.value),
            smem_per_block_default: u64::from(arch.smem_per_block_default.value),
            smem_reserved_per_block: u64::from(arch.smem_reserved_per_block.value),
            smem_carveouts: carveouts,
            smem_allocation_unit: u64::from(arch.smem_allocation_unit.as_ref()?.value),
            reg_allocation_unit: arch.reg_allocation_unit.as_ref()?.value,
            register_subpartitions: arch.register_subpartitions.as_ref()?.value,
        })
    }

    /// Registers one warp is given for `regs_per_thread` registers per thread.
    fn registers_per_warp(&self, regs_per_thread: u32) -> u32 {
        (regs_per_thread * self.warp_size).next_multiple_of(self.reg_allocation_unit)
    }

    /// Threads per block the driver allows a kernel using `regs_per_thread` registers
    /// (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK` before launch bounds): the most warps whose
    /// registers fit both the sub-partitions and the per-block register limit.
    pub fn max_threads_for_registers(&self, regs_per_thread: u32) -> u32 {
        if regs_per_thread > self.regs_per_thread {
            return 0;
        }
        let per_warp = self.registers_per_warp(regs_per_thread);
        if per_warp == 0 {
            return self.max_threads_per_block;
        }
        let parts = self.register_subpartitions;
        let by_partitions = parts * ((self.regs_per_sm / parts) / per_warp);
        let by_block = (self.regs_per_block / per_warp) / parts * parts;
        (by_partitions.min(by_block) * self.warp_size).min(self.max_threads_per_block)
    }

    /// The carveout the driver picks for blocks of `allocated` bytes when the kernel states no
    /// preference: the largest, unless a block needs more (then none fits anyway).
    fn carveout_for(&self, allocated: u64) -> u64 {
        let preferred = self
            .smem_carveouts
            .last()
            .copied()
            .unwrap_or(self.smem_per_sm);
        if preferred >= allocated {
            return preferred;
        }
        self.smem_carveouts
            .iter()
            .copied()
            .find(|&c| c >= allocated)
            .unwrap_or(preferred)
    }
}

/// What limits the number of resident blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limiter {
    /// Shared memory per SM (with the per-block reservation).
    SharedMemory,
    /// The register file.
    Registers,
    /// Resident threads (warps) per SM.
    Threads,
    /// Resident block slots per SM.
    Blocks,
}

impl Limiter {
    /// A short name for table cells.
    pub fn short(self) -> &'static str {
        match self {
            Limiter::SharedMemory => "smem",
            Limiter::Registers => "regs",
            Limiter::Threads => "threads",
            Limiter::Blocks => "blocks",
        }
    }
}

/// Blocks per SM each resource alone would allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockLimits {
    /// By shared memory (`None`: the kernel uses none, so no limit).
    pub shared_memory: Option<u32>,
    /// By registers (`None`: no registers, no limit).
    pub registers: Option<u32>,
    /// By resident warps.
    pub threads: u32,
    /// By block slots.
    pub blocks: u32,
}

/// One kernel's occupancy on one SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occupancy {
    /// Threads per block the driver allows this kernel at its register count.
    pub max_threads_per_block: u32,
    /// The block's threads are within that (else Triton raises OutOfResources "threads").
    pub threads_fit: bool,
    /// Resident blocks per SM.
    pub blocks_per_sm: u32,
    /// The resource that sets `blocks_per_sm` (the first of shared memory, registers, threads,
    /// blocks that does).
    pub limiter: Limiter,
    /// Resident warps per SM over the most an SM holds, in percent.
    pub occupancy_percent: u32,
    /// What each resource alone allows.
    pub limits: BlockLimits,
    /// Shared memory one block takes from the SM: static + dynamic + reserved, rounded up.
    pub smem_allocated_per_block: u64,
}

/// What the compiler says a kernel needs, for the occupancy model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockNeeds {
    /// Registers per thread.
    pub registers_per_thread: u32,
    /// Static shared memory.
    pub static_shared: u64,
    /// Dynamic shared memory (`metadata.shared`).
    pub dynamic_shared: u64,
    /// Threads per block (num_warps x warp size).
    pub threads_per_block: u32,
}

fn clamp(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// The occupancy of a block with these needs on an SM with these limits.
pub fn occupancy(limits: &SmLimits, needs: &BlockNeeds) -> Occupancy {
    let warp = limits.warp_size;
    let warps = needs.threads_per_block.div_ceil(warp).max(1);
    // The driver's per-function limit comes from the registers alone: on an H200 it ignored the
    // `.reqntid` Triton compiles in (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK` was 512 for a
    // 108-register kernel compiled for 128 threads), so the launch bound is reported, not applied.
    let max_threads_per_block = limits.max_threads_for_registers(needs.registers_per_thread);

    // Registers (cudaOccMaxBlocksPerSMRegsLimit).
    let per_warp = limits.registers_per_warp(needs.registers_per_thread);
    let allocated = u64::from(per_warp) * u64::from(warps);
    let assumed =
        u64::from(per_warp) * u64::from(warps.next_multiple_of(limits.register_subpartitions));
    let by_registers = if u64::from(limits.regs_per_block) < assumed
        || u64::from(limits.regs_per_block) < allocated
        || needs.registers_per_thread > limits.regs_per_thread
    {
        Some(0)
    } else {
        // No registers at all: no register limit.
        ((limits.regs_per_sm / limits.register_subpartitions).checked_div(per_warp))
            .map(|per_partition| per_partition * limits.register_subpartitions / warps)
    };

    // Warps (cudaOccMaxBlocksPerSMWarpsLimit).
    let by_threads = if needs.threads_per_block > limits.max_threads_per_block {
        0
    } else {
        (limits.max_threads_per_sm / warp) / warps
    };

    // Shared memory (cudaOccMaxBlocksPerSMSmemLimit), with the opt-in Triton always makes.
    let used = needs.static_shared + needs.dynamic_shared + limits.smem_reserved_per_block;
    let smem_allocated = used.next_multiple_of(limits.smem_allocation_unit);
    let per_block_limit = if used - limits.smem_reserved_per_block > limits.smem_per_block_default {
        limits.smem_per_block_optin
    } else {
        limits.smem_per_block_default
    } + limits.smem_reserved_per_block;
    let by_shared = if smem_allocated > per_block_limit {
        Some(0)
    } else {
        // No shared memory at all (no reservation either, before sm_80): no limit.
        limits
            .carveout_for(smem_allocated)
            .checked_div(smem_allocated)
            .map(clamp)
    };

    let candidates = [
        (Limiter::SharedMemory, by_shared.unwrap_or(u32::MAX)),
        (Limiter::Registers, by_registers.unwrap_or(u32::MAX)),
        (Limiter::Threads, by_threads),
        (Limiter::Blocks, limits.max_blocks_per_sm),
    ];
    let blocks = candidates.iter().map(|(_, b)| *b).min().unwrap_or(0);
    let limiter = candidates
        .iter()
        .find(|(_, b)| *b == blocks)
        .map_or(Limiter::Blocks, |(l, _)| *l);
    let max_warps = (limits.max_threads_per_sm / warp).max(1);
    Occupancy {
        max_threads_per_block,
        threads_fit: needs.threads_per_block <= max_threads_per_block,
        blocks_per_sm: blocks,
        limiter,
        occupancy_percent: (blocks.saturating_mul(warps) * 100 / max_warps).min(100),
        limits: BlockLimits {
            shared_memory: by_shared,
            registers: by_registers,
            threads: by_threads,
            blocks: limits.max_blocks_per_sm,
        },
        smem_allocated_per_block: smem_allocated,
    }
}

/// Threads per block the driver allows a kernel using `regs_per_thread` registers on this arch,
/// or `None` when the table lacks the arch's register model.
pub fn max_threads_per_block(arch: &ArchSpec, regs_per_thread: u32) -> Option<u32> {
    SmLimits::of(arch).map(|l| l.max_threads_for_registers(regs_per_thread))
}

/// The range of registers per thread for which the driver would allow exactly `limit` threads per
/// block, or `None` when no register count gives that limit on this arch.
pub fn registers_giving_thread_limit(arch: &ArchSpec, limit: u32) -> Option<(u32, u32)> {
    let limits = SmLimits::of(arch)?;
    let matching: Vec<u32> = (1..=limits.regs_per_thread)
        .filter(|&r| limits.max_threads_for_registers(r) == limit)
        .collect();
    Some((*matching.first()?, *matching.last()?))
}

/// The most registers per thread a block of `threads` threads can use on this arch.
pub fn max_registers_for_threads(arch: &ArchSpec, threads: u32) -> Option<u32> {
    let limits = SmLimits::of(arch)?;
    (1..=limits.regs_per_thread)
        .rev()
        .find(|&r| limits.max_threads_for_registers(r) >= threads)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceTable;

    fn limits(arch: &str) -> SmLimits {
        SmLimits::of(DeviceTable::builtin().unwrap().arch(arch).unwrap()).unwrap()
    }

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
    fn each_resource_can_be_the_limiter() {
        let sm90 = limits("sm_90");
        let needs = |regs, dynamic, threads| BlockNeeds {
            registers_per_thread: regs,
            static_shared: 0,
            dynamic_shared: dynamic,
            threads_per_block: threads,
        };
        // 100 KiB + 1 KiB reserved: two blocks in 228 KiB.
        let o = occupancy(&sm90, &needs(32, 100 * 1024, 128));
        assert_eq!((o.blocks_per_sm, o.limiter), (2, Limiter::SharedMemory));
        assert_eq!(o.smem_allocated_per_block, 101 * 1024);
        // 255 registers x 256 threads: 8192 per warp, 8 warps per SM, one block.
        let o = occupancy(&sm90, &needs(255, 1024, 256));
        assert_eq!((o.blocks_per_sm, o.limiter), (1, Limiter::Registers));
        // 1024 threads at 16 registers: two blocks fill the 2048 threads.
        let o = occupancy(&sm90, &needs(16, 0, 1024));
        assert_eq!((o.blocks_per_sm, o.limiter), (2, Limiter::Threads));
        assert_eq!(o.occupancy_percent, 100);
        // Tiny blocks run out of block slots.
        let o = occupancy(&sm90, &needs(16, 0, 32));
        assert_eq!((o.blocks_per_sm, o.limiter), (32, Limiter::Blocks));
        // 168 registers leave 384 threads: a 512-thread block does not launch.
        let o = occupancy(&sm90, &needs(168, 0, 512));
        assert_eq!(o.max_threads_per_block, 384);
        assert!(!o.threads_fit);
        assert_eq!(o.blocks_per_sm, 0);
    }

    #[test]
    fn shared_memory_over_the_budget_leaves_no_block() {
        let sm120 = limits("sm_120");
        let o = occupancy(
            &sm120,
            &BlockNeeds {
                registers_per_thread: 64,
                static_shared: 0,
                dynamic_shared: 102_400,
                threads_per_block: 128,
            },
        );
        assert_eq!(o.limits.shared_memory, Some(0));
        assert_eq!((o.blocks_per_sm, o.limiter), (0, Limiter::SharedMemory));
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
