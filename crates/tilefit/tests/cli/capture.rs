//! `tilefit capture` and `pytest --tilefit-emulate`: scripts and a suite written here run under
//! the emulated device with the real torch (FakeTensor) and the real Triton compiler, on this
//! machine with no GPU.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Run, emulate_python, scratch, tilefit_with};

pub(super) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/capture")
        .join(name)
}

pub(super) fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .unwrap()
}

/// `tilefit capture SCRIPT --targets T --json FILE [extra] -- [script args]` with the emulation
/// Python, and the JSON report.
pub(super) fn capture(
    script: &Path,
    targets: &str,
    extra: &[&str],
    script_args: &[&str],
) -> (Run, Value) {
    let cache = scratch(&format!(
        "capture-{}-{}",
        script.file_stem().unwrap().to_string_lossy(),
        targets.replace(',', "-")
    ));
    let json = cache.join("report.json");
    let python = emulate_python().to_str().unwrap();
    let mut args = vec![
        "capture",
        script.to_str().unwrap(),
        "--targets",
        targets,
        "--python",
        python,
        "--jobs",
        "2",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend(extra);
    args.push("--");
    args.extend(script_args);
    let run = tilefit_with(&args, None, &[("TILEFIT_CACHE_DIR", &cache)]);
    let Ok(text) = std::fs::read_to_string(&json) else {
        panic!("no report: {}\n{}", run.stderr, run.stdout)
    };
    let report = serde_json::from_str(&text).unwrap();
    (run, report)
}

pub(super) fn target<'a>(report: &'a Value, device: &str) -> &'a Value {
    report["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["device"]["device"] == device)
        .unwrap_or_else(|| panic!("no {device} in {report}"))
}

pub(super) fn launches<'a>(report: &'a Value, device: &str, kernel: &str) -> Vec<&'a Value> {
    target(report, device)["launches"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["kernel"]["function"] == kernel)
        .collect()
}

/// The compiles a launch makes on `device`.
fn compiles<'a>(report: &'a Value, device: &str, launch: &Value) -> Vec<&'a Value> {
    let t = target(report, device);
    launch["compiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &t["compiles"][usize::try_from(i.as_u64().unwrap()).unwrap()])
        .collect()
}

#[test]
fn the_emulated_device_answers_from_the_table_per_backend() {
    let out = scratch("capture-props-out");
    let (run, report) = capture(
        &fixture("props.py"),
        "rtx-pro-6000,mi300x,sm_90",
        // It writes what it saw into `out`: allowed, as a capture's writes must be.
        &["--allow-empty", "--allow-writes", out.to_str().unwrap()],
        &[out.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let read = |key: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(out.join(format!("{key}.json"))).unwrap())
            .unwrap()
    };
    let rtx = read("rtx-pro-6000");
    assert_eq!(rtx["is_available"], true);
    assert_eq!(rtx["capability"], serde_json::json!([12, 0]));
    assert_eq!(
        rtx["device_name"],
        "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"
    );
    assert_eq!(rtx["props"]["shared_memory_per_block_optin"], 101_376);
    assert_eq!(rtx["props"]["shared_memory_per_multiprocessor"], 102_400);
    assert_eq!(rtx["props"]["multi_processor_count"], 188);
    assert_eq!(rtx["props"]["warp_size"], 32);
    assert_eq!(rtx["triton_props"]["max_shared_mem"], 101_376);
    assert_eq!(rtx["triton_props"]["warpSize"], 32);
    assert_eq!(rtx["target"], serde_json::json!(["cuda", 120, 32]));
    assert_eq!(rtx["version_hip"], Value::Null);
    assert_eq!(rtx["gcnArchName"], Value::Null);
    // A value the table lacks is the emulation's error naming it, never a number.
    let l2 = rtx["props"]["L2_cache_size"].as_str().unwrap();
    assert!(
        l2.starts_with("EmulationGap") && l2.contains("L2 cache size"),
        "{l2}"
    );
    // Tensors on "cuda": shapes, strides, views and fp8 dtypes, no storage.
    assert_eq!(rtx["tensor"]["device"], "cuda:0");
    assert_eq!(rtx["tensor"]["is_cuda"], true);
    assert_eq!(rtx["tensor"]["view_stride"], serde_json::json!([128, 1]));
    assert_eq!(rtx["tensor"]["view_offset"], 144);

    let mi = read("mi300x");
    assert_eq!(mi["capability"], serde_json::json!([9, 4]));
    assert_eq!(mi["device_name"], "AMD Instinct MI300X");
    assert_eq!(mi["gcnArchName"], "gfx942");
    assert_eq!(mi["props"]["warp_size"], 64);
    assert_eq!(mi["props"]["shared_memory_per_block_optin"], 65_536);
    assert_eq!(mi["triton_props"]["max_shared_mem"], 65_536);
    assert_eq!(mi["target"], serde_json::json!(["hip", "gfx942", 64]));
    assert_eq!(mi["version_cuda"], Value::Null);
    assert!(mi["version_hip"].is_string());

    // An arch named alone answers as a named product of that arch, and the report says which.
    let sm90 = read("sm_90");
    assert_eq!(sm90["capability"], serde_json::json!([9, 0]));
    assert_eq!(sm90["device_name"], "NVIDIA H100 80GB HBM3", "{sm90}");
    assert_eq!(sm90["props"]["multi_processor_count"], 132);
    assert_eq!(sm90["props"]["shared_memory_per_block_optin"], 232_448);
    let emulated = &target(&report, "sm_90")["emulated"];
    assert_eq!(emulated["name"], "NVIDIA H100 80GB HBM3");
    assert_eq!(emulated["represented_by"], "H100 SXM");
    assert!(
        run.stderr.contains("answering as the H100 SXM"),
        "{}",
        run.stderr
    );
}

