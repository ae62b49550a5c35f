//! `tilefit explain`: read the resource error a user pasted (Triton's OutOfResources for shared
//! memory, threads or tensor memory, AMD's LDS limit from LLVM, ptxas's static shared-memory
//! error, CUDA's launch and attribute errors) and say what its numbers mean against the device
//! table: which devices have exactly that budget, which would fit the kernel, by how much it is
//! over, and what to change.
//!
//! The result is data ([`Explanation`]); the binary words it. A message this module does not
//! recognise is an [`ExplainError::Unrecognised`], never a guess.

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use crate::device::occupancy::{max_registers_for_threads, registers_giving_thread_limit};
use crate::device::{ArchSpec, Backend, DeviceTable, TableError};

/// Version of the JSON shape of [`Explanation`].
pub const EXPLAIN_SCHEMA_VERSION: u32 = 1;

/// What the message reported, with its numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Finding {
    /// A block needs more shared memory (LDS on AMD) than the device allows per block. Raised by
    /// Triton at first launch, or by LLVM's AMDGPU backend at compile time.
    SharedMemory {
        /// Bytes the kernel needs per block.
        required: u64,
        /// Bytes the device allows per block (its opt-in budget).
        limit: u64,
        /// Who reported it.
        reporter: Reporter,
        /// The kernel, when the message names it.
        #[serde(skip_serializing_if = "Option::is_none")]
        kernel: Option<String>,
    },
    /// Statically sized `__shared__` arrays over the 48 KiB that ptxas allows without opt-in.
    StaticSharedMemory {
        /// Bytes of static shared memory the kernel declares.
        required: u64,
        /// ptxas's static limit.
        limit: u64,
        /// The kernel, when the message names it.
        #[serde(skip_serializing_if = "Option::is_none")]
        kernel: Option<String>,
    },
    /// The registers per thread leave the driver fewer threads per block than the launch asks for.
    Threads {
        /// Threads per block the kernel launches with (num_warps x warp size).
        required: u64,
        /// Threads per block the driver allows at the kernel's register count.
        limit: u64,
    },
    /// Tensor-memory columns (Blackwell datacenter tcgen05 accumulators) over Triton's limit.
    TensorMemory {
        /// Columns the kernel needs.
        required: u64,
        /// Columns available.
        limit: u64,
    },
    /// CUDA refused the launch: registers x threads, or shared memory, exceed what a block may use.
    LaunchOutOfResources,
    /// The driver refused the kernel's max-dynamic-shared-memory attribute.
    DynamicSharedMemoryRejected {
        /// The size that was asked for, when the message includes it.
        #[serde(skip_serializing_if = "Option::is_none")]
        requested: Option<u64>,
    },
}

/// Which part of the stack produced the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reporter {
    /// `triton.runtime.errors.OutOfResources` at first launch.
    Triton,
    /// LLVM's AMDGPU backend at code generation.
    LlvmAmdgpu,
}

/// One architecture measured against the message's requirement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchBudget {
    /// `sm_120`.
    pub arch: String,
    /// `cuda` or `hip`.
    pub backend: Backend,
    /// The budget the requirement is compared with (bytes; the opt-in per-block budget).
    pub budget: u64,
    /// Per-SM shared memory, for the per-SM vs per-block gap.
    pub smem_per_sm: u64,
    /// Bytes reserved per block on top of the budget.
    pub smem_reserved_per_block: u64,
    /// budget - required: headroom when positive, overshoot when negative.
    pub margin: i64,
    /// Products of this arch.
    pub products: Vec<String>,
}

/// One thing to change, with a stable code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Advice {
    /// Kebab-case code (`fewer-stages`, `smaller-tiles`, ...).
    pub code: &'static str,
    /// The advice in plain words.
    pub text: String,
}

