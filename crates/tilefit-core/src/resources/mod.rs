//! What a compiled kernel asks of the hardware besides shared memory: registers per thread, local
//! memory (stack frame, spills included) per thread, launch bounds and static shared memory, read
//! from the binary Triton produced (a cubin for NVIDIA, a code object for AMD) exactly where the
//! driver reads them when it loads the module. Spill bytes come from ptxas's own log. No GPU is
//! needed: `tilefit probe --resources full` compiles to the binary for every target on a CPU.

mod code_object;
mod cubin;
pub mod elf;
pub mod images;
pub mod msgpack;
pub mod ptxas;

use serde::{Deserialize, Serialize};

/// Why a binary could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BinaryError {
    /// Not an ELF file at all.
    #[error("not an ELF file")]
    NotElf,
    /// The right kind of file for another machine.
    #[error("expected {expected}, found ELF machine {found}")]
    WrongMachine {
        /// What was expected.
        expected: &'static str,
        /// `e_machine` found.
        found: u16,
    },
    /// A structure runs past the end of the file.
    #[error("the binary is truncated: {0} runs past its end")]
    Truncated(&'static str),
    /// A structure that makes no sense.
    #[error("the binary is malformed: {0}")]
    Malformed(String),
    /// The kernel is not in the binary.
    #[error("no kernel `{wanted}` in the binary (it has: {})", found.join(", "))]
    NoKernel {
        /// The kernel asked for.
        wanted: String,
        /// The kernels present.
        found: Vec<String>,
    },
}

/// Which kind of binary the resources came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BinaryFormat {
    /// An NVIDIA cubin (ELF, EM_CUDA).
    Cubin,
    /// An AMDGPU code object (ELF, EM_AMDGPU).
    AmdgpuCodeObject,
}

impl BinaryFormat {
    /// From the name Triton's `kernel.asm` uses for the binary.
    pub fn from_asm_key(key: &str) -> Option<BinaryFormat> {
        match key {
            "cubin" => Some(BinaryFormat::Cubin),
            "hsaco" => Some(BinaryFormat::AmdgpuCodeObject),
            _ => None,
        }
    }
}

/// AMD's register classes, which have no NVIDIA counterpart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AmdRegisters {
    /// Scalar registers per wave.
    pub sgprs: u32,
    /// Accumulation registers per work-item (CDNA).
    pub agprs: u32,
    /// VGPRs spilled to scratch.
    pub vgpr_spills: u32,
    /// SGPRs spilled.
    pub sgpr_spills: u32,
    /// Wavefront size the kernel was compiled for.
    pub wavefront_size: Option<u32>,
}

/// One kernel's resources, as the binary says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelResources {
    /// Where they were read from.
    pub binary_format: BinaryFormat,
    /// The arch the binary says it is for (`sm_90`, `gfx942`), from its header or metadata.
    pub binary_arch: String,
    /// The kernel's symbol in the binary.
    pub binary_symbol: String,
    /// Registers per thread (NVIDIA: `EIATTR_REGCOUNT`; AMD: VGPRs).
    pub registers_per_thread: u32,
    /// Local memory per thread: the stack frame (NVIDIA `EIATTR_FRAME_SIZE`, spills included;
    /// AMD private segment).
    pub local_bytes_per_thread: u64,
    /// Bytes ptxas spilled (its "bytes spill stores"), where its log was kept.
    pub spill_bytes: Option<u64>,
    /// Bytes ptxas reloads from spills ("bytes spill loads").
    pub spill_load_bytes: Option<u64>,
    /// Static shared memory, beside the dynamic `metadata.shared` (0 for Triton on NVIDIA).
    pub static_shared_bytes: u64,
    /// Threads per block the kernel was compiled for at most (`.maxntid`/`.reqntid`; AMD
    /// `max_flat_workgroup_size`).
    pub launch_bound_threads: Option<u32>,
    /// The `maxnreg` cap the compile ran under.
    pub max_registers: Option<u32>,
    /// AMD's other register classes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amd: Option<AmdRegisters>,
}

impl KernelResources {
    /// The kernel spills registers to local memory: by ptxas's count where known, else by the
    /// AMD spill counts; `None` when neither is known (a frame alone may be a local array).
    pub fn spills(&self) -> Option<bool> {
        match (self.spill_bytes, &self.amd) {
            (Some(bytes), _) => Some(bytes > 0),
            (None, Some(amd)) => Some(amd.vgpr_spills + amd.sgpr_spills > 0),
            (None, None) => None,
        }
    }
}

/// Read one kernel's resources from a binary, adding ptxas's spill counts when its log is given.
pub fn read(
    format: BinaryFormat,
    binary: &[u8],
    kernel: Option<&str>,
    ptxas_log: Option<&str>,
) -> Result<KernelResources, BinaryError> {
    let mut resources = match format {
        BinaryFormat::Cubin => cubin::read(binary, kernel)?,
        BinaryFormat::AmdgpuCodeObject => code_object::read(binary, kernel)?,
    };
    if let Some(report) = ptxas_log.and_then(|log| ptxas::parse(log, &resources.binary_symbol)) {
        resources.spill_bytes = report.spill_stores;
        resources.spill_load_bytes = report.spill_loads;
    }
    Ok(resources)
}