#[test]
fn launches_through_jit_heuristics_and_pruned_autotune_are_captured_and_judged() {
    let (run, report) = capture(&fixture("kernels.py"), "rtx-pro-6000,a100", &[], &[]);
    // deep_matmul's list has nothing that fits the desk part: the engine crashes there, and
    // that fails the capture without any --fail-on.
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(report["kind"], "capture");
    // Its fix: the nearest configs that fit there, compiled for it, and what to add.
    let deep = launches(&report, "rtx-pro-6000", "deep_matmul");
    let fix = &deep[0]["fix"];
    assert_eq!(fix["fits"][0]["changes"][0], "num_stages 5 -> 4", "{fix}");
    assert!(
        fix["fits"][0]["shared_bytes"].as_u64().unwrap() <= 101_376,
        "{fix}"
    );
    assert!(
        fix["pass"]
            .as_str()
            .unwrap()
            .starts_with("add triton.Config({"),
        "{fix}"
    );
    assert!(
        run.stdout
            .contains("fix for deep_matmul launched at kernels.py:"),
        "{}",
        run.stdout
    );
    assert!(launches(&report, "a100", "deep_matmul")[0]["fix"].is_null());

    // A module-level capability read saw each emulated device: 256-wide on sm_120, 128 on sm_80.
    let copy_block = |device: &str| {
        let first = launches(&report, device, "copy")[0];
        compiles(&report, device, first)[0]["constexprs"]["BLOCK"].clone()
    };
    assert_eq!(copy_block("rtx-pro-6000"), 256);
    assert_eq!(copy_block("a100"), 128);

    // @triton.heuristics: the value it computes is captured with the launch's own.
    let scaled = launches(&report, "rtx-pro-6000", "scaled")[0];
    let compile = compiles(&report, "rtx-pro-6000", scaled)[0];
    assert_eq!(compile["constexprs"]["EVEN"], true);
    assert_eq!(compile["args"]["scale"]["type"], "fp32");
    assert_eq!(
        compile["args"]["x_ptr"],
        serde_json::json!({"type": "*fp32", "aligned": true})
    );

    // @triton.autotune with early_config_prune: 2 of its 3 configs are tried (BLOCK_K=256 > K
    // goes); on sm_120 one of them is over, so the autotuner skips it.
    let matmul = launches(&report, "rtx-pro-6000", "matmul")[0];
    assert_eq!(
        matmul["autotune"],
        serde_json::json!({"configs": 3, "tried": 2, "keys": ["BLOCK_K", "BLOCK_M", "BLOCK_N"]})
    );
    let tried = compiles(&report, "rtx-pro-6000", matmul);
    assert_eq!(tried.len(), 2);
    assert!(tried.iter().all(|c| c["constexprs"]["BLOCK_K"] != 256));
    assert_eq!(matmul["verdict"], "some-skipped");
    // None of deep_matmul's configs fits sm_120: the engine crashes there; all fit sm_80.
    let deep = launches(&report, "rtx-pro-6000", "deep_matmul")[0];
    assert_eq!(deep["verdict"], "none-fits");
    for c in compiles(&report, "rtx-pro-6000", deep) {
        assert!(
            c["result"]["shared_bytes"].as_u64().unwrap() > 101_376,
            "{c}"
        );
    }
    assert_eq!(
        launches(&report, "a100", "deep_matmul")[0]["verdict"],
        "fits"
    );
    assert!(
        run.stdout.contains("deep_matmul would miss rtx-pro-6000"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("none would fit: the engine crashes here"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("some don't: the autotuner skips them"),
        "{}",
        run.stdout
    );

    // A view one element in is not 16-byte aligned, as a real launch's pointer would not be.
    let last = launches(&report, "rtx-pro-6000", "copy");
    let unaligned = compiles(&report, "rtx-pro-6000", last.last().unwrap())[0];
    assert_eq!(unaligned["args"]["x_ptr"]["aligned"], false);
    assert_eq!(unaligned["args"]["n"]["value"], 4095);
}

#[test]
fn a_stop_the_script_does_not_catch_ends_it_and_fails_the_target() {
    // `torch.unique` of a kernel's output ends the script: the launch after it was never run, so
    // the run is not a pass, although every launch it did make fits.
    let (run, report) = capture(&fixture("stops_early.py"), "h100", &[], &[]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let h100 = target(&report, "h100");
    assert_eq!(launches(&report, "h100", "copy").len(), 1, "{h100}");
    let stopped = h100["stopped"].as_array().unwrap();
    assert_eq!(stopped.len(), 1, "{h100}");
    assert_eq!(stopped[0]["ended"], true);
    let source = std::fs::read_to_string(fixture("stops_early.py")).unwrap();
    let line = source
        .lines()
        .position(|l| l.contains("distinct values"))
        .unwrap()
        + 1;
    let failures = h100["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0]["code"], "stopped-early");
    let message = failures[0]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("stopped at stops_early.py:{line}"))
            && message.contains("never run"),
        "{message}"
    );
}

#[test]
fn the_gate_fails_at_the_launching_line_and_annotates_the_kernel_too() {
    let (run, _) = capture(
        &fixture("kernels.py"),
        "rtx-pro-6000",
        &[
            "--fail-on",
            "baseline,none-fits",
            "--output-format",
            "github",
        ],
        &[],
    );
    assert_eq!(run.code, 1, "{}\n{}", run.stderr, run.stdout);
    let annotations: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("::error"))
        .collect();
    let source = std::fs::read_to_string(fixture("kernels.py")).unwrap();
    let launch_line = source
        .lines()
        .position(|l| l.starts_with("deep_matmul[grid]"))
        .unwrap()
        + 1;
    assert!(
        annotations
            .iter()
            .any(|a| a.contains("kernels.py") && a.contains(&format!("line={launch_line},"))),
        "{annotations:?}"
    );
    let kernel_line = source
        .lines()
        .position(|l| l.starts_with("@triton.autotune("))
        .map(|i| i + 1);
    assert!(annotations.len() >= 2, "{annotations:?}");
    assert!(kernel_line.is_some());
    assert!(
        run.stderr
            .contains("lists leave a device with no config that fits"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_emitted_spec_probes_to_the_captured_bytes() {
    let specs = scratch("capture-emitted-specs");
    let (run, report) = capture(
        &fixture("kernels.py"),
        "rtx-pro-6000",
        &["--emit-spec", specs.to_str().unwrap()],
        &[],
    );
    assert_eq!(run.code, 1, "deep_matmul fits nowhere: {}", run.stderr);
    // Per device, the captured configs exactly: deep_matmul's two differ only in num_stages (a
    // whole sweep of one axis); matmul's two tried configs differ in tiles and stages, so each is a
    // spec of its own (a sweep of their axes would judge configs nobody launched).
    let spec = specs.join("deep_matmul-rtx-pro-6000.toml");
    let text = std::fs::read_to_string(&spec).unwrap();
    assert!(text.contains("num_stages = [5, 6]"), "{text}");
    for name in ["matmul-rtx-pro-6000.toml", "matmul-rtx-pro-6000-2.toml"] {
        let text = std::fs::read_to_string(specs.join(name)).unwrap();
        let sweep = text.split("[sweep]").nth(1).unwrap();
        assert!(!sweep.contains('['), "{name} sweeps: {text}");
    }
    assert!(!specs.join("matmul-rtx-pro-6000-3.toml").exists());
    let cache = scratch("capture-emitted-probe");
    let probed = super::json_of(&super::probe(
        spec.to_str().unwrap(),
        &cache,
        &["--json", "-"],
    ));
    let t = target(&report, "rtx-pro-6000");
    let captured: Vec<u64> = t["compiles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kernel"]["function"] == "deep_matmul")
        .map(|c| c["result"]["shared_bytes"].as_u64().unwrap())
        .collect();
    let mut swept: Vec<u64> = probed["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["shared_bytes"].as_u64().unwrap())
        .collect();
    swept.sort_unstable();
    let mut captured_sorted = captured.clone();
    captured_sorted.sort_unstable();
    assert_eq!(swept, captured_sorted, "{probed}");
}

#[test]
fn a_python_without_torch_is_a_clear_error() {
    let cache = scratch("capture-no-torch");
    let python = super::python().to_str().unwrap();
    let has_torch = std::process::Command::new(python)
        .args(["-c", "import torch"])
        .output()
        .is_ok_and(|o| o.status.success());
    if has_torch {
        return;
    }
    let run = tilefit_with(
        &[
            "capture",
            fixture("kernels.py").to_str().unwrap(),
            "--targets",
            "h100",
            "--python",
            python,
        ],
        None,
        &[("TILEFIT_CACHE_DIR", &cache)],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("cannot import torch"), "{}", run.stderr);
    assert!(run.stderr.contains("pip install torch"), "{}", run.stderr);
}

#[test]
fn pytest_emulates_each_device_and_reports_what_it_would_miss() {
    let cache = scratch("capture-pytest");
    let suite = repo().join("python/emulate_suite");
    let out = std::process::Command::new(emulate_python())
        .args([
            "-m",
            "pytest",
            "-p",
            "tilefit.pytest_plugin",
            "--tilefit-emulate=rtx-pro-6000,a100",
        ])
        .arg(&suite)
        .arg("--tilefit-bin")
        .arg(env!("CARGO_BIN_EXE_tilefit"))
        .env("PYTHONPATH", repo().join("python"))
        .env("TILEFIT_CACHE_DIR", &cache)
        .current_dir(&cache)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("tile_sum would miss rtx-pro-6000"),
        "{stdout}"
    );
    assert!(stdout.contains("131,072 (+29,696)"), "{stdout}");
    assert!(
        stdout.contains("1 captured, checks not checked; 1 captured, passed"),
        "{stdout}"
    );
    assert!(!stdout.contains("would miss a100"), "{stdout}");
    assert!(stdout.contains("gate failed"), "{stdout}");
}

/// The `verdict` of every launch of `device`, by kernel.
fn verdicts<'a>(report: &'a Value, device: &str) -> Vec<(&'a str, &'a str)> {
    target(report, device)["launches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["kernel"]["function"].as_str().unwrap(),
                l["verdict"].as_str().unwrap(),
            )
        })
        .collect()
}