/// Everything `tilefit explain` says about one message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// [`EXPLAIN_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// What the message reported.
    pub finding: Finding,
    /// The vendor the message's wording points at, when it does.
    pub backend: Option<Backend>,
    /// Archs whose budget equals the reported limit: the devices that print exactly this message.
    pub limit_matches: Vec<ArchBudget>,
    /// Archs where the requirement fits, most headroom first.
    pub fits: Vec<ArchBudget>,
    /// Archs where it does not, least overshoot first.
    pub does_not_fit: Vec<ArchBudget>,
    /// Facts a reader needs to read the numbers (per-SM vs per-block, units, registers).
    pub notes: Vec<String>,
    /// What to change.
    pub advice: Vec<Advice>,
    /// A tilefit command that finds the largest config that fits.
    pub next_command: Option<String>,
}

/// Why a message could not be explained.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExplainError {
    /// Nothing to read.
    #[error("the message is empty")]
    Empty,
    /// None of the known resource errors is in the message.
    #[error("no GPU resource error that tilefit knows is in this message")]
    Unrecognised,
    /// The embedded device table is broken (a build defect).
    #[error(transparent)]
    Table(#[from] TableError),
}

impl ExplainError {
    /// What the user can do next.
    pub fn hint(&self) -> &'static str {
        match self {
            ExplainError::Empty | ExplainError::Unrecognised => {
                "paste the whole error line, e.g. `out of resource: shared memory, Required: 102400, Hardware limit: 101376`; tilefit reads Triton's OutOfResources (shared memory, threads, tensor memory), AMD's `local memory (N) exceeds limit (M)`, ptxas's `uses too much shared data`, CUDA's `too many resources requested for launch` and a rejected max-dynamic-shared-memory attribute"
            }
            ExplainError::Table(_) => {
                "this is a bug in tilefit's embedded device table; please report it"
            }
        }
    }
}

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("patterns are literals checked by the tests")
}

static OUT_OF_RESOURCE: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)out\s*of\s*resources?:\s*(shared memory|threads|tensor memory)\s*,\s*required:\s*([0-9][0-9,_]*)\s*,\s*hardware limit:\s*([0-9][0-9,_]*)",
    )
});
static AMD_LDS: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?i)local memory \(([0-9]+)\) exceeds limit \(([0-9]+)\)(?: in function '([^']+)')?")
});
static PTXAS_STATIC: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)(?:entry function '([^']+)' )?uses too much shared data \((0x[0-9a-f]+|[0-9]+) bytes,\s*(0x[0-9a-f]+|[0-9]+) max\)",
    )
});
static LAUNCH_OUT_OF_RESOURCES: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)too many resources requested for launch|launch_out_of_resources|launchoutofresources",
    )
});
static DYNAMIC_SMEM_ATTRIBUTE: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)max_?dynamic_?shared_?(?:memory_?)?size(?:_?bytes)?"));
static INVALID_VALUE: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)invalid[ _]?(?:argument|value)"));
static NUMBER: LazyLock<Regex> = LazyLock::new(|| regex(r"\b([0-9]{4,})\b"));
static AMD_WORDS: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)\b(?:hip\w*|rocm|amdgpu|gfx[0-9a-f]+|hsa\w*|mi[0-9]{3}\w*)\b"));
static NVIDIA_WORDS: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)\b(?:cuda\w*|cu[A-Z]\w+|ptxas|nvidia|sm_[0-9]+a?)\b"));

