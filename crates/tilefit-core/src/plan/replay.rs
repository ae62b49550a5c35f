//! Planning a replay: one recompile job per (cached kernel, arch) under the one key scheme (the IR
//! file's digest stands for the source), with the options that travel to the target's backend.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::device::Target;
use crate::input::cache_index::{CacheIndex, CachedKernel, PORTABLE_OPTIONS};
use crate::plan::jobs::Depth;
use crate::plan::{Job, KeyContext};
use crate::vocab::Request;

/// One recompile per (member kernel, arch): its slot and its job under the one key scheme (the
/// IR file's digest stands for the source in `context`).
pub fn recompiles(
    index: &CacheIndex,
    members: &[usize],
    archs: &[Target],
    context: &KeyContext,
    depth: Depth,
) -> (Vec<(usize, usize)>, Vec<Job>) {
    let mut slots = Vec::new();
    let mut jobs = Vec::new();
    for &kernel in members {
        let cached_kernel = &index.kernels[kernel];
        let context = KeyContext {
            source: crate::digest::sha256(&std::fs::read(&cached_kernel.ir).unwrap_or_default()),
            ..context.clone()
        };
        for (arch_index, target) in archs.iter().enumerate() {
            let request = Request::CompileIr {
                ir_file: cached_kernel.ir.clone(),
                options: replay_options(cached_kernel, target),
                target: target.clone(),
                full: depth.full || depth.resources,
                resources: depth.resources,
                binary_dir: None,
            };
            slots.push((kernel, arch_index));
            jobs.push(Job {
                key: crate::plan::key(&request, &context),
                label: format!("{} {}", target.arch, cached_kernel.name),
                cost: 1,
                request,
            });
        }
    }
    (slots, jobs)
}

/// The options a cached kernel is recompiled with on `target`: the portable ones always, the
/// backend-specific ones only on its own backend.
fn replay_options(kernel: &CachedKernel, target: &Target) -> BTreeMap<String, Value> {
    kernel
        .options
        .iter()
        .filter(|(key, _)| {
            PORTABLE_OPTIONS.contains(&key.as_str()) || target.backend == kernel.backend
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}
