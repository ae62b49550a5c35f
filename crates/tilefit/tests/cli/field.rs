//! The field's inputs, in fixtures written here in the shapes the engines ship: launches with a
//! `tl.` dtype constexpr, None arguments, `@triton.heuristics` and signature defaults (checked
//! against a direct `triton.compile` of the same specialization); a host-side TensorDescriptor; a
//! compile error's location and reason; a public OutOfResources report reproduced; an engine
//! config folder (SGLang's `triton_X_Y_Z/` tree, `triton_version` keys, variants in names, the
//! launcher's edits, AMD options, names tilefit cannot judge); and replay from an Inductor-shaped
//! cache and a tritonparse trace.

use std::path::Path;

use serde_json::Value;

use super::{Run, fixture, json_of, probe, python, run_fixture, scratch, tilefit_with};

fn results_on<'a>(report: &'a Value, arch: &str) -> Vec<&'a Value> {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["arch"] == arch)
        .collect()
}

#[test]
fn an_engine_launch_compiles_as_a_direct_triton_compile_does() {
    let cache = scratch("field-launch");
    let report = json_of(&probe(
        &fixture("field/moe_launch.toml"),
        &cache,
        &["--json", "-"],
    ));
    let kernel = fixture("field/moe_launch.py");
    for arch in ["sm_90", "sm_120"] {
        let results = results_on(&report, arch);
        assert_eq!(results.len(), 2);
        for result in results {
            let stages = result["config"]["num_stages"].as_u64().unwrap().to_string();
            // The same launch written out by hand: dtype object, constexpr Nones, the heuristic's
            // EVEN_K and the default USE_BIAS.
            let direct: u64 = run_fixture(
                "field/direct_moe_compile.py",
                &[&kernel, arch, "64", "128", "64", "4", &stages],
                &cache.join("direct-triton-cache"),
            )
            .trim()
            .parse()
            .unwrap();
            assert_eq!(
                result["shared_bytes"].as_u64().unwrap(),
                direct,
                "{arch} num_stages={stages}"
            );
            // What the worker passed, said in the JSON.
            let passed = &result["passed"];
            assert_eq!(passed["compute_type"]["how"], "dtype");
            assert_eq!(passed["compute_type"]["value"], "tl.bfloat16");
            for none in ["bias_ptr", "a_scale_ptr", "b_scale_ptr"] {
                assert_eq!(passed[none]["how"], "none", "{none}: {passed}");
            }
            assert_eq!(passed["EVEN_K"]["how"], "heuristic");
            assert_eq!(passed["EVEN_K"]["value"], true);
            assert_eq!(passed["USE_BIAS"]["how"], "default");
            assert_eq!(passed["USE_BIAS"]["value"], false);
            let divisible: Vec<&str> = result["divisible_by_16"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            assert!(divisible.contains(&"a_ptr") && !divisible.contains(&"bias_ptr"));
        }
    }
}

#[test]
fn a_host_tensor_descriptor_is_passed_as_the_launch_builds_it() {
    let cache = scratch("field-descriptor");
    let report = json_of(&probe(
        &fixture("field/tile_copy.toml"),
        &cache,
        &["--json", "-"],
    ));
    let result = &report["results"][0];
    assert_eq!(result["status"], "ok", "{result}");
    // A 64 x 128 bf16 tile read through the descriptor, plus its barrier.
    assert!(
        result["shared_bytes"].as_u64().unwrap() >= 64 * 128 * 2,
        "{result}"
    );
    let passed = &result["passed"]["in_desc"];
    assert_eq!(passed["how"], "tensor-descriptor");
    assert!(
        passed["value"]
            .as_str()
            .unwrap()
            .contains("block_shape=[64, 128]"),
        "{passed}"
    );
    // A descriptor Triton itself refuses (strides not 16-byte aligned) is a spec error that says so.
    let dir = scratch("field-descriptor-bad");
    let text = std::fs::read_to_string(fixture("field/tile_copy.toml"))
        .unwrap()
        .replace("strides = [128, 1]", "strides = [129, 1]")
        .replace(
            "file = \"tile_copy.py\"",
            &format!("file = {:?}", fixture("field/tile_copy.py")),
        );
    let spec = dir.join("spec.toml");
    std::fs::write(&spec, text).unwrap();
    let run = probe(spec.to_str().unwrap(), &cache, &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("argument `in_desc`: Triton refuses the descriptor"),
        "{}",
        run.stderr
    );
}

/// The fixture launch with the fp8 path switched on but its scales still None: the kernel's
/// `tl.load(a_scale_ptr)` fails to compile, inside a JIT body, with a multi-line diagnostic.
fn broken_launch(dir: &Path, sweep_fp8: bool) -> String {
    let mut text = std::fs::read_to_string(fixture("field/moe_launch.toml"))
        .unwrap()
        .replace(
            "file = \"moe_launch.py\"",
            &format!("file = {:?}", fixture("field/moe_launch.py")),
        );
    if sweep_fp8 {
        text = text.replace("use_fp8_w8a8 = false\n", "").replace(
            "num_stages = [2, 4]",
            "num_stages = [2]\nuse_fp8_w8a8 = [false, true]",
        );
    } else {
        text = text.replace("use_fp8_w8a8 = false", "use_fp8_w8a8 = true");
    }
    let spec = dir.join("spec.toml");
    std::fs::write(&spec, text).unwrap();
    spec.display().to_string()
}

#[test]
fn a_compile_error_says_where_and_why() {
    let cache = scratch("field-error");
    let dir = scratch("field-error-spec");
    // Every config fails the same way: a spec error, with the source line and the reason.
    let run = probe(&broken_launch(&dir, false), &cache, &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("'constexpr_type' object has no attribute 'is_ptr' (moe_launch.py:85:21: acc = acc * tl.load(a_scale_ptr))"),
        "{}",
        run.stderr
    );
    // Some configs fail: each failure is a cell; the terminal gives the reason in one line with
    // its place, and the JSON keeps the compiler's whole diagnostic.
    let spec = broken_launch(&dir, true);
    let run = probe(&spec, &cache, &[]);
    assert!(
        run.stdout
            .contains("moe_launch.py:85:21: acc = acc * tl.load(a_scale_ptr)"),
        "{}",
        run.stdout
    );
    let run = probe(&spec, &cache, &["--json", "-"]);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let failed: Vec<&Value> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "compile-error")
        .collect();
    assert!(!failed.is_empty(), "{}", run.stdout);
    for result in failed {
        let error = &result["error"];
        assert_eq!(error["location"]["line"], 85);
        assert_eq!(error["location"]["column"], 21);
        assert!(
            error["location"]["file"]
                .as_str()
                .unwrap()
                .ends_with("moe_launch.py")
        );
        let diagnostic = error["diagnostic"].as_str().unwrap();
        assert!(diagnostic.starts_with("at "), "{diagnostic}");
        assert!(
            diagnostic.contains("acc = acc * tl.load(a_scale_ptr)\n"),
            "{diagnostic}"
        );
        assert!(diagnostic.contains("^\n"), "{diagnostic}");
        assert!(diagnostic.contains("'constexpr_type' object has no attribute 'is_ptr'"));
    }
}