fn parse_number(text: &str) -> Option<u64> {
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn parse_hex_or_decimal(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Recognise the resource error in a message. Pure parsing; no device knowledge.
pub fn parse_message(message: &str) -> Result<Finding, ExplainError> {
    if message.trim().is_empty() {
        return Err(ExplainError::Empty);
    }
    if let Some(c) = OUT_OF_RESOURCE.captures(message) {
        let required = parse_number(&c[2]).ok_or(ExplainError::Unrecognised)?;
        let limit = parse_number(&c[3]).ok_or(ExplainError::Unrecognised)?;
        return Ok(match c[1].to_lowercase().as_str() {
            "shared memory" => Finding::SharedMemory {
                required,
                limit,
                reporter: Reporter::Triton,
                kernel: None,
            },
            "threads" => Finding::Threads { required, limit },
            _ => Finding::TensorMemory { required, limit },
        });
    }
    if let Some(c) = AMD_LDS.captures(message) {
        return Ok(Finding::SharedMemory {
            required: parse_number(&c[1]).ok_or(ExplainError::Unrecognised)?,
            limit: parse_number(&c[2]).ok_or(ExplainError::Unrecognised)?,
            reporter: Reporter::LlvmAmdgpu,
            kernel: c.get(3).map(|m| m.as_str().to_owned()),
        });
    }
    if let Some(c) = PTXAS_STATIC.captures(message) {
        return Ok(Finding::StaticSharedMemory {
            required: parse_hex_or_decimal(&c[2]).ok_or(ExplainError::Unrecognised)?,
            limit: parse_hex_or_decimal(&c[3]).ok_or(ExplainError::Unrecognised)?,
            kernel: c.get(1).map(|m| m.as_str().to_owned()),
        });
    }
    if let Some(attribute) = DYNAMIC_SMEM_ATTRIBUTE.find(message)
        && INVALID_VALUE.is_match(message)
    {
        let requested = NUMBER
            .captures(&message[attribute.end()..])
            .and_then(|c| parse_number(&c[1]));
        return Ok(Finding::DynamicSharedMemoryRejected { requested });
    }
    if LAUNCH_OUT_OF_RESOURCES.is_match(message) {
        return Ok(Finding::LaunchOutOfResources);
    }
    Err(ExplainError::Unrecognised)
}

/// The vendor the wording points at, if it points at exactly one.
fn backend_of(message: &str, finding: &Finding) -> Option<Backend> {
    match finding {
        Finding::SharedMemory {
            reporter: Reporter::LlvmAmdgpu,
            ..
        } => return Some(Backend::Hip),
        Finding::StaticSharedMemory { .. } | Finding::TensorMemory { .. } => {
            return Some(Backend::Cuda);
        }
        _ => {}
    }
    match (AMD_WORDS.is_match(message), NVIDIA_WORDS.is_match(message)) {
        (true, false) => Some(Backend::Hip),
        (false, true) => Some(Backend::Cuda),
        _ => None,
    }
}

/// Explain a message against a device table.
pub fn explain(message: &str, table: &DeviceTable) -> Result<Explanation, ExplainError> {
    let finding = parse_message(message)?;
    let backend = backend_of(message, &finding);
    let mut explanation = Explanation {
        schema_version: EXPLAIN_SCHEMA_VERSION,
        finding: finding.clone(),
        backend,
        limit_matches: Vec::new(),
        fits: Vec::new(),
        does_not_fit: Vec::new(),
        notes: Vec::new(),
        advice: Vec::new(),
        next_command: None,
    };
    let in_scope = |arch: &&ArchSpec| backend.is_none_or(|b| arch.backend == b);
    let archs: Vec<&ArchSpec> = table.archs().iter().filter(in_scope).collect();
    match finding {
        Finding::SharedMemory {
            required, limit, ..
        } => explain_shared(&mut explanation, table, &archs, required, limit),
        Finding::StaticSharedMemory {
            required, limit, ..
        } => {
            explain_static(&mut explanation, table, &archs, required, limit);
        }
        Finding::Threads { required, limit } => {
            explain_threads(&mut explanation, table, required, limit);
        }
        Finding::TensorMemory { required, limit } => {
            explain_tensor_memory(&mut explanation, required, limit);
        }
        Finding::LaunchOutOfResources => explain_launch(&mut explanation, table),
        Finding::DynamicSharedMemoryRejected { requested } => {
            explain_attribute(&mut explanation, table, &archs, requested);
        }
    }
    Ok(explanation)
}

fn arch_budget(table: &DeviceTable, arch: &ArchSpec, budget: u32, required: u64) -> ArchBudget {
    ArchBudget {
        arch: arch.arch.clone(),
        backend: arch.backend,
        budget: u64::from(budget),
        smem_per_sm: u64::from(arch.smem_per_sm.value),
        smem_reserved_per_block: u64::from(arch.smem_reserved_per_block.value),
        margin: signed(u64::from(budget)) - signed(required),
        products: table
            .products_of(&arch.arch)
            .map(|p| p.name.clone())
            .collect(),
    }
}

fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Split archs into those where `required` fits the budget `budget_of` gives and those where not.
fn split_by_fit(
    explanation: &mut Explanation,
    table: &DeviceTable,
    archs: &[&ArchSpec],
    required: u64,
    budget_of: impl Fn(&ArchSpec) -> u32,
) {
    for arch in archs {
        let row = arch_budget(table, arch, budget_of(arch), required);
        if row.margin >= 0 {
            explanation.fits.push(row);
        } else {
            explanation.does_not_fit.push(row);
        }
    }
    // Stable sorts: ties keep the table's order (by compute capability, NVIDIA before AMD).
    explanation
        .fits
        .sort_by_key(|row| std::cmp::Reverse(row.margin));
    explanation
        .does_not_fit
        .sort_by_key(|row| std::cmp::Reverse(row.margin));
}

fn format_bytes(bytes: u64) -> String {
    crate::units::format_bytes(bytes)
}

fn explain_shared(
    explanation: &mut Explanation,
    table: &DeviceTable,
    archs: &[&ArchSpec],
    required: u64,
    limit: u64,
) {
    explanation.limit_matches = archs
        .iter()
        .filter(|a| u64::from(a.budget()) == limit)
        .map(|a| arch_budget(table, a, a.budget(), required))
        .collect();
    split_by_fit(explanation, table, archs, required, ArchSpec::budget);
    let notes = &mut explanation.notes;
    notes.push(
        "Both numbers are bytes of shared memory per block (LDS per workgroup on AMD).".to_owned(),
    );

    if explanation.limit_matches.is_empty() {
        let per_sm_match: Vec<&str> = archs
            .iter()
            .filter(|a| {
                u64::from(a.smem_per_sm.value) == limit && a.smem_per_sm.value != a.budget()
            })
            .map(|a| a.arch.as_str())
            .collect();
        if per_sm_match.is_empty() {
            notes.push(format!(
                "No device in tilefit's table has a per-block budget of exactly {}: the device may be missing from the table (`tilefit devices --live` reads the driver's own numbers).",
                format_bytes(limit)
            ));
        } else {
            notes.push(format!(
                "{} is the per-SM capacity of {}, not a per-block budget: a block may use 1 KiB less than that.",
                format_bytes(limit),
                per_sm_match.join(", ")
            ));
        }
    }
    let mut seen_gap = false;
    for matched in &explanation.limit_matches {
        if matched.smem_reserved_per_block > 0 && !seen_gap {
            seen_gap = true;
            notes.push(format!(
                "The limit is the opt-in per-block budget: the per-SM {} minus the {} the driver reserves for every block.",
                format_bytes(matched.smem_per_sm),
                format_bytes(matched.smem_reserved_per_block)
            ));
            if required == matched.smem_per_sm {
                notes.push(format!(
                    "The kernel needs exactly the full per-SM {}: it would fit the SM, but not a block, which may use at most {}.",
                    format_bytes(matched.smem_per_sm),
                    format_bytes(matched.budget)
                ));
            } else if required > matched.smem_per_sm {
                notes.push(format!(
                    "The kernel needs more than the whole SM holds ({}).",
                    format_bytes(matched.smem_per_sm)
                ));
            }
        }
    }
    if required <= limit {
        notes.push(format!(
            "The message says {} needed against {} allowed, which fits: check that the numbers were copied whole.",
            format_bytes(required),
            format_bytes(limit)
        ));
    } else {
        let over = required - limit;
        explanation.advice.push(Advice {
            code: "fewer-stages",
            text: format!(
                "Lower `num_stages`: each software-pipelining stage keeps one more copy of the tiles the loop loads in shared memory. The kernel must shed {} ({:.1}% of what it needs).",
                format_bytes(over),
                percent(over, required)
            ),
        });
        explanation.advice.push(Advice {
            code: "smaller-tiles",
            text: "Use smaller tiles (BLOCK_M / BLOCK_N / BLOCK_K, or the head-dimension blocks): shared memory grows with the product of the tile sides and the element size.".to_owned(),
        });
        explanation.advice.push(Advice {
            code: "pick-per-device",
            text: "Choose the config per device from its budget (`shared_memory_per_block_optin` in torch) instead of one config for every GPU.".to_owned(),
        });
    }
    explanation.next_command = Some(probe_command(&explanation.limit_matches, archs));
}

fn probe_command(matches: &[ArchBudget], archs: &[&ArchSpec]) -> String {
    let targets: Vec<&str> = if matches.is_empty() {
        archs.iter().map(|a| a.arch.as_str()).collect()
    } else {
        matches.iter().map(|m| m.arch.as_str()).collect()
    };
    format!(
        "tilefit probe SPEC.toml --targets {}   (sweeps num_stages and tile sizes and names the largest config that fits each target)",
        targets.join(",")
    )
}

fn percent(part: u64, whole: u64) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "byte counts are far below 2^52")]
    let ratio = part as f64 / whole.max(1) as f64;
    ratio * 100.0
}

