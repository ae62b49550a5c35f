//! What one compile came to, as the cache stores it: a size, or a typed error with the
//! compiler's reason and place; decoded from a worker's reply or from a fault.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::process::WorkerFault;
use super::protocol::{ErrorKind, Passed, Reply, SourceLocation};
use crate::resources::{self, BinaryFormat, KernelResources};
use crate::vocab::CompileStatus;

/// What a worker reported for one job; this is what the cache stores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompileOutcome {
    /// How it went.
    pub status: CompileStatus,
    /// `metadata.shared`.
    pub shared: Option<u64>,
    /// `metadata.tmem_size`, where the target has tensor memory.
    pub tmem_size: Option<u64>,
    /// Effective num_warps after Triton's option parsing.
    pub num_warps: Option<u64>,
    /// Effective num_stages.
    pub num_stages: Option<u64>,
    /// Arguments Triton marked divisible by 16.
    #[serde(default)]
    pub divisible_by_16: Vec<String>,
    /// Int arguments equal to 1, compiled as constants.
    #[serde(default)]
    pub specialized_to_1: Vec<String>,
    /// Error kind and first line, when not ok.
    pub error: Option<OutcomeError>,
    /// Seconds the compile took in the worker.
    pub compile_seconds: f64,
    /// The compiled binary (cubin), when binaries were asked for (`tilefit verify`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<PathBuf>,
    /// The kernel's symbol in that binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_name: Option<String>,
    /// Registers, local memory and launch bounds read from the binary (`--resources full`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<KernelResources>,
    /// Why the binary's resources could not be read, when it was sent but is unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_error: Option<String>,
    /// Parameters passed as more than a plain value (dtype constexprs, None, descriptors,
    /// heuristics, defaults).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub passed: BTreeMap<String, Passed>,
    /// Options this target's backend does not take, left out of its compile (an AMD entry's
    /// `kpack` on an NVIDIA target).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_options: Vec<String>,
}

/// What a compile reply means, for callers outside the runner (the protocol fuzzer).
pub fn outcome_of_reply(reply: &Reply) -> CompileOutcome {
    CompileOutcome::from_reply(reply)
}

/// The binary a reply carries, read; `None` when the reply carries none.
fn resources_of(reply: &Reply) -> Option<Result<KernelResources, String>> {
    use base64::Engine as _;
    let body = &reply.body;
    let format = body.binary_format.as_deref()?;
    let encoded = body.binary_base64.as_deref()?;
    let read = || -> Result<KernelResources, String> {
        let format = BinaryFormat::from_asm_key(format)
            .ok_or_else(|| format!("the worker sent a binary of unknown format `{format}`"))?;
        let binary = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|e| format!("the worker's binary is not base64: {e}"))?;
        resources::read(
            format,
            &binary,
            body.kernel_name.as_deref(),
            body.compiler_log.as_deref(),
        )
        .map_err(|e| e.to_string())
    };
    Some(read())
}

/// Why a job did not produce a size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// The reason, in one line.
    pub message: String,
    /// The compiler's whole diagnostic (`at L:C:`, the source excerpt, the reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostic: Option<String>,
    /// Where in the kernel's source the compiler stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<SourceLocation>,
}

impl OutcomeError {
    /// The reason with its place, in one line: `reason (moe.py:85:21: acc = tl.load(x))`.
    pub fn one_line(&self) -> String {
        match &self.location {
            Some(at) if at.text.is_empty() => format!("{} ({})", self.message, at.short()),
            Some(at) => format!("{} ({}: {})", self.message, at.short(), at.text),
            None => self.message.clone(),
        }
    }
}

impl CompileOutcome {
    pub(crate) fn from_reply(reply: &Reply) -> CompileOutcome {
        let body = &reply.body;
        match &reply.error {
            None => {
                let (resources, resources_error) = match resources_of(reply) {
                    Some(Ok(resources)) => (Some(resources), None),
                    Some(Err(error)) => (None, Some(error)),
                    None => (None, None),
                };
                CompileOutcome {
                    status: CompileStatus::Ok,
                    shared: body.shared,
                    tmem_size: body.tmem_size,
                    num_warps: body.num_warps,
                    num_stages: body.num_stages,
                    divisible_by_16: body.divisible_by_16.clone(),
                    specialized_to_1: body.specialized_to_1.clone(),
                    error: None,
                    compile_seconds: body.timings.compile_s,
                    binary: body.binary.clone(),
                    kernel_name: body.kernel_name.clone(),
                    resources,
                    resources_error,
                    passed: body.passed.clone(),
                    ignored_options: body.ignored_options.clone(),
                }
            }
            Some(error) => {
                let mut outcome = CompileOutcome::failure(
                    if error.kind == ErrorKind::UnsupportedOnTarget {
                        CompileStatus::UnsupportedOnTarget
                    } else {
                        CompileStatus::CompileError
                    },
                    error.kind,
                    &error.message,
                );
                if let Some(failure) = outcome.error.as_mut() {
                    failure.diagnostic.clone_from(&error.diagnostic);
                    failure.location.clone_from(&error.location);
                }
                outcome
            }
        }
    }

    pub(crate) fn failure(status: CompileStatus, kind: ErrorKind, message: &str) -> CompileOutcome {
        CompileOutcome {
            status,
            shared: None,
            tmem_size: None,
            num_warps: None,
            num_stages: None,
            divisible_by_16: Vec::new(),
            specialized_to_1: Vec::new(),
            error: Some(OutcomeError {
                kind,
                message: message.to_owned(),
                diagnostic: None,
                location: None,
            }),
            compile_seconds: 0.0,
            binary: None,
            kernel_name: None,
            resources: None,
            resources_error: None,
            passed: BTreeMap::new(),
            ignored_options: Vec::new(),
        }
    }

    /// What a shipped binary asks of a device that loads it: the bytes and warps its host code
    /// fixed, no compile.
    pub(crate) fn shipped(shared: u64, num_warps: u64) -> CompileOutcome {
        CompileOutcome {
            status: CompileStatus::Ok,
            shared: Some(shared),
            num_warps: Some(num_warps),
            error: None,
            ..CompileOutcome::failure(CompileStatus::Ok, ErrorKind::Internal, "")
        }
    }

    /// A job an interrupt (SIGINT/SIGTERM) kept from running.
    pub(crate) fn interrupted() -> CompileOutcome {
        CompileOutcome::failure(
            CompileStatus::Failed,
            ErrorKind::Interrupted,
            "the run was interrupted before this job ran",
        )
    }

    pub(crate) fn from_fault(fault: &WorkerFault) -> CompileOutcome {
        if *fault == WorkerFault::Interrupted {
            return CompileOutcome::interrupted();
        }
        let last_words = fault
            .stderr()
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| format!("; its last stderr line: {}", l.trim()))
            .unwrap_or_default();
        CompileOutcome::failure(
            CompileStatus::Failed,
            ErrorKind::WorkerFault,
            &format!("{fault}{last_words}"),
        )
    }

    /// Only what the compiler decided is cached: a size, a compile error, an unsupported target.
    /// Worker faults and spec errors are not, so a re-run retries them.
    pub(crate) fn cacheable(&self) -> bool {
        self.error
            .as_ref()
            .is_none_or(|e| e.kind.is_compiler_decision())
    }
}

impl CompileOutcome {
    /// An interrupt kept this job from running: the run is incomplete.
    pub fn is_interrupted(&self) -> bool {
        self.error
            .as_ref()
            .is_some_and(|e| e.kind == ErrorKind::Interrupted)
    }
}