/// The shared bytes of a launch's only compile on `device`.
fn bytes(report: &Value, device: &str, launch: &Value) -> u64 {
    let compiles = compiles(report, device, launch);
    assert_eq!(compiles.len(), 1, "{launch}");
    compiles[0]["result"]["shared_bytes"]
        .as_u64()
        .unwrap_or_else(|| panic!("no bytes: {}", compiles[0]))
}

#[test]
fn kernels_from_bare_importlib_an_exec_dict_and_a_factory_are_judged() {
    let kernel = repo().join("examples/mla_decode/mla_decode.py");
    let (run, report) = capture(
        &fixture("plain_importlib.py"),
        "rtx-pro-6000,h100",
        &[],
        &[kernel.to_str().unwrap()],
    );
    assert!(
        run.stderr.is_empty() || !run.stderr.contains("error"),
        "{}",
        run.stderr
    );
    for device in ["rtx-pro-6000", "h100"] {
        let t = target(&report, device);
        assert!(t["errors"].as_array().unwrap().is_empty(), "{t}");
        let all = verdicts(&report, device);
        assert_eq!(all.len(), 3, "{all:?}");
        assert!(all.iter().all(|(_, v)| *v != "not-judged"), "{all:?}");
    }
    // The module loaded with bare importlib and the dict it was exec'd into: the same kernel,
    // the same bytes, over the desk part's budget and within the datacenter part's.
    let desk = launches(&report, "rtx-pro-6000", "mla_decode_stage1");
    let big = launches(&report, "h100", "mla_decode_stage1");
    assert_eq!((desk.len(), big.len()), (2, 2));
    for (d, b) in desk.iter().zip(&big) {
        // The user's call, and the chain from it down to the launch.
        assert!(
            d["caller"]["file"]
                .as_str()
                .unwrap()
                .ends_with("plain_importlib.py"),
            "{d}"
        );
        let chain = d["chain"].as_array().unwrap();
        assert_eq!(chain[0]["function"], "launch", "{d}");
        assert_eq!(chain[0]["line"], d["caller"]["line"], "{d}");
        assert_eq!(d["verdict"], "over");
        assert_eq!(b["verdict"], "fits");
        assert!(bytes(&report, "rtx-pro-6000", d) > 101_376);
        assert!(bytes(&report, "h100", b) <= 232_448);
    }
    // The factory's kernel: its tiles come from the closure.
    let desk = launches(&report, "rtx-pro-6000", "matmul");
    let big = launches(&report, "h100", "matmul");
    assert_eq!(desk[0]["verdict"], "over");
    assert_eq!(big[0]["verdict"], "fits");
    assert!(bytes(&report, "rtx-pro-6000", desk[0]) > 101_376);
}