fn explain_static(
    explanation: &mut Explanation,
    table: &DeviceTable,
    archs: &[&ArchSpec],
    required: u64,
    limit: u64,
) {
    split_by_fit(explanation, table, archs, required, |a| {
        a.smem_per_block_default.value
    });
    explanation.limit_matches = archs
        .iter()
        .filter(|a| u64::from(a.smem_per_block_default.value) == limit)
        .map(|a| arch_budget(table, a, a.smem_per_block_default.value, required))
        .collect();
    explanation.notes.push(format!(
        "ptxas refuses statically sized `__shared__` arrays over {} on every NVIDIA arch: larger allocations must be dynamic shared memory with an explicit opt-in (cudaFuncAttributeMaxDynamicSharedMemorySize), up to the device's opt-in budget.",
        format_bytes(limit)
    ));
    explanation.notes.push(format!(
        "The kernel declares {}, {} over.",
        format_bytes(required),
        format_bytes(required.saturating_sub(limit))
    ));
    explanation.notes.push("Triton kernels never hit this: all of Triton's shared memory is dynamic. It comes from CUDA C++ or inline kernels.".to_owned());
    explanation.advice.push(Advice {
        code: "use-dynamic-shared-memory",
        text: "Declare the buffer `extern __shared__` and pass its size at launch, after cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes).".to_owned(),
    });
}

