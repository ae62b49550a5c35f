//! The replay's report: the distinct kernel variants found, one result per (variant, arch) with a
//! verdict per device, the Triton version groups, what was skipped, and counts.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::compile::OutcomeError;
use crate::device::{Backend, TargetDevice};
use crate::input::cache_index::{IrArg, Skipped};
use crate::model::probe::ToolInfo;
use crate::model::verdict::DeviceVerdict;
use crate::vocab::CompileStatus;

/// Version of the replay report's JSON shape.
pub const REPLAY_SCHEMA_VERSION: u32 = 1;

/// One distinct kernel variant found in the caches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelVariant {
    /// Short id (the start of Triton's own hash of the compile).
    pub id: String,
    /// Function name.
    pub name: String,
    /// `file.py:line` of its definition, from the IR.
    pub source: Option<String>,
    /// The Triton version that produced it.
    pub triton_version: Option<String>,
    /// The arch it was compiled for.
    pub original_arch: String,
    /// `metadata.shared` there.
    pub original_shared_bytes: Option<u64>,
    /// Options it was compiled with (and is replayed with).
    pub options: BTreeMap<String, Value>,
    /// Its arguments: types and divisibility, which tell specializations apart.
    pub args: Vec<IrArg>,
    /// The `tl.arange` lengths in its IR: the tile sizes its constexprs chose (constexpr values
    /// themselves are folded away before the IR is cached).
    pub tile_ranges: Vec<u64>,
    /// The cache folder it was read from.
    pub entry: String,
    /// How many identical entries the caches hold.
    pub copies: usize,
    /// Read from a shipped package (an AOTInductor `.pt2`) instead of a cache: its bytes are
    /// the ones its host code asks for on every device its binary reaches, not recompiled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shipped: Option<Shipped>,
}

/// Where a shipped kernel came from and what its binary can run on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shipped {
    /// The package.
    pub package: String,
    /// The wrapper `.cpp` in it, and the line of the kernel's `loadKernel`.
    pub wrapper: String,
    /// That line.
    pub line: usize,
    /// The binary's file name (`embedded`: linked into the wrapper's `.so`).
    pub binary: String,
    /// Its images as `nvcc -gencode` names them: `sm_80`, `compute_80`, `sm_90a`.
    pub images: Vec<String>,
}

/// One (kernel variant, arch) recompile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayResult {
    /// The variant (see `kernels`).
    pub kernel: KernelRef,
    /// Options, as in a probe result's config.
    pub config: BTreeMap<String, Value>,
    /// The arch recompiled for.
    pub arch: String,
    /// Its backend.
    pub backend: Backend,
    /// How it went.
    pub status: CompileStatus,
    /// `metadata.shared` on this arch.
    pub shared_bytes: Option<u64>,
    /// The arch the workload compiled for, and its bytes there, beside the new ones.
    pub original_arch: String,
    /// `metadata.shared` on the original arch.
    pub original_shared_bytes: Option<u64>,
    /// Error kind and first line.
    pub error: Option<OutcomeError>,
    /// Came from the result cache.
    pub cached: bool,
    /// The Triton version that recompiled it.
    pub replayed_with: String,
    /// The compiled binary, when binaries were asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<PathBuf>,
    /// Registers, local memory and spills from the binary (`--resources full`), flattened.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<crate::resources::KernelResources>,
    /// Why the binary's resources could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_error: Option<String>,
    /// The kernel's symbol in the binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_name: Option<String>,
    /// One verdict per device of this arch.
    pub verdicts: Vec<DeviceVerdict>,
}

/// A reference to a variant, as carried by each result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelRef {
    /// Index into `kernels`.
    pub index: usize,
    /// The variant's id.
    pub id: String,
    /// Its function name.
    pub name: String,
    /// Its source location.
    pub source: Option<String>,
}

/// A Triton version found in the caches and the toolchain that replayed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionGroup {
    /// The version recorded in the cache entries (`None`: not recorded).
    pub produced_by: Option<String>,
    /// The Triton version that recompiled them.
    pub replayed_with: String,
    /// The Python of that toolchain.
    pub python_version: String,
    /// Variants in this group.
    pub kernels: usize,
}

/// Counts and time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayStats {
    /// Cache folders looked at.
    pub entries_scanned: usize,
    /// Distinct kernel variants.
    pub kernels: usize,
    /// Folders that are not kernels.
    pub other_entries: usize,
    /// Kernel entries skipped.
    pub skipped: usize,
    /// Recompiles (variants x archs).
    pub jobs: usize,
    /// Compiled in this run.
    pub compiled: usize,
    /// From the result cache.
    pub cached: usize,
    /// Worker faults, and recompiles an interrupt stopped.
    pub failed: usize,
    /// Wall time of the recompiles.
    pub seconds: f64,
    /// False when the run was interrupted.
    #[serde(default = "crate::model::probe::complete_by_default")]
    pub complete: bool,
    /// Kernels or wrappers of shipped packages that could not be read (listed in `skipped`):
    /// not judged, so they fail the run as failed jobs do.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unreadable_shipped: usize,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Everything a replay found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    /// [`REPLAY_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `replay`: tells a saved replay report from a probe report.
    pub kind: crate::model::kind::ReportKind,
    /// tilefit's name and version.
    pub tool: ToolInfo,
    /// The cache directories.
    pub caches: Vec<String>,
    /// Triton versions: produced by, replayed with.
    pub versions: Vec<VersionGroup>,
    /// The fleet.
    pub targets: Vec<TargetDevice>,
    /// Distinct kernel variants.
    pub kernels: Vec<KernelVariant>,
    /// Variant-major, then arch in fleet order.
    pub results: Vec<ReplayResult>,
    /// Entries that could not be replayed, with the reason.
    pub skipped: Vec<Skipped>,
    /// Counts.
    pub stats: ReplayStats,
}
