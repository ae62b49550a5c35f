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
    /// Shared memory fits, but the registers each thread needs leave the driver fewer threads
    /// per block than num_warps x warp size: Triton raises OutOfResources "threads".
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
    /// Threads per block the driver allows at the kernel's register count (`--resources full`).
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
}
