//! The local NVIDIA driver, loaded at run time: the devices it sees with their own budgets
//! (`tilefit devices --live`) and the driver's verdict on a compiled kernel (`tilefit verify`):
//! does it accept the kernel's dynamic shared memory, and how many blocks fit an SM.
//!
//! The driver library is opened with dlopen when asked for, never linked, so tilefit runs where
//! there is no CUDA; a missing driver is a typed error, never a panic. Built without the `cuda`
//! feature, every entry point returns [`LiveError::BuiltWithoutCuda`].

use serde::{Deserialize, Serialize};

#[cfg(feature = "cuda")]
mod driver;

/// What the driver says about one device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveDevice {
    /// Device ordinal.
    pub ordinal: i32,
    /// `cuDeviceGetName`: what `torch.cuda.get_device_name()` also returns.
    pub name: String,
    /// Compute capability.
    pub compute_capability: (i32, i32),
    /// `sm_90`.
    pub arch: String,
    /// `MULTIPROCESSOR_COUNT`.
    pub sm_count: i32,
    /// `MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`.
    pub smem_per_block_optin: i32,
    /// `MAX_SHARED_MEMORY_PER_MULTIPROCESSOR`.
    pub smem_per_sm: i32,
    /// `RESERVED_SHARED_MEMORY_PER_BLOCK`.
    pub smem_reserved_per_block: i32,
    /// `MAX_SHARED_MEMORY_PER_BLOCK` (the default, without opt-in).
    pub smem_per_block_default: i32,
    /// `MAX_REGISTERS_PER_BLOCK`.
    pub regs_per_block: i32,
    /// `MAX_REGISTERS_PER_MULTIPROCESSOR`.
    pub regs_per_sm: i32,
    /// `MAX_THREADS_PER_MULTIPROCESSOR`.
    pub max_threads_per_sm: i32,
    /// `MAX_THREADS_PER_BLOCK`.
    pub max_threads_per_block: i32,
    /// `MAX_BLOCKS_PER_MULTIPROCESSOR`.
    pub max_blocks_per_sm: i32,
    /// `WARP_SIZE`.
    pub warp_size: i32,
    /// The driver's version (`cuDriverGetVersion`, e.g. 13000).
    pub driver_version: i32,
}

/// The driver's verdict on one compiled kernel at one dynamic shared-memory size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverVerdict {
    /// The driver accepted the size (`cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)`) and at
    /// least one block fits an SM.
    pub accepted: bool,
    /// `cuOccupancyMaxActiveBlocksPerMultiprocessor`, when the size was accepted.
    pub blocks_per_sm: Option<i32>,
    /// The driver's error name when it refused (`CUDA_ERROR_INVALID_VALUE`).
    pub error: Option<String>,
    /// Registers per thread (`CU_FUNC_ATTRIBUTE_NUM_REGS`).
    pub registers: Option<i32>,
    /// Local memory per thread (`CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`).
    pub local_bytes: Option<i32>,
    /// Threads per block the driver allows the function (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`).
    #[serde(default)]
    pub max_threads_per_block: Option<i32>,
}

/// Why the driver could not be asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LiveError {
    /// This build has no driver support.
    #[error("this tilefit was built without CUDA support (the `cuda` feature)")]
    BuiltWithoutCuda,
    /// No driver library could be opened.
    #[error("no CUDA driver found (tried {tried}): {reason}")]
    NoDriver {
        /// The library names tried.
        tried: String,
        /// Why the last one failed.
        reason: String,
    },
    /// The library lacks a function tilefit needs (a very old driver).
    #[error("the CUDA driver has no `{0}`")]
    MissingSymbol(String),
    /// A driver call failed.
    #[error("{call} failed: {name} ({code})")]
    Call {
        /// The function.
        call: &'static str,
        /// `CUresult`.
        code: i32,
        /// `cuGetErrorName`.
        name: String,
    },
    /// The driver sees no GPU.
    #[error("the CUDA driver sees no GPU")]
    NoDevice,
}

impl LiveError {
    /// What to do next.
    pub fn hint(&self) -> &'static str {
        match self {
            LiveError::BuiltWithoutCuda => {
                "rebuild with the default features (`cargo build --release`)"
            }
            LiveError::NoDriver { .. } => {
                "this needs a machine with an NVIDIA GPU and its driver (libcuda.so.1); everything else in tilefit works without one"
            }
            LiveError::MissingSymbol(_) | LiveError::Call { .. } => {
                "check `nvidia-smi`: the driver may be too old or the GPU unavailable"
            }
            LiveError::NoDevice => "check `nvidia-smi` and CUDA_VISIBLE_DEVICES",
        }
    }
}

/// The local GPUs and their budgets, from the driver.
pub fn live_devices() -> Result<Vec<LiveDevice>, LiveError> {
    #[cfg(feature = "cuda")]
    {
        driver::Driver::load()?.devices()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Err(LiveError::BuiltWithoutCuda)
    }
}

/// A session with one device, for judging compiled kernels.
pub struct Session {
    #[cfg(feature = "cuda")]
    inner: driver::Session,
}

impl Session {
    /// Open device `ordinal` (its primary context).
    pub fn open(ordinal: i32) -> Result<Session, LiveError> {
        #[cfg(feature = "cuda")]
        {
            Ok(Session {
                inner: driver::Session::open(ordinal)?,
            })
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = ordinal;
            Err(LiveError::BuiltWithoutCuda)
        }
    }

    /// Load a cubin, find `kernel`, ask the driver to allow `dynamic_shared` bytes, and the
    /// occupancy at `threads` per block.
    pub fn judge(
        &self,
        cubin: &[u8],
        kernel: &str,
        dynamic_shared: u32,
        threads: u32,
    ) -> Result<DriverVerdict, LiveError> {
        #[cfg(feature = "cuda")]
        {
            self.inner.judge(cubin, kernel, dynamic_shared, threads)
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (cubin, kernel, dynamic_shared, threads);
            Err(LiveError::BuiltWithoutCuda)
        }
    }
}

