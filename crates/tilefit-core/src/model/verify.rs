//! The verify report, as data: per compiled kernel, the predicted verdict beside the driver's
//! (and a launch's, when made), the resource checks, and the agreement rate.

use serde::{Deserialize, Serialize};

use crate::cuda::{DriverVerdict, LiveDevice};
use crate::model::probe::ToolInfo;
use crate::model::verdict::VerdictCode;

/// Version of the verify report's JSON shape.
pub const VERIFY_SCHEMA_VERSION: u32 = 1;

/// One number as tilefit predicts it and as the driver reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// tilefit's number.
    pub predicted: Option<i64>,
    /// The driver's.
    pub driver: Option<i64>,
    /// Both known and equal.
    pub agrees: bool,
}

impl Check {
    pub(crate) fn of(predicted: Option<i64>, driver: Option<i64>) -> Check {
        Check {
            agrees: predicted.is_some() && predicted == driver,
            predicted,
            driver,
        }
    }
}

/// Registers, local memory, the thread limit and occupancy: read and modelled against the driver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceChecks {
    /// Registers per thread from the cubin vs `CU_FUNC_ATTRIBUTE_NUM_REGS`.
    pub registers_per_thread: Check,
    /// Stack frame from the cubin vs `CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`.
    pub local_bytes_per_thread: Check,
    /// Modelled thread limit vs `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`.
    pub max_threads_per_block: Check,
    /// The `threads` verdict (1: the block's threads fit) vs the driver's limit.
    pub threads_fit: Check,
    /// Modelled resident blocks vs `cuOccupancyMaxActiveBlocksPerMultiprocessor` (0 where the
    /// driver refused the size).
    pub blocks_per_sm: Check,
    /// Spill bytes from ptxas's log (not something the driver reports).
    pub spill_bytes: Option<u64>,
    /// Every check agrees.
    pub agrees: bool,
}

/// What a real launch through Triton's JIT said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchOutcome {
    /// The kernel ran.
    pub launched: bool,
    /// What refused it (Triton's OutOfResources, a CUDA error).
    pub error: Option<String>,
}

/// The prediction and the driver's verdict for one case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    /// Which config or kernel variant.
    pub subject: String,
    /// Function name.
    pub kernel: String,
    /// Bytes per block.
    pub shared_bytes: u64,
    /// Threads per block.
    pub threads: u32,
    /// What tilefit predicted from the table: `fits` or `over-budget`.
    pub predicted: VerdictCode,
    /// What the driver said.
    pub driver: DriverVerdict,
    /// What a real launch said, with `--launch`.
    pub launch: Option<LaunchOutcome>,
    /// Registers, local memory, threads and occupancy against the driver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceChecks>,
    /// Prediction, driver and launch (when made) agree (fits = accepted = launched), and so do
    /// the resource checks.
    pub agrees: bool,
}

/// A whole verification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifyReport {
    /// [`VERIFY_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `verify`.
    pub kind: crate::model::kind::ReportKind,
    /// tilefit's name and version.
    pub tool: ToolInfo,
    /// The GPU, as the driver describes it.
    pub device: LiveDevice,
    /// The table's per-block budget for its arch: what predictions use.
    pub table_budget: u64,
    /// Triton version that compiled.
    pub triton_version: String,
    /// The spec, cache or results verified.
    pub source: String,
    /// One row per compiled kernel.
    pub rows: Vec<Row>,
    /// Configs or kernels that did not compile for this arch (nothing to put before the driver).
    pub not_compiled: Vec<String>,
    /// Rows that agree.
    pub agreed: usize,
}

impl VerifyReport {
    /// Per resource check: (name, agreeing rows, rows checked).
    pub fn resource_tally(&self) -> Vec<(&'static str, usize, usize)> {
        let checks: Vec<&ResourceChecks> = self
            .rows
            .iter()
            .filter_map(|r| r.resources.as_ref())
            .collect();
        let count =
            |pick: fn(&ResourceChecks) -> &Check| checks.iter().filter(|c| pick(c).agrees).count();
        vec![
            (
                "registers per thread",
                count(|c| &c.registers_per_thread),
                checks.len(),
            ),
            (
                "local bytes per thread",
                count(|c| &c.local_bytes_per_thread),
                checks.len(),
            ),
            (
                "max threads per block",
                count(|c| &c.max_threads_per_block),
                checks.len(),
            ),
            ("threads verdict", count(|c| &c.threads_fit), checks.len()),
            ("blocks per SM", count(|c| &c.blocks_per_sm), checks.len()),
        ]
    }
}
