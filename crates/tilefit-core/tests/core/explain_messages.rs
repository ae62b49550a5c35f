//! `explain` on real messages, NVIDIA and AMD: the ones quoted in the article and in the
//! reference (docs/reference/devices.md), and the CUDA launch errors people paste.

use tilefit_core::device::{Backend, DeviceTable};
use tilefit_core::explain::{ExplainError, Explanation, Finding, Reporter, explain, parse_message};

fn run(message: &str) -> Explanation {
    explain(message, DeviceTable::builtin().unwrap()).unwrap_or_else(|e| panic!("{message}: {e}"))
}

fn archs(rows: &[tilefit_core::explain::ArchBudget]) -> Vec<&str> {
    rows.iter().map(|r| r.arch.as_str()).collect()
}

#[test]
fn the_article_s_sm120_message() {
    let e = run(
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 102400, Hardware limit: 101376. Reducing block sizes or `num_stages` may help.",
    );
    assert_eq!(
        e.finding,
        Finding::SharedMemory {
            required: 102_400,
            limit: 101_376,
            reporter: Reporter::Triton,
            kernel: None
        }
    );
    assert_eq!(
        archs(&e.limit_matches),
        ["sm_86", "sm_89", "sm_120", "sm_121"]
    );
    let sm120 = &e.limit_matches[2];
    assert_eq!(sm120.margin, -1024, "over by 1,024 bytes");
    assert!(sm120.products.iter().any(|p| p.contains("RTX PRO 6000")));
    assert!(sm120.products.iter().any(|p| p.contains("RTX 5090")));
    assert!(
        e.limit_matches[3]
            .products
            .iter()
            .any(|p| p.contains("GB10"))
    );
    assert!(e.limit_matches[1].products.iter().any(|p| p == "L40S"));
    assert!(e.limit_matches[0].products.iter().any(|p| p == "A10"));
    // The per-SM vs per-block gap is named, and the exact-per-SM coincidence is pointed out.
    assert!(
        e.notes
            .iter()
            .any(|n| n.contains("per-SM 102,400") && n.contains("1,024 bytes")),
        "{:?}",
        e.notes
    );
    assert!(
        e.notes
            .iter()
            .any(|n| n.contains("exactly the full per-SM")),
        "{:?}",
        e.notes
    );
    // Datacenter parts fit it; the desk parts do not.
    assert!(archs(&e.fits).contains(&"sm_90"));
    assert!(archs(&e.fits).contains(&"sm_100"));
    assert!(archs(&e.does_not_fit).contains(&"sm_120"));
    assert!(
        e.advice
            .iter()
            .any(|a| a.code == "fewer-stages" && a.text.contains("1,024 bytes"))
    );
    assert!(
        e.next_command
            .as_deref()
            .unwrap()
            .contains("--targets sm_86,sm_89,sm_120,sm_121")
    );
}

#[test]
fn the_h200_measurement_message() {
    // docs/reference/devices.md §0: verified on H200 with Triton 3.6.0.
    let e = run("out of resource: shared memory, Required: 524288, Hardware limit: 232448");
    assert_eq!(
        archs(&e.limit_matches),
        ["sm_90", "sm_100", "sm_103", "sm_110"]
    );
    assert!(e.fits.is_empty(), "nothing holds 512 KiB per block");
    assert!(e.notes.iter().any(|n| n.contains("more than the whole SM")));
}

#[test]
fn the_gfx1201_message_lists_amd_and_turing() {
    // docs/reference/devices.md §3.1: Triton on gfx1201.
    let e = run(
        "OutOfResources: out of resource: shared memory, Required: 131072, Hardware limit: 65536",
    );
    assert_eq!(e.backend, None, "the text alone does not say which vendor");
    assert_eq!(
        archs(&e.limit_matches),
        ["sm_75", "gfx90a", "gfx942", "gfx1100", "gfx1151", "gfx1201"]
    );
    assert!(archs(&e.fits).contains(&"gfx950"));
}

#[test]
fn a_hip_wording_narrows_to_amd() {
    let e = run(
        "HIP error in gfx942 run: triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 98304, Hardware limit: 65536.",
    );
    assert_eq!(e.backend, Some(Backend::Hip));
    assert_eq!(
        archs(&e.limit_matches),
        ["gfx90a", "gfx942", "gfx1100", "gfx1151", "gfx1201"]
    );
    assert_eq!(archs(&e.fits), ["gfx950"]);
}

#[test]
fn llvm_amdgpu_lds_limit() {
    let e = run(
        "error: <unknown>:0:0: local memory (98304) exceeds limit (65536) in function 'matmul_kernel'",
    );
    assert_eq!(
        e.finding,
        Finding::SharedMemory {
            required: 98_304,
            limit: 65_536,
            reporter: Reporter::LlvmAmdgpu,
            kernel: Some("matmul_kernel".into())
        }
    );
    assert_eq!(e.backend, Some(Backend::Hip));
    assert!(e.limit_matches.iter().all(|m| m.backend == Backend::Hip));
}