fn explain_threads(explanation: &mut Explanation, table: &DeviceTable, required: u64, limit: u64) {
    let nvidia: Vec<&ArchSpec> = table
        .archs()
        .iter()
        .filter(|a| a.backend == Backend::Cuda)
        .collect();
    let notes = &mut explanation.notes;
    notes.push(format!(
        "Both numbers are threads per block. The kernel launches {required} threads ({} warps of 32 threads); at the registers per thread it compiled to, the driver allows only {limit}.",
        required / 32
    ));
    let register_files: Vec<u32> = nvidia
        .iter()
        .filter_map(|a| a.regs_per_block.as_ref().map(|r| r.value))
        .collect();
    if let (Some(first), Ok(limit32)) = (register_files.first(), u32::try_from(limit)) {
        if register_files.iter().all(|r| r == first) {
            notes.push(format!(
                "Every NVIDIA arch in tilefit's table has {} registers per block, so this fails the same way on all of them.",
                crate::units::format_count(u64::from(*first))
            ));
        }
        if let Some((lo, hi)) = nvidia
            .first()
            .and_then(|a| registers_giving_thread_limit(a, limit32))
        {
            notes.push(format!(
                "A limit of {limit} threads means the kernel uses about {lo}-{hi} registers per thread (registers are allocated per warp in units of 256; an estimate, see docs/reference/devices.md §1.5)."
            ));
        }
        if let Some(max_regs) = nvidia
            .first()
            .and_then(|a| max_registers_for_threads(a, u32::try_from(required).unwrap_or(u32::MAX)))
        {
            explanation.advice.push(Advice {
                code: "cap-registers",
                text: format!(
                    "Cap registers so {required} threads fit: at most {max_regs} registers per thread (`maxnreg={max_regs}` in the triton.Config); the compiler may spill to local memory instead."
                ),
            });
        }
    }
    // Triton's num_warps is a power of two.
    let warps_that_fit = (limit / 32).checked_ilog2().map_or(0, |log| 1_u64 << log);
    if warps_that_fit > 0 {
        explanation.advice.push(Advice {
            code: "fewer-warps",
            text: format!(
                "Use `num_warps={warps_that_fit}` (or fewer): {} threads fit the {limit} the driver allows at this register count.",
                warps_that_fit * 32
            ),
        });
    }
    explanation.advice.push(Advice {
        code: "smaller-tiles",
        text: "Use smaller tiles: fewer elements per thread need fewer registers.".to_owned(),
    });
}

