//! Asking a worker what a kernel takes: its parameters (constexpr, defaulted, set by
//! `@triton.heuristics`), its `@triton.autotune` list, and the options each backend of the
//! worker's Triton accepts. Cached under the one key scheme, like compiles.

use std::path::Path;

use super::cache::{Lookup, ResultCache};
use super::pool::Pool;
use super::process::WorkerFault;
use super::protocol::ReplyError;
use crate::plan::{KeyContext, key};
use crate::vocab::KernelInterface;
use crate::vocab::Request;

/// Why a kernel could not be inspected.
#[derive(Debug)]
pub enum InspectError {
    /// No worker answered.
    Worker(WorkerFault),
    /// The worker could not load the kernel (it does not import, or is not a Triton kernel).
    Kernel(Box<ReplyError>),
}

/// Inspect `function` in `kernel_file` on `pool`, or take the cached answer.
pub fn inspect(
    kernel_file: &Path,
    function: &str,
    source: &crate::vocab::KernelSource,
    pool: &Pool,
    use_cache: bool,
    cache_dir: &Path,
    context: &KeyContext,
) -> Result<KernelInterface, InspectError> {
    let request = Request::Inspect {
        kernel_file: kernel_file.to_path_buf(),
        function: function.to_owned(),
        source: source.clone(),
    };
    let cache = ResultCache::new(cache_dir);
    let key = key(&request, context);
    if use_cache && let Lookup::Hit(interface) = cache.get::<KernelInterface>(&key) {
        return Ok(interface);
    }
    pool.warm_up().map_err(InspectError::Worker)?;
    let reply = pool.request(&request).map_err(InspectError::Worker)?;
    if let Some(error) = reply.error {
        return Err(InspectError::Kernel(Box::new(error)));
    }
    let params = reply.body.params.ok_or_else(|| {
        InspectError::Worker(WorkerFault::Garbled {
            line: "an inspect reply without params".to_owned(),
            stderr: String::new(),
        })
    })?;
    let interface = KernelInterface {
        params,
        autotune: reply.body.autotune_configs,
        backend_options: reply.body.backend_options,
        loaded: reply.body.loaded,
    };
    if use_cache {
        let _ = cache.put(&key, &interface);
    }
    Ok(interface)
}