#[test]
fn triton_threads_message_reads_the_register_count_backwards() {
    let e = run(
        "triton.runtime.errors.OutOfResources: out of resource: threads, Required: 1024, Hardware limit: 768. Reducing block sizes or `num_stages` may help.",
    );
    assert_eq!(
        e.finding,
        Finding::Threads {
            required: 1024,
            limit: 768
        }
    );
    // The H200 measurement: 80 registers per thread -> 768 threads.
    let note = e
        .notes
        .iter()
        .find(|n| n.contains("registers per thread ("))
        .expect("register estimate");
    let range = note
        .split("about ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let (lo, hi) = range.split_once('-').unwrap();
    let (lo, hi): (u32, u32) = (lo.parse().unwrap(), hi.parse().unwrap());
    assert!(lo <= 80 && 80 <= hi, "{range}");
    assert!(
        e.advice
            .iter()
            .any(|a| a.code == "fewer-warps" && a.text.contains("num_warps=16"))
    );
    assert!(
        e.advice
            .iter()
            .any(|a| a.code == "cap-registers" && a.text.contains("maxnreg=64"))
    );
}

#[test]
fn tensor_memory_columns_are_not_bytes() {
    let e = run(
        "out of resource: tensor memory, Required: 768, Hardware limit: 512. Reducing block sizes or `num_stages` may help.",
    );
    assert_eq!(
        e.finding,
        Finding::TensorMemory {
            required: 768,
            limit: 512
        }
    );
    assert!(e.notes[0].contains("columns, not bytes"));
}

#[test]
fn ptxas_static_shared_memory_in_hex() {
    // docs/reference/devices.md §1.3, CUDA 13.0 ptxas.
    let e = run(
        "ptxas error   : Entry function 'big' uses too much shared data (0xc010 bytes, 0xc000 max)",
    );
    assert_eq!(
        e.finding,
        Finding::StaticSharedMemory {
            required: 49_168,
            limit: 49_152,
            kernel: Some("big".into())
        }
    );
    assert_eq!(
        e.limit_matches.len(),
        13,
        "every NVIDIA arch has the 48 KiB static limit"
    );
    assert!(
        e.advice
            .iter()
            .any(|a| a.code == "use-dynamic-shared-memory")
    );
}

#[test]
fn cuda_launch_out_of_resources() {
    for message in [
        "RuntimeError: CUDA error: too many resources requested for launch",
        "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
        "cudaErrorLaunchOutOfResources: too many resources requested for launch",
    ] {
        let e = run(message);
        assert_eq!(e.finding, Finding::LaunchOutOfResources, "{message}");
        assert!(
            e.notes.iter().any(|n| n.contains("1024 threads: 64")),
            "{:?}",
            e.notes
        );
    }
}

#[test]
fn rejected_dynamic_shared_memory_attribute() {
    // The H200 measurement: 232449 is rejected with CUDA_ERROR_INVALID_VALUE.
    let e = run(
        "cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 232449) failed with CUDA_ERROR_INVALID_VALUE",
    );
    assert_eq!(
        e.finding,
        Finding::DynamicSharedMemoryRejected {
            requested: Some(232_449)
        }
    );
    assert!(e.fits.is_empty());
    assert_eq!(e.does_not_fit[0].margin, -1);

    let e = run(
        "cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200000): invalid argument",
    );
    assert_eq!(
        e.finding,
        Finding::DynamicSharedMemoryRejected {
            requested: Some(200_000)
        }
    );
    assert_eq!(archs(&e.fits), ["sm_90", "sm_100", "sm_103", "sm_110"]);

    let e = run(
        "RuntimeError: Triton Error [CUDA]: invalid argument while setting cudaFuncAttributeMaxDynamicSharedMemorySize",
    );
    assert_eq!(
        e.finding,
        Finding::DynamicSharedMemoryRejected { requested: None }
    );
}

#[test]
fn numbers_with_separators_are_read() {
    assert_eq!(
        parse_message("out of resource: shared memory, Required: 102,400, Hardware limit: 101,376")
            .unwrap(),
        Finding::SharedMemory {
            required: 102_400,
            limit: 101_376,
            reporter: Reporter::Triton,
            kernel: None
        }
    );
}

#[test]
fn a_limit_no_device_has_says_so() {
    let e = run("out of resource: shared memory, Required: 150000, Hardware limit: 140000");
    assert!(e.limit_matches.is_empty());
    assert!(
        e.notes
            .iter()
            .any(|n| n.contains("No device in tilefit's table"))
    );
    let e = run("out of resource: shared memory, Required: 110000, Hardware limit: 102400");
    assert!(
        e.notes
            .iter()
            .any(|n| n.contains("per-SM capacity of sm_86, sm_89, sm_120, sm_121")),
        "{:?}",
        e.notes
    );
}

#[test]
fn unrecognised_and_empty_messages_are_errors_not_guesses() {
    let table = DeviceTable::builtin().unwrap();
    assert_eq!(
        explain("segmentation fault", table).unwrap_err(),
        ExplainError::Unrecognised
    );
    assert_eq!(
        explain("out of memory: 101376", table).unwrap_err(),
        ExplainError::Unrecognised
    );
    assert_eq!(explain("   \n", table).unwrap_err(), ExplainError::Empty);
    assert!(
        ExplainError::Unrecognised
            .hint()
            .contains("Required: 102400")
    );
}

/// The README's and the issues' short form, with the exception's class name run together
/// (`OutOfResources: shared memory, ...`), reads as Triton's own message does.
#[test]
fn the_class_name_form_reads_as_the_message_does() {
    let short =
        parse_message("OutOfResources: shared memory, Required: 102400, Hardware limit: 101376")
            .unwrap();
    let long = parse_message(
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 102400, Hardware limit: 101376",
    )
    .unwrap();
    assert_eq!(short, long);
    assert!(matches!(
        short,
        Finding::SharedMemory {
            required: 102_400,
            limit: 101_376,
            ..
        }
    ));
}
