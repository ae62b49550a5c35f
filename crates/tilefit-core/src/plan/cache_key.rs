//! The one cache-key scheme: a job to run, and the digest of every input that decides its result.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::digest::sha256;
use crate::vocab::{PROTOCOL_VERSION, Request};

/// Everything besides the request that decides a result.
#[derive(Debug, Clone, Serialize)]
pub struct KeyContext {
    /// Digest of what is compiled: the kernel source (and its neighbours), or a cached IR file.
    pub source: String,
    /// Triton's version.
    pub triton: String,
    /// Python's version.
    pub python: String,
    /// Digest of the worker script.
    pub worker: String,
    /// Triton's compile knobs set in the environment (absent when none is, so keys made
    /// without any stay as they were).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// The cache key of a request: a digest of every input. Paths are left out (the same source
/// compiles the same anywhere; its digest is in the context), and so is where binaries go.
pub fn key(request: &Request, context: &KeyContext) -> String {
    let mut request = request.clone();
    match &mut request {
        Request::Compile { job, binary_dir } => {
            job.kernel_file = PathBuf::new();
            *binary_dir = None;
        }
        Request::CompileIr {
            ir_file,
            binary_dir,
            ..
        } => {
            *ir_file = PathBuf::new();
            *binary_dir = None;
        }
        Request::Inspect { kernel_file, .. } | Request::Launch { kernel_file, .. } => {
            *kernel_file = PathBuf::new();
        }
        Request::Warm { .. } | Request::Fork { .. } | Request::Reap { .. } => {}
    }
    let material = serde_json::json!({
        "request": request,
        "context": context,
        "protocol": PROTOCOL_VERSION,
    });
    sha256(material.to_string().as_bytes())
}

/// One compile to run: its request, cache key, a label for progress and a cost estimate (the
/// slowest run first, so a sweep does not end waiting on one long compile).
#[derive(Debug, Clone)]
pub struct Job {
    /// The request.
    pub request: Request,
    /// Its cache key ([`key`]).
    pub key: String,
    /// `sm_90 BLOCK_N=64 num_stages=2`.
    pub label: String,
    /// A rough, monotone cost.
    pub cost: u64,
}
