//! A block's threads are a launch limit like shared memory: `num_warps` x the arch's warp size
//! against the threads a block may have on the device, judged on every probe and capture. A
//! config over it is `over-thread-limit` (Triton raises OutOfResources "threads" on NVIDIA and
//! AMD alike), its fix lowers `num_warps`, and an autotuner skips it.

use serde_json::Value;

use super::capture::{capture, fixture, launches, repo};
use super::{json_of, probe, scratch};

/// `(num_warps, device) -> (verdict, threads, limit)` of a probe report.
fn thread_cells(report: &Value) -> Vec<(u64, String, String, u64, u64)> {
    let mut cells = Vec::new();
    for result in report["results"].as_array().unwrap() {
        let warps = result["config"]["num_warps"].as_u64().unwrap();
        for v in result["verdicts"].as_array().unwrap() {
            cells.push((
                warps,
                v["device"].as_str().unwrap().to_owned(),
                v["verdict"].as_str().unwrap().to_owned(),
                v["threads_per_block"].as_u64().unwrap(),
                v["max_threads_per_block"].as_u64().unwrap(),
            ));
        }
    }
    cells.sort();
    cells
}

#[test]
fn a_block_of_2048_threads_is_over_on_amd_and_nvidia_and_1024_fits() {
    let spec = repo().join("examples/threads/spec.toml");
    let spec = spec.to_str().unwrap();
    let cache = scratch("threads-probe");
    let run = probe(spec, &cache, &["--json", "-"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = json_of(&run);
    let over = |warps: u64, device: &str, threads: u64| {
        (
            warps,
            device.to_owned(),
            "over-thread-limit".to_owned(),
            threads,
            1024,
        )
    };
    let fits = |warps: u64, device: &str, threads: u64| {
        (warps, device.to_owned(), "fits".to_owned(), threads, 1024)
    };
    assert_eq!(
        thread_cells(&report),
        vec![
            fits(16, "h100", 512),
            fits(16, "mi300x", 1024),
            fits(16, "mi355x", 1024),
            fits(32, "h100", 1024),
            over(32, "mi300x", 2048),
            over(32, "mi355x", 2048),
            over(64, "h100", 2048),
            over(64, "mi300x", 4096),
            over(64, "mi355x", 4096),
        ]
    );
    // The recommendation lowers the warps where the baseline's 32 are too many.
    for r in report["recommendations"].as_array().unwrap() {
        let expected = if r["device"] == "h100" { 32 } else { 16 };
        assert_eq!(r["config"]["num_warps"], expected, "{r}");
    }
    // The gate judges it without `--resources full`, and names the threads.
    let run = probe(spec, &cache, &["--fail-on", "over-thread-limit"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("num_warps=32 on mi355x (2048 threads, max 1024)"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("THREADS 2,048>1,024"), "{}", run.stdout);
}

#[test]
fn a_launch_over_the_thread_limit_crashes_and_its_fix_lowers_num_warps() {
    let (run, report) = capture(&fixture("warps.py"), "mi300x,h100", &[], &[]);
    assert_eq!(run.code, 1, "mi300x crashes: {}", run.stderr);
    let verdict = |device: &str, kernel: &str| {
        launches(&report, device, kernel)[0]["verdict"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // A fixed num_warps=32: 2,048 threads on a wavefront-64 part.
    assert_eq!(verdict("mi300x", "row_sum"), "over-thread-limit");
    assert_eq!(verdict("h100", "row_sum"), "fits");
    let fix = &launches(&report, "mi300x", "row_sum")[0]["fix"];
    assert_eq!(fix["pass"], "pass num_warps=16 at the launch", "{fix}");
    assert_eq!(fix["fits"][0]["changes"][0], "num_warps 32 -> 16", "{fix}");
    // Autotuned: Triton raises OutOfResources "threads" for the wide config, on AMD as on
    // NVIDIA, and the autotuner skips it; where none is left the engine crashes, and the fix
    // lowers the smallest config's warps.
    assert_eq!(verdict("mi300x", "row_sum_tuned"), "some-skipped");
    assert_eq!(verdict("h100", "row_sum_tuned"), "fits");
    assert_eq!(verdict("mi300x", "row_sum_wide"), "none-fits");
    assert_eq!(verdict("h100", "row_sum_wide"), "some-skipped");
    let fix = &launches(&report, "mi300x", "row_sum_wide")[0]["fix"];
    assert_eq!(fix["fits"][0]["changes"][0], "num_warps 32 -> 16", "{fix}");
    assert!(
        fix["pass"]
            .as_str()
            .unwrap()
            .starts_with("add triton.Config("),
        "{fix}"
    );
    assert!(
        run.stdout
            .contains("row_sum        warps.py:46  BLOCK=8192 num_warps=32"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_capability_gate_for_sm121_alone_leaves_an_rtx_5090_over() {
    // sglang PR #37803: stages lowered only for (12, 1).
    let (run, report) = capture(&fixture("sm121_gate.py"), "rtx-5090,gb10", &[], &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let launch = |device: &str| launches(&report, device, "grouped_gemm")[0].clone();
    let compile = |device: &str| {
        let target = super::capture::target(&report, device);
        let at = usize::try_from(launch(device)["compiles"][0].as_u64().unwrap()).unwrap();
        target["compiles"][at].clone()
    };
    assert_eq!(launch("rtx-5090")["verdict"], "over");
    assert_eq!(compile("rtx-5090")["options"]["num_stages"], 4);
    assert_eq!(compile("rtx-5090")["result"]["shared_bytes"], 110_592);
    assert_eq!(
        launch("rtx-5090")["fix"]["pass"],
        "pass num_stages=3 at the launch"
    );
    assert_eq!(launch("gb10")["verdict"], "fits");
    assert_eq!(compile("gb10")["options"]["num_stages"], 3);
    assert_eq!(compile("gb10")["result"]["shared_bytes"], 73_728);
}

/// pytorch PR #178023: Inductor's persistent-reduction autotune under max-autotune doubles a
/// mix-order reduction's warps to 32 (torch 2.11 as shipped); on MI355X that block has 2,048
/// threads, on an H100 1,024.
#[test]
#[ignore = "exhaustive: torch.compile with max-autotune on two targets (about a minute)"]
fn inductor_s_32_warp_persistent_reduction_is_over_the_thread_limit_on_mi355x() {
    let script = repo().join("examples/threads/inductor_layer_norm.py");
    let (run, report) = capture(&script, "mi355x,h100", &[], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let kernel = "triton_per_fused_native_layer_norm_native_layer_norm_backward_0";
    let widths = |device: &str| -> Vec<(u64, String)> {
        let target = super::capture::target(&report, device);
        let launch = launches(&report, device, kernel)[0];
        launch["compiles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                let c = &target["compiles"][usize::try_from(i.as_u64().unwrap()).unwrap()];
                assert_eq!(c["constexprs"]["RSPLIT_SIZE"], 16, "{c}");
                assert_eq!(c["constexprs"]["XBLOCK"], 1, "{c}");
                let v = &c["result"]["verdicts"][0];
                (
                    c["options"]["num_warps"].as_u64().unwrap(),
                    v["verdict"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let amd = widths("mi355x");
    assert!(
        amd.contains(&(32, "over-thread-limit".to_owned())),
        "{amd:?}"
    );
    assert!(amd.contains(&(16, "fits".to_owned())), "{amd:?}");
    assert!(widths("h100").contains(&(32, "fits".to_owned())));
    // Inductor drops a config whose launcher raises OutOfResources: the list goes on without it.
    let launch = launches(&report, "mi355x", kernel)[0];
    assert_eq!(launch["verdict"], "some-skipped");
    assert_eq!(launches(&report, "h100", kernel)[0]["verdict"], "fits");
}

#[test]
fn an_engine_file_entry_over_the_thread_limit_is_fixed_in_the_emitted_file() {
    // vLLM's fused-MoE example with an AMD file whose batch-1 entry asks 32 warps: 2,048
    // threads on MI300X. `--emit-files` patches that entry to 16 warps and keeps the others.
    let folder = scratch("threads-emit");
    let moe = repo().join("examples/moe");
    for file in ["spec.toml", "fused_moe.py"] {
        std::fs::copy(moe.join(file), folder.join(file)).unwrap();
    }
    let configs = folder.join("configs");
    std::fs::create_dir_all(&configs).unwrap();
    let name = "E=8,N=14336,device_name=AMD_Instinct_MI300X.json";
    let entry = |warps: u64, m: u64| {
        serde_json::json!({"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128,
            "GROUP_SIZE_M": 1, "num_warps": warps, "num_stages": 2})
    };
    let shipped = serde_json::json!({"1": entry(32, 16), "16": entry(8, 16)});
    std::fs::write(
        configs.join(name),
        serde_json::to_string_pretty(&shipped).unwrap(),
    )
    .unwrap();
    let out = folder.join("out");
    let spec = folder.join("spec.toml");
    let run = probe(
        spec.to_str().unwrap(),
        &folder.join("cache"),
        &["--targets", "mi300x", "--emit-files", out.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("#0 THREADS 2,048"), "{}", run.stdout);
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join(name)).unwrap()).unwrap();
    assert_eq!(written["1"]["num_warps"], 16, "{written}");
    assert_eq!(written["1"]["num_stages"], 2, "{written}");
    assert_eq!(written["16"], shipped["16"]);
    let summary = std::fs::read_to_string(out.join("SUMMARY.md")).unwrap();
    assert!(summary.contains("num_warps 32 -&gt; 16"), "{summary}");
}
