//! Prediction against the driver (`tilefit verify`): tilefit's verdict for the local device
//! beside what the driver accepted and launched, and what tilefit read from a binary beside the
//! driver's attributes. The run only gathers the facts; what agrees is decided here.

use crate::cuda::DriverVerdict;
use crate::model::verdict::{DeviceVerdict, VerdictCode};
use crate::model::verify::{Check, LaunchOutcome, ResourceChecks};
use crate::resources::KernelResources;
use crate::vocab::CompileStatus;

/// tilefit's shared-memory verdict for a compiled kernel of `shared_bytes` on a device of
/// `budget` bytes per block: the probe's own rule (`judge::verdict::judge`).
pub fn predicted(shared_bytes: u64, budget: u64) -> VerdictCode {
    super::verdict::judge(CompileStatus::Ok, Some(shared_bytes), "", budget).verdict
}

/// Whether the prediction agrees with the driver: it accepted exactly what was predicted to
/// fit, a real launch (where there was one) ran exactly then, and every resource check agrees.
pub fn agrees(
    predicted: VerdictCode,
    driver: &DriverVerdict,
    launch: Option<&LaunchOutcome>,
    resources: Option<&ResourceChecks>,
) -> bool {
    let fits = predicted == VerdictCode::Fits;
    fits == driver.accepted
        && launch.is_none_or(|l| l.launched == fits)
        && resources.is_none_or(|r| r.agrees)
}

/// What tilefit read from a binary (registers, local memory) and modelled for the device
/// (`predicted`: the thread limit, blocks per SM) for a launch of `threads` per block, each
/// beside the driver's own reading.
pub fn resource_checks(
    resources: &KernelResources,
    predicted: Option<&DeviceVerdict>,
    threads: u32,
    driver: &DriverVerdict,
) -> ResourceChecks {
    let model_threads = predicted.and_then(|v| v.max_threads_per_block);
    let registers = Check::of(
        Some(i64::from(resources.registers_per_thread)),
        driver.registers.map(i64::from),
    );
    let local = Check::of(
        i64::try_from(resources.local_bytes_per_thread).ok(),
        driver.local_bytes.map(i64::from),
    );
    let max_threads = Check::of(
        model_threads.map(i64::from),
        driver.max_threads_per_block.map(i64::from),
    );
    let threads = i64::from(threads);
    let threads_fit = Check::of(
        model_threads.map(|t| i64::from(threads <= i64::from(t))),
        driver
            .max_threads_per_block
            .map(|t| i64::from(threads <= i64::from(t))),
    );
    let blocks = Check::of(
        predicted.and_then(|v| v.blocks_per_sm).map(i64::from),
        Some(driver.blocks_per_sm.map_or(0, i64::from)),
    );
    let agrees = [&registers, &local, &max_threads, &threads_fit, &blocks]
        .iter()
        .all(|c| c.agrees);
    ResourceChecks {
        registers_per_thread: registers,
        local_bytes_per_thread: local,
        max_threads_per_block: max_threads,
        threads_fit,
        blocks_per_sm: blocks,
        spill_bytes: resources.spill_bytes,
        agrees,
    }
}
