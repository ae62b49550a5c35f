//! Judging a shipped package's kernels (`input::aoti`): nothing is recompiled. On every device
//! whose driver loads one of the binary's images, the launch asks for the bytes and warps its
//! host code fixed, so each is judged as a compile of those bytes would be (`judge_on`: shared
//! memory against the opt-in budget, then threads against the block limit); on an arch none of
//! the images reaches, the kernel cannot load at all (`unsupported-on-target`, naming the
//! images). The results join the replay's, one per (kernel, arch), after the cached kernels'.

use crate::compile::{CompileOutcome, ErrorKind};
use crate::device::emulated::capability_of;

use crate::device::{DeviceTable, Target, TargetDevice};
use crate::input::aoti::{Package, ShippedKernel};
use crate::judge::replay::result_of;
use crate::model::replay::{KernelRef, KernelVariant, ReplayResult, Shipped};
use crate::vocab::CompileStatus;

/// What `replayed_with` says of a shipped kernel's results.
pub const AS_SHIPPED: &str = "as shipped";

/// The report's variants for the packages' kernels, numbered from `first`, and their results.
pub fn judge_packages(
    packages: &[Package],
    first: usize,
    archs: &[Target],
    targets: &[TargetDevice],
) -> (Vec<KernelVariant>, Vec<ReplayResult>) {
    let mut variants = Vec::new();
    let mut results = Vec::new();
    for package in packages {
        for kernel in &package.kernels {
            let variant = variant_of(package, kernel);
            let reference = KernelRef {
                index: first + variants.len(),
                id: variant.id.clone(),
                name: variant.name.clone(),
                source: variant.source.clone(),
            };
            for target in archs {
                results.push(result_on(
                    kernel,
                    &variant,
                    reference.clone(),
                    target,
                    targets,
                ));
            }
            variants.push(variant);
        }
    }
    (variants, results)
}

fn variant_of(package: &Package, kernel: &ShippedKernel) -> KernelVariant {
    let package_name = package.path.display().to_string();
    // What the kernel is, not where the package lies: a moved or unzipped package keeps its
    // ids, so a baseline still matches.
    let id = crate::digest::sha256(
        format!(
            "{}\0{}\0{}\0{}",
            kernel.name, kernel.binary_digest, kernel.shared_bytes, kernel.num_warps
        )
        .as_bytes(),
    );
    KernelVariant {
        id: id.chars().take(8).collect(),
        name: kernel.name.clone(),
        source: Some(format!(
            "{}:{}",
            kernel.wrapper.rsplit('/').next().unwrap_or(&kernel.wrapper),
            kernel.line
        )),
        triton_version: None,
        original_arch: kernel
            .compiled_for
            .clone()
            .unwrap_or_else(|| "unknown".to_owned()),
        original_shared_bytes: Some(kernel.shared_bytes),
        options: kernel.config.clone(),
        args: Vec::new(),
        tile_ranges: Vec::new(),
        entry: package_name.clone(),
        copies: 1,
        shipped: Some(Shipped {
            package: package_name,
            wrapper: kernel.wrapper.clone(),
            line: kernel.line,
            binary: kernel.binary.clone(),
            images: kernel.images.iter().map(|i| i.label()).collect(),
        }),
    }
}

fn result_on(
    kernel: &ShippedKernel,
    variant: &KernelVariant,
    reference: KernelRef,
    target: &Target,
    targets: &[TargetDevice],
) -> ReplayResult {
    let loads = DeviceTable::builtin()
        .ok()
        .and_then(|table| capability_of(table, &target.arch))
        .is_some_and(|(major, minor)| kernel.images.iter().any(|i| i.runs_on(major, minor)));
    let outcome = if loads {
        CompileOutcome::shipped(kernel.shared_bytes, kernel.num_warps)
    } else {
        let images: Vec<String> = kernel.images.iter().map(|i| i.label()).collect();
        CompileOutcome::failure(
            CompileStatus::UnsupportedOnTarget,
            ErrorKind::UnsupportedOnTarget,
            &format!(
                "no image of the binary loads on {} (it holds {})",
                target.arch,
                images.join(", ")
            ),
        )
    };
    let mut outcome = outcome;
    outcome.kernel_name = Some(kernel.name.clone());
    result_of(
        variant,
        reference,
        target,
        targets,
        outcome,
        (false, AS_SHIPPED.to_owned()),
    )
}