#[test]
fn conditional_imports_caught_stops_and_the_backward_pass_are_all_in_the_report() {
    let (run, report) = capture(&fixture("caught.py"), "h100", &[], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let h100 = target(&report, "h100");
    assert!(h100["errors"].as_array().unwrap().is_empty(), "{h100}");
    // The forward kernel's helper uses `rsqrt` bound by a try/except import: it compiles.
    let forward = launches(&report, "h100", "rms_norm_fwd");
    let backward = launches(&report, "h100", "rms_norm_bwd");
    assert!(!forward.is_empty() && !backward.is_empty(), "{h100}");
    for launch in forward.iter().chain(&backward) {
        assert_eq!(launch["verdict"], "fits", "{launch}");
        for c in compiles(&report, "h100", launch) {
            assert!(c["error"].is_null(), "{c}");
        }
    }
    // Three forward passes and three backward passes ran (.backward(), autograd.grad and
    // .backward() again): the backward kernels launched from the custom Function's backward.
    let count = |l: &[&Value]| l.iter().map(|l| l["count"].as_u64().unwrap()).sum::<u64>();
    assert_eq!((count(&forward), count(&backward)), (3, 3));
    // Both `.item()` reads of a kernel's output are assumptions at their own lines (the backward's
    // too), and the `torch.unique` the script caught is a stop, counted in the summary.
    let source = std::fs::read_to_string(fixture("caught.py")).unwrap();
    let line_of = |needle: &str| source.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let lines = |key: &str| -> Vec<u64> {
        h100[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["line"].as_u64().unwrap())
            .collect()
    };
    let mut assumed = lines("assumptions");
    assumed.sort_unstable();
    let mut wanted = vec![
        line_of("CHECK and dx.sum().item()") as u64,
        line_of("print(\"loss\"") as u64,
    ];
    wanted.sort_unstable();
    assert_eq!(assumed, wanted, "{h100}");
    assert_eq!(
        lines("stopped"),
        [line_of("torch.unique(y)") as u64],
        "{h100}"
    );
    assert!(
        run.stdout.contains("1 stop, 1 caught and gone on from"),
        "{}",
        run.stdout
    );
}

#[test]
fn the_vendor_tools_and_nvml_answer_for_the_emulated_device() {
    let out = scratch("capture-system-out");
    let (run, report) = capture(
        &fixture("system_query.py"),
        "h100,mi300x",
        &["--allow-empty", "--allow-writes", out.to_str().unwrap()],
        &[out.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let read = |name: &str| -> Value {
        let path = out.join(format!("{name}.json"));
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    };
    let h100 = read("NVIDIA_H100_80GB_HBM3");
    assert_eq!(h100["smi_list"]["out"], "GPU 0: NVIDIA H100 80GB HBM3\n");
    assert_eq!(h100["smi_query"]["out"], "NVIDIA H100 80GB HBM3, 9.0\n");
    // The table has no total memory: the tool names it and fails, and the report says so.
    assert_ne!(h100["smi_memory"]["code"], 0);
    assert!(
        h100["smi_memory"]["err"]
            .as_str()
            .unwrap()
            .contains("memory.total")
    );
    let stops = target(&report, "h100")["stopped"].to_string();
    assert!(stops.contains("memory.total"), "{stops}");
    assert_ne!(h100["rocm_smi"]["code"], 0, "no AMD GPU on a CUDA target");
    // `hasattr` of a property the table lacks is False (the host code's own fallback runs), and
    // the ask is in the report.
    assert_eq!(h100["has_l2"], false);
    assert!(stops.contains("L2 cache size"), "{stops}");
    if h100["nvml"] != "not installed" {
        assert_eq!(h100["nvml"]["name"], "NVIDIA H100 80GB HBM3", "{h100}");
        assert_eq!(h100["nvml"]["capability"], serde_json::json!([9, 0]));
        assert_eq!(h100["nvml"]["count"], 1);
    }
    let mi = read("AMD_Instinct_MI300X");
    assert_eq!(mi["rocm_smi"]["code"], 0);
    assert!(
        mi["rocm_smi"]["out"]
            .as_str()
            .unwrap()
            .contains("AMD Instinct MI300X")
    );
    assert_ne!(mi["smi_list"]["code"], 0, "no NVIDIA GPU on a HIP target");
    if mi["nvml"] != "not installed" {
        assert!(mi["nvml"]["error"].is_string(), "{mi}");
    }
}

#[test]
fn a_pytest_module_in_importlib_mode_has_its_factory_kernel_judged() {
    let cache = scratch("capture-importlib-mode");
    let json = cache.join("report.json");
    let suite = fixture("importlib_suite");
    let run = tilefit_with(
        &[
            "capture",
            "--module",
            "pytest",
            "--targets",
            "rtx-pro-6000,h100",
            "--python",
            emulate_python().to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--",
            "--import-mode=importlib",
            "-q",
            "-p",
            "no:cacheprovider",
            suite.to_str().unwrap(),
        ],
        None,
        &[("TILEFIT_CACHE_DIR", &cache)],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for device in ["rtx-pro-6000", "h100"] {
        let all = launches(&report, device, "scale");
        assert_eq!(all.len(), 1, "{report}");
        assert_eq!(all[0]["verdict"], "fits", "{}", all[0]);
        let compile = &compiles(&report, device, all[0])[0];
        assert!(compile["error"].is_null(), "{compile}");
    }
}
