//! Verdicts as data: a device's verdict on one compile (`fits` with its headroom, `over-budget`
//! with the overshoot, the thread limit and occupancy where the binary was read, or why there is
//! no size). Made by `judge::verdict`.

use serde::{Deserialize, Serialize};

use crate::device::occupancy::{Limiter, Occupancy};

/// The verdict for one (config, device).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerdictCode {
    /// Within the per-block opt-in budget.
    Fits,
    /// Over the budget: Triton raises OutOfResources at first launch.
    OverBudget,
    /// Did not compile for this arch.
    CompileError,
    /// Not supported on this arch.
    UnsupportedOnTarget,
    /// The compile did not finish (worker fault).
    Failed,
    /// Shared memory fits, but the block has more threads (num_warps x the arch's warp size)
    /// than the device allows, or than the registers each thread needs leave the driver: Triton
    /// raises OutOfResources "threads" (a HIP launch fails with an invalid argument).
    OverThreadLimit,
}

impl VerdictCode {
    /// The kebab-case code.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictCode::Fits => "fits",
            VerdictCode::OverBudget => "over-budget",
            VerdictCode::CompileError => "compile-error",
            VerdictCode::UnsupportedOnTarget => "unsupported-on-target",
            VerdictCode::Failed => "failed",
            VerdictCode::OverThreadLimit => "over-thread-limit",
        }
    }
}

/// One device's verdict on one result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceVerdict {
    /// The device as the user wrote it.
    pub device: String,
    /// The verdict.
    pub verdict: VerdictCode,
    /// Bytes over the budget, for `over-budget`.
    pub over_by: Option<u64>,
    /// Bytes left, for `fits`.
    pub headroom: Option<u64>,
    /// The budget compared with.
    pub budget: u64,
    /// Threads the block launches: num_warps x the arch's warp size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads_per_block: Option<u32>,
    /// Threads per block the device allows: the arch's limit, lowered to what the kernel's
    /// register count leaves where the binary was read (`--resources full`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_threads_per_block: Option<u32>,
    /// Resident blocks per SM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks_per_sm: Option<u32>,
    /// What limits them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occupancy_limiter: Option<Limiter>,
    /// Resident warps over the SM's maximum, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occupancy_percent: Option<u32>,
}

impl DeviceVerdict {
    /// Add what the occupancy model says; a config whose shared memory fits but whose threads
    /// do not becomes `over-thread-limit` (Triton checks shared memory first, then threads).
    #[must_use]
    pub fn with_occupancy(mut self, occupancy: Option<Occupancy>) -> DeviceVerdict {
        if let Some(o) = occupancy {
            self.max_threads_per_block = Some(o.max_threads_per_block);
            self.blocks_per_sm = Some(o.blocks_per_sm);
            self.occupancy_limiter = Some(o.limiter);
            self.occupancy_percent = Some(o.occupancy_percent);
            if self.verdict == VerdictCode::Fits && !o.threads_fit {
                self.verdict = VerdictCode::OverThreadLimit;
                self.headroom = None;
            }
        }
        self
    }

    /// Judge the block's threads (`threads`, num_warps x warp size) against the device's
    /// `limit`: a config whose shared memory fits but whose block is larger than the device
    /// allows becomes `over-thread-limit`. Shared memory is judged first, as Triton does.
    #[must_use]
    pub fn with_thread_limit(mut self, threads: Option<u32>, limit: Option<u32>) -> DeviceVerdict {
        self.threads_per_block = threads;
        let limit = match (self.max_threads_per_block, limit) {
            (Some(by_registers), Some(device)) => Some(by_registers.min(device)),
            (by_registers, device) => by_registers.or(device),
        };
        self.max_threads_per_block = limit;
        if let (Some(threads), Some(limit)) = (threads, limit)
            && threads > limit
            && self.verdict == VerdictCode::Fits
        {
            self.verdict = VerdictCode::OverThreadLimit;
            self.headroom = None;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fits() -> DeviceVerdict {
        DeviceVerdict {
            device: "mi355x".to_owned(),
            verdict: VerdictCode::Fits,
            over_by: None,
            headroom: Some(100),
            budget: 163_840,
            threads_per_block: None,
            max_threads_per_block: None,
            blocks_per_sm: None,
            occupancy_limiter: None,
            occupancy_percent: None,
        }
    }

    #[test]
    fn a_block_wider_than_the_device_allows_is_over_the_thread_limit() {
        let v = fits().with_thread_limit(Some(2048), Some(1024));
        assert_eq!(v.verdict, VerdictCode::OverThreadLimit);
        assert_eq!(
            (v.threads_per_block, v.max_threads_per_block),
            (Some(2048), Some(1024))
        );
        assert_eq!(v.headroom, None);
        // At the limit it fits.
        let v = fits().with_thread_limit(Some(1024), Some(1024));
        assert_eq!((v.verdict, v.headroom), (VerdictCode::Fits, Some(100)));
        // Shared memory is judged first, as Triton does: over budget stays over budget.
        let over = DeviceVerdict {
            verdict: VerdictCode::OverBudget,
            headroom: None,
            over_by: Some(8),
            ..fits()
        };
        assert_eq!(
            over.with_thread_limit(Some(4096), Some(1024)).verdict,
            VerdictCode::OverBudget
        );
        // The registers' limit, where the binary was read, lowers the device's.
        let read = DeviceVerdict {
            max_threads_per_block: Some(512),
            ..fits()
        };
        let v = read.with_thread_limit(Some(1024), Some(1024));
        assert_eq!(
            (v.verdict, v.max_threads_per_block),
            (VerdictCode::OverThreadLimit, Some(512))
        );
        // Unknown warps: nothing to judge.
        assert_eq!(
            fits().with_thread_limit(None, Some(1024)).verdict,
            VerdictCode::Fits
        );
    }
}
