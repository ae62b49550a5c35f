//! Judging a replay: the report's view of each distinct cached kernel (its variants, with the tile
//! ranges its IR makes), and one result per (kernel, arch) with a verdict per device of that arch.

use std::collections::BTreeMap;

use crate::compile::CompileOutcome;
use crate::device::{Target, TargetDevice};
use crate::input::cache_index::CacheIndex;
use crate::judge::probe::judge_on;
use crate::model::replay::{KernelRef, KernelVariant, ReplayResult};

/// (kernel, arch) slot -> its outcome, whether it came from the cache, and the Triton that
/// replayed it.
pub type Outcomes = BTreeMap<(usize, usize), (CompileOutcome, bool, String)>;

/// One result per (kernel, arch), with a verdict per device of that arch.
pub fn judge(
    kernels: &[KernelVariant],
    archs: &[Target],
    targets: &[TargetDevice],
    outcomes: Outcomes,
) -> Vec<ReplayResult> {
    outcomes
        .into_iter()
        .map(|((kernel, arch_index), (outcome, cached, replayed_with))| {
            let variant = &kernels[kernel];
            let reference = KernelRef {
                index: kernel,
                id: variant.id.clone(),
                name: variant.name.clone(),
                source: variant.source.clone(),
            };
            result_of(
                variant,
                reference,
                &archs[arch_index],
                targets,
                outcome,
                (cached, replayed_with),
            )
        })
        .collect()
}

/// One (kernel, arch) result: the outcome with a verdict per device of that arch. `provenance`:
/// whether it came from the cache, and what replayed it.
pub(crate) fn result_of(
    variant: &KernelVariant,
    reference: KernelRef,
    target: &Target,
    targets: &[TargetDevice],
    outcome: CompileOutcome,
    provenance: (bool, String),
) -> ReplayResult {
    let verdicts = targets
        .iter()
        .filter(|d| d.arch == target.arch)
        .map(|d| judge_on(d, &outcome))
        .collect();
    let (cached, replayed_with) = provenance;
    ReplayResult {
        kernel: reference,
        config: variant.options.clone(),
        arch: target.arch.clone(),
        backend: target.backend,
        status: outcome.status,
        shared_bytes: outcome.shared,
        original_arch: variant.original_arch.clone(),
        original_shared_bytes: variant.original_shared_bytes,
        error: outcome.error,
        cached,
        replayed_with,
        binary: outcome.binary,
        kernel_name: outcome.kernel_name,
        resources: outcome.resources,
        resources_error: outcome.resources_error,
        verdicts,
    }
}

static MAKE_RANGE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"tt\.make_range \{end = (\d+) : i32, start = (\d+) : i32\}")
        .expect("literal")
});

/// Distinct `tt.make_range` lengths, ascending.
fn tile_ranges(ir: &str) -> Vec<u64> {
    let mut ranges: Vec<u64> = MAKE_RANGE
        .captures_iter(ir)
        .filter_map(|c| {
            Some(
                c[1].parse::<u64>()
                    .ok()?
                    .saturating_sub(c[2].parse::<u64>().ok()?),
            )
        })
        .collect();
    ranges.sort_unstable();
    ranges.dedup();
    ranges
}

/// The short id of a variant.
fn short_id(hash: &str) -> String {
    hash.chars().take(8).collect()
}

/// The report's view of each distinct kernel.
pub fn variants(index: &CacheIndex) -> Vec<KernelVariant> {
    index
        .kernels
        .iter()
        .zip(&index.copies)
        .map(|(k, copies)| KernelVariant {
            id: short_id(&k.hash),
            name: k.name.clone(),
            source: k.source.clone(),
            triton_version: k.triton_version.clone(),
            original_arch: k.arch.clone(),
            original_shared_bytes: k.shared,
            options: k.options.clone(),
            args: k.args.clone(),
            tile_ranges: std::fs::read_to_string(&k.ir)
                .map(|ir| tile_ranges(&ir))
                .unwrap_or_default(),
            entry: k.entry.display().to_string(),
            copies: *copies,
            shipped: None,
        })
        .collect()
}
