//! One compile as the stages hand it on: the job's arguments, the job, and the request a worker
//! receives (typed on this side; the worker script in `compile/worker/` is the other).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::kernel::{Descriptor, KernelSource};
use crate::device::Target;

/// An argument as the worker receives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobArg {
    /// Triton type with placeholders filled: `*fp8e4nv`, `i32`.
    #[serde(rename = "type")]
    pub ty: String,
    /// Example value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// 16-byte aligned pointer.
    pub aligned: bool,
    /// A host-side tensor descriptor's dtype, shape, strides and block shape.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub descriptor: Option<Descriptor>,
}

/// One compile: a config of the sweep for one target arch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompileJob {
    /// The kernel source file.
    pub kernel_file: PathBuf,
    /// The `@triton.jit` function.
    pub function: String,
    /// How its module is loaded.
    #[serde(flatten)]
    pub source: KernelSource,
    /// Non-constexpr arguments.
    pub args: BTreeMap<String, JobArg>,
    /// Constexpr values.
    pub constexprs: BTreeMap<String, Value>,
    /// Compile options (num_warps, num_stages, ...).
    pub options: BTreeMap<String, Value>,
    /// The target.
    pub target: Target,
    /// Run the whole compile (through the cubin) instead of stopping once shared memory is
    /// allocated; part of the key, so the two never share a cache entry.
    #[serde(default)]
    pub full: bool,
    /// Also send back the binary and ptxas's log, for registers, local memory and spills
    /// (`--resources full`; implies the whole compile).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resources: bool,
}

/// One request. Serialized with a `type` tag (`inspect`, `compile`, `compile_ir`, `launch`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// A kernel's parameters, autotune list, heuristics and its Triton's backend options.
    Inspect {
        /// The kernel source file.
        kernel_file: PathBuf,
        /// The function (or its `@triton.autotune`/`@triton.heuristics` wrapper).
        function: String,
        /// How its module is loaded.
        #[serde(flatten)]
        source: KernelSource,
    },
    /// Compile a spec config through the JIT's own specialization.
    Compile {
        /// The job.
        #[serde(flatten)]
        job: CompileJob,
        /// Keep the binary in this folder (`tilefit verify`).
        #[serde(skip_serializing_if = "Option::is_none")]
        binary_dir: Option<PathBuf>,
    },
    /// Recompile a cached kernel's IR file for another target (replay).
    CompileIr {
        /// The `.ttir` (or `.ttgir`) file.
        ir_file: PathBuf,
        /// Compile options.
        options: BTreeMap<String, Value>,
        /// The target.
        target: Target,
        /// Compile through the binary.
        full: bool,
        /// Send back the binary and ptxas's log.
        resources: bool,
        /// Keep the binary in this folder.
        #[serde(skip_serializing_if = "Option::is_none")]
        binary_dir: Option<PathBuf>,
    },
    /// Launch a spec config once on the local GPU (`tilefit verify --launch`).
    Launch {
        /// The kernel source file.
        kernel_file: PathBuf,
        /// The function.
        function: String,
        /// How its module is loaded.
        #[serde(flatten)]
        source: KernelSource,
        /// Arguments.
        args: BTreeMap<String, JobArg>,
        /// Constexprs.
        constexprs: BTreeMap<String, Value>,
        /// Options.
        options: BTreeMap<String, Value>,
        /// Program grid.
        grid: Vec<u64>,
        /// Bytes of each zero-filled pointer argument.
        buffer_bytes: u64,
    },
    /// Zygote only: compile a small built-in kernel for the target, so the compiler's one-time
    /// initialisation for the arch is done once, before any fork.
    Warm {
        /// The arch every worker forked from this zygote compiles for.
        target: Target,
    },
    /// Zygote only: fork. Sent with three file descriptors (the new process's stdin, stdout and
    /// stderr; for a zygote, a control socket instead of stdin); the child answers with a
    /// [`Hello`] on its own stdout.
    Fork {
        /// The child is a zygote itself (for one arch) instead of a worker.
        zygote: bool,
    },
    /// Zygote only: how a forked child ended, waiting up to `wait_ms` for it.
    Reap {
        /// The child.
        pid: u32,
        /// How long to wait for it to end.
        wait_ms: u64,
    },
}

impl Request {
    /// The target arch a compile request compiles for (the pool keeps one arch per worker).
    pub fn arch(&self) -> Option<&str> {
        match self {
            Request::Compile { job, .. } => Some(&job.target.arch),
            Request::CompileIr { target, .. } => Some(&target.arch),
            Request::Inspect { .. }
            | Request::Launch { .. }
            | Request::Warm { .. }
            | Request::Fork { .. }
            | Request::Reap { .. } => None,
        }
    }

    /// The target a compile request compiles for.
    pub fn target(&self) -> Option<&Target> {
        match self {
            Request::Compile { job, .. } => Some(&job.target),
            Request::CompileIr { target, .. } => Some(target),
            _ => None,
        }
    }
}

/// The protocol version both sides speak.
pub const PROTOCOL_VERSION: u32 = 1;