/// One field, as the driver reports it and as the table has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldCheck {
    /// The table's field name.
    pub field: String,
    /// The driver's value.
    pub live: i64,
    /// The table's value, when the table has the field.
    pub table: Option<i64>,
    /// Equal (or the table has no value to compare).
    pub agrees: bool,
}

/// A live device beside the table entry it resolves to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveComparison {
    /// What the driver says.
    pub live: LiveDevice,
    /// The product the driver's name resolves to, if any.
    pub product: Option<String>,
    /// The table arch compared with (from the compute capability).
    pub arch: Option<String>,
    /// Field by field.
    pub fields: Vec<FieldCheck>,
}

impl LiveComparison {
    /// Fields where the driver and the table disagree.
    pub fn disagreements(&self) -> Vec<&FieldCheck> {
        self.fields.iter().filter(|f| !f.agrees).collect()
    }
}

/// Compare a live device with the table: the arch from its compute capability (never from the
/// name), the product (for the SM count) from its name.
pub fn compare(live: &LiveDevice, table: &crate::device::DeviceTable) -> LiveComparison {
    let arch = table.arch(&live.arch);
    let product = table.resolve(&live.name).ok().and_then(|r| r.product());
    let value = |v: &Option<crate::device::Sourced<u32>>| v.as_ref().map(|s| i64::from(s.value));
    let mut fields = Vec::new();
    let mut check = |field: &str, live_value: i32, table_value: Option<i64>| {
        fields.push(FieldCheck {
            field: field.to_owned(),
            live: i64::from(live_value),
            table: table_value,
            agrees: table_value.is_none_or(|t| t == i64::from(live_value)),
        });
    };
    check(
        "smem_per_block_optin",
        live.smem_per_block_optin,
        arch.map(|a| i64::from(a.smem_per_block_optin.value)),
    );
    check(
        "smem_per_sm",
        live.smem_per_sm,
        arch.map(|a| i64::from(a.smem_per_sm.value)),
    );
    check(
        "smem_reserved_per_block",
        live.smem_reserved_per_block,
        arch.map(|a| i64::from(a.smem_reserved_per_block.value)),
    );
    check(
        "smem_per_block_default",
        live.smem_per_block_default,
        arch.map(|a| i64::from(a.smem_per_block_default.value)),
    );
    check(
        "regs_per_block",
        live.regs_per_block,
        arch.and_then(|a| value(&a.regs_per_block)),
    );
    check(
        "regs_per_sm",
        live.regs_per_sm,
        arch.and_then(|a| value(&a.regs_per_sm)),
    );
    check(
        "max_threads_per_sm",
        live.max_threads_per_sm,
        arch.and_then(|a| value(&a.max_threads_per_sm)),
    );
    check(
        "max_threads_per_block",
        live.max_threads_per_block,
        arch.map(|a| i64::from(a.max_threads_per_block.value)),
    );
    check(
        "max_blocks_per_sm",
        live.max_blocks_per_sm,
        arch.and_then(|a| value(&a.max_blocks_per_sm)),
    );
    check(
        "warp_size",
        live.warp_size,
        arch.map(|a| i64::from(a.warp_size.value)),
    );
    check(
        "sm_count",
        live.sm_count,
        product
            .and_then(|p| p.sm_count.as_ref())
            .map(|s| i64::from(s.value)),
    );
    LiveComparison {
        live: live.clone(),
        product: product.map(|p| p.name.clone()),
        arch: arch.map(|a| a.arch.clone()),
        fields,
    }
}

impl crate::hint::Hint for LiveError {
    fn hint(&self) -> Option<String> {
        Some(LiveError::hint(self).to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h200() -> LiveDevice {
        // The attributes docs/reference/devices.md §1.1 measured on an H200.
        LiveDevice {
            ordinal: 0,
            name: "NVIDIA H200".to_owned(),
            compute_capability: (9, 0),
            arch: "sm_90".to_owned(),
            sm_count: 132,
            smem_per_block_optin: 232_448,
            smem_per_sm: 233_472,
            smem_reserved_per_block: 1024,
            smem_per_block_default: 49_152,
            regs_per_block: 65_536,
            regs_per_sm: 65_536,
            max_threads_per_sm: 2048,
            max_threads_per_block: 1024,
            max_blocks_per_sm: 32,
            warp_size: 32,
            driver_version: 13_000,
        }
    }

    #[test]
    fn the_measured_h200_agrees_with_the_table() {
        let table = crate::device::DeviceTable::builtin().unwrap();
        let comparison = compare(&h200(), table);
        assert_eq!(comparison.product.as_deref(), Some("H200"));
        assert_eq!(comparison.arch.as_deref(), Some("sm_90"));
        assert!(
            comparison.disagreements().is_empty(),
            "{:?}",
            comparison.disagreements()
        );
        assert_eq!(comparison.fields.len(), 11);
    }

    #[test]
    fn a_wrong_table_value_is_a_disagreement() {
        let table = crate::device::DeviceTable::builtin().unwrap();
        let mut live = h200();
        live.smem_per_block_optin = 233_472;
        live.name = "NVIDIA H300 (unknown)".to_owned();
        let comparison = compare(&live, table);
        assert_eq!(
            comparison.product, None,
            "an unknown name resolves to no product"
        );
        let wrong = comparison.disagreements();
        assert_eq!(wrong.len(), 1);
        assert_eq!(wrong[0].field, "smem_per_block_optin");
        assert_eq!(wrong[0].table, Some(232_448));
    }
}