/// sgl-project/sglang#8513 (GLM-4.5-Air-FP8 on a 99 KiB card): `OutOfResources: out of resource:
/// shared memory, Required: 147456, Hardware limit: 101376`, from the fused MoE kernel at SGLang's
/// default fp8 config then (BLOCK 128 x 256 x 128, 8 warps, 4 stages). The fixture kernel follows
/// the same pattern and needs exactly those bytes on both 99 KiB archs; a small tile fits.
#[test]
fn a_public_out_of_resources_report_reproduces() {
    let cache = scratch("field-report");
    let report = json_of(&probe(
        &fixture("field/moe_fp8.toml"),
        &cache,
        &["--json", "-"],
    ));
    for arch in ["sm_89", "sm_120"] {
        let results = results_on(&report, arch);
        let big = results
            .iter()
            .find(|r| r["config"]["BLOCK_SIZE_M"] == 128 && r["config"]["BLOCK_SIZE_N"] == 256)
            .unwrap();
        assert_eq!(big["shared_bytes"], 147_456, "{arch}");
        let verdict = &big["verdicts"][0];
        assert_eq!(verdict["verdict"], "over-budget");
        assert_eq!(verdict["budget"], 101_376);
        assert_eq!(verdict["over_by"], 147_456 - 101_376);
        let small = results
            .iter()
            .find(|r| r["config"]["BLOCK_SIZE_M"] == 32 && r["config"]["BLOCK_SIZE_N"] == 64)
            .unwrap();
        assert_eq!(small["verdicts"][0]["verdict"], "fits", "{arch}");
    }
}

fn folder_file<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["listed"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["file"].as_str().unwrap().contains(name))
        .unwrap_or_else(|| panic!("no file {name}"))
}