fn explain_tensor_memory(explanation: &mut Explanation, required: u64, limit: u64) {
    explanation.notes.push(format!(
        "Both numbers are tensor-memory columns, not bytes. Tensor memory holds tcgen05 MMA accumulators on datacenter Blackwell; Triton allows {limit} columns (of 128 lanes x 32 bits) per SM. The kernel asks for {required}, {} over.",
        required.saturating_sub(limit)
    ));
    explanation.advice.push(Advice {
        code: "smaller-accumulator",
        text: "Use a smaller BLOCK_N (accumulator columns) or fewer accumulator buffers (a lower num_stages or a non-pipelined epilogue).".to_owned(),
    });
}

fn explain_launch(explanation: &mut Explanation, table: &DeviceTable) {
    let nvidia: Vec<&ArchSpec> = table
        .archs()
        .iter()
        .filter(|a| a.backend == Backend::Cuda)
        .collect();
    let notes = &mut explanation.notes;
    notes.push("CUDA refused the launch because one block asks for more than an SM can give it: almost always registers per thread x threads per block over the register file, sometimes shared memory over what the kernel opted into. The message carries no numbers.".to_owned());
    if let Some(arch) = nvidia.first() {
        let limits: Vec<String> = [128_u32, 256, 512, 1024]
            .iter()
            .filter_map(|&threads| {
                max_registers_for_threads(arch, threads)
                    .map(|regs| format!("{threads} threads: {regs}"))
            })
            .collect();
        notes.push(format!(
            "Registers per thread a block can use (NVIDIA, 64 K registers per block): {}.",
            limits.join(", ")
        ));
    }
    explanation.advice.push(Advice {
        code: "fewer-warps",
        text: "Launch fewer threads per block (a lower `num_warps`).".to_owned(),
    });
    explanation.advice.push(Advice {
        code: "cap-registers",
        text: "Cap registers per thread (`maxnreg` in the triton.Config, `__launch_bounds__` in CUDA C++).".to_owned(),
    });
    explanation.advice.push(Advice {
        code: "read-kernel-resources",
        text: "Read the kernel's registers and shared memory (Triton: `kernel.n_regs`, `kernel.metadata.shared`; CUDA: `cuobjdump -res-usage`) and compare them with `tilefit devices`.".to_owned(),
    });
}

fn explain_attribute(
    explanation: &mut Explanation,
    table: &DeviceTable,
    archs: &[&ArchSpec],
    requested: Option<u64>,
) {
    explanation.notes.push("The driver refuses a max-dynamic-shared-memory attribute larger than the device's opt-in budget minus the kernel's static shared memory.".to_owned());
    match requested {
        Some(requested) => {
            split_by_fit(explanation, table, archs, requested, ArchSpec::budget);
            explanation.notes.push(format!(
                "{} was asked for; the budgets below say which devices accept it (less any static `__shared__` the kernel also declares).",
                format_bytes(requested)
            ));
            explanation.next_command = Some(probe_command(&explanation.does_not_fit, archs));
        }
        None => {
            explanation.notes.push("The message does not say how much was asked for; `tilefit devices` lists each device's opt-in budget.".to_owned());
        }
    }
    explanation.advice.push(Advice {
        code: "pick-per-device",
        text: "Size the request from the device's own budget (cudaDevAttrMaxSharedMemoryPerBlockOptin) instead of a constant.".to_owned(),
    });
}

impl crate::hint::Hint for ExplainError {
    fn hint(&self) -> Option<String> {
        Some(ExplainError::hint(self).to_owned())
    }
}