#[test]
fn an_engine_config_folder_is_judged_file_by_file() {
    let cache = scratch("field-folder");
    let spec = fixture("field/folder.toml");
    let report = json_of(&probe(&spec, &cache, &["--json", "-"]));
    let listed = &report["listed"];
    assert_eq!(listed["files"].as_array().unwrap().len(), 8);
    // `triton_version` is metadata, not an entry; only the entry naming a key nothing takes is
    // left out, and only that entry.
    let problems = listed["file_problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0]["entry"], "1024");
    assert!(problems[0]["problem"].as_str().unwrap().contains("`FOO`"));
    let h100 = folder_file(
        &report,
        "triton_3_5_1/E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json",
    );
    assert_eq!(h100["tuned_with"], "3.5.1");
    let keys: Vec<&str> = h100["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["1", "64", "256"]);
    // The launcher's edits: SPLIT_K forced to 1, USE_TMA popped.
    let edits = |file: &Value, key: &str| -> Vec<String> {
        file["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == key)
            .unwrap()["edits"]
            .as_array()
            .map(|a| a.iter().map(|e| e.as_str().unwrap().to_owned()).collect())
            .unwrap_or_default()
    };
    assert_eq!(edits(h100, "64"), ["SPLIT_K 2 -> 1 (forced)"]);
    assert_eq!(edits(h100, "256"), ["USE_TMA=true dropped"]);
    let h20 = folder_file(&report, "NVIDIA_H20-3e");
    assert_eq!(h20["device"], "H20-3e");
    assert_eq!(h20["arch"], "sm_90");
    assert_eq!(h20["variant"], "dtype=fp8_w8a8,block_shape=[128,128]");
    // A block_shape file: the launcher clamps BLOCK_SIZE_K to the quantization block.
    assert_eq!(edits(h20, "16"), ["BLOCK_SIZE_K 256 -> 128 (at most)"]);
}

#[test]
fn an_engine_config_folder_judges_variants_and_backends_apart() {
    let cache = scratch("field-folder-variants");
    let spec = fixture("field/folder.toml");
    let report = json_of(&probe(&spec, &cache, &["--json", "-"]));
    // SGLang's folder names the tuning Triton.
    let mi300x = folder_file(&report, "AMD_Instinct_MI300X");
    assert_eq!(mi300x["tuned_with"], "3.4.0");
    assert_eq!(mi300x["arch"], "gfx942");
    // AMD entries are judged on AMD targets only, with their HIP options.
    for entry in mi300x["entries"].as_array().unwrap() {
        assert_eq!(entry["verdict"], "fits");
        let index = &entry["config_index"];
        let archs: Vec<&str> = report["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| &r["config_index"] == index)
            .map(|r| r["arch"].as_str().unwrap())
            .collect();
        assert_eq!(archs, ["gfx942"]);
    }
    // An AMD option in a file judged on an NVIDIA device never reaches the NVIDIA compile.
    let generic = folder_file(&report, "triton_3_4_0/E=8,N=14336.json");
    assert!(
        generic["unresolved"]
            .as_str()
            .unwrap()
            .contains("no `device_name=` part")
    );
    let generic_result = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["config"]["waves_per_eu"] == 1 && r["arch"] == "sm_90")
        .unwrap();
    assert_eq!(generic_result["status"], "ok");
    assert_eq!(generic_result["ignored_options"][0], "waves_per_eu");
    // Variants in names: the fp8 file compiles the fp8 kernel; the public report's bytes.
    let rtx = folder_file(&report, "RTX_4090,dtype=fp8_w8a8");
    assert_eq!(rtx["variant"], "dtype=fp8_w8a8");
    let over = rtx["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == "256")
        .unwrap();
    assert_eq!(over["shared_bytes"], 147_456);
    assert_eq!(over["over_by"], 46_080);
    assert_eq!(folder_file(&report, "H200_down")["variant"], "down");
    // What is not judged says why, and is never judged with the wrong kernel.
    let int4 = folder_file(&report, "int4_w4a16");
    assert!(
        int4["undescribed"]
            .as_str()
            .unwrap()
            .contains("`dtype=int4_w4a16`")
    );
    assert!(int4["entries"].as_array().unwrap().is_empty());
    let intel = folder_file(&report, "Intel(R)_Arc");
    assert!(
        intel["unsupported"]
            .as_str()
            .unwrap()
            .contains("`xpu` backend")
    );
    assert!(intel["unresolved"].is_null());

    // As a user reads it, and the gate: only the file without a device is unmapped.
    let run = probe(&spec, &cache, &[]);
    assert!(
        run.stdout
            .contains("(tuned with Triton 3.4.0, judged with "),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(
        "NOT JUDGED: its name's part `dtype=int4_w4a16` has no kernel variant in [files.variants]"
    ));
    assert!(
        run.stdout
            .contains("ENTRY LEFT OUT: entry `1024` is left out")
    );
    let run = probe(&spec, &cache, &["--fail-on", "unmapped-files"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("1 config files map to no device: triton_3_4_0/E=8,N=14336.json"),
        "{}",
        run.stderr
    );
}

/// Compile the MLA example for sm_90 with plain Triton into `triton_cache`; its bytes.
fn compile_into(triton_cache: &Path) -> u64 {
    super::direct_mla_compile("sm_90", ("bf16", 64, 2), triton_cache)
}

fn replay_with(args: &[&str], env: &[(&str, &Path)]) -> Run {
    let mut all = vec!["replay"];
    all.extend(args);
    all.extend([
        "--python",
        python().to_str().unwrap(),
        "--jobs",
        "2",
        "--targets",
        "h100,rtx-pro-6000",
        "--json",
        "-",
    ]);
    tilefit_with(&all, None, env)
}

#[test]
fn replay_finds_torch_compile_s_cache_and_reads_tritonparse_traces() {
    let root = scratch("field-inductor");
    // Inductor's layout: <cache>/triton/<device>/<Triton's cache entries>.
    let inductor = root.join("torchinductor_tester");
    let bytes = compile_into(&inductor.join("triton").join("0"));
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let results = root.join("results");
    let run = replay_with(
        &[],
        &[
            ("TORCHINDUCTOR_CACHE_DIR", &inductor),
            ("TRITON_CACHE_DIR", Path::new("")),
            ("HOME", &home),
            ("TILEFIT_CACHE_DIR", &results),
        ],
    );
    let report = json_of(&run);
    let caches = report["caches"].as_array().unwrap();
    assert_eq!(caches.len(), 1, "{caches:?}");
    assert!(caches[0].as_str().unwrap().ends_with("triton/0"));
    let sm90 = results_on(&report, "sm_90");
    assert_eq!(sm90.len(), 1);
    assert_eq!(sm90[0]["shared_bytes"], bytes);
    assert_eq!(sm90[0]["original_shared_bytes"], bytes);

    // The same kernel as a tritonparse trace: a compilation event carries its metadata and IR.
    let entry = std::fs::read_dir(inductor.join("triton/0"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            std::fs::read_dir(p)
                .unwrap()
                .any(|f| f.unwrap().path().extension().is_some_and(|e| e == "ttir"))
        })
        .unwrap();
    let mut files = serde_json::Map::new();
    let mut metadata = Value::Null;
    for file in std::fs::read_dir(&entry).unwrap() {
        let path = file.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let extension = path.extension().map(|e| e.to_string_lossy().into_owned());
        if matches!(extension.as_deref(), Some("ttir" | "ttgir")) {
            files.insert(name, Value::from(std::fs::read_to_string(&path).unwrap()));
        } else if extension.as_deref() == Some("json") && !name.starts_with("__grp__") {
            metadata = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        }
    }
    let events = [
        serde_json::json!({"event_type": "compilation", "pid": 1, "stack": [],
            "payload": {"metadata": metadata, "file_content": files, "file_path": {}}}),
        serde_json::json!({"event_type": "launch", "pid": 1, "payload": {}}),
    ];
    let trace = root.join("dedicated_log_triton_trace_tester_.ndjson");
    std::fs::write(
        &trace,
        events
            .iter()
            .map(|e| e.to_string() + "\n")
            .collect::<String>(),
    )
    .unwrap();
    let run = replay_with(
        &[trace.to_str().unwrap()],
        &[("TILEFIT_CACHE_DIR", &results)],
    );
    let report = json_of(&run);
    let sm90 = results_on(&report, "sm_90");
    assert_eq!(sm90.len(), 1);
    assert_eq!(sm90[0]["shared_bytes"], bytes);
    let sm120 = results_on(&report, "sm_120");
    assert_eq!(sm120[0]["original_shared_bytes"], bytes);
    // A compressed trace is refused with what to do.
    let packed = root.join("packed.bin.ndjson");
    std::fs::write(&packed, [0x1f, 0x8b, 0x08, 0x00]).unwrap();
    let run = replay_with(
        &[packed.to_str().unwrap()],
        &[("TILEFIT_CACHE_DIR", &results)],
    );
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("is compressed"), "{}", run.stderr);
    assert!(
        run.stderr.contains("TRITON_TRACE_COMPRESSION=none"),
        "{}",
        run.stderr
    );
}
