//! `tilefit replay` of shipped AOTInductor packages: an sm_80 package made on an H100 with torch
//! 2.11 and Triton 3.6 (`examples/aoti/make_package.py`; its `.so` left out of the fixture),
//! whose template GEMM asks 131,072 bytes as pytorch/executorch#21827's artifact does, judged as
//! its host code asks on every device its binary loads on; the same kernel as AOTInductor's
//! default `.cubin` (sm_80 SASS only, in an unzipped folder); and packages that cannot be read.

use serde_json::Value;

use super::{fixture, scratch, tilefit};

fn verdicts(report: &Value, kernel: usize) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kernel"]["index"] == kernel)
        .flat_map(|r| r["verdicts"].as_array().unwrap().clone())
        .map(|v| {
            (
                v["device"].as_str().unwrap().to_owned(),
                v["verdict"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn an_sm80_package_s_131072_byte_gemm_is_over_on_rtx_5090_and_rtx_pro_6000_and_fits_on_a100_and_h100()
 {
    let dir = scratch("shipped-pt2");
    let json = dir.join("report.json");
    let html = dir.join("map.html");
    let package = fixture("aoti/gemm_gelu_sm80.pt2");
    let run = tilefit(
        &[
            "replay",
            &package,
            "--targets",
            "a100,h100,rtx-5090,rtx-pro-6000",
            "--json",
            json.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
            "--fail-on",
            "over-budget",
        ],
        None,
    );
    assert_eq!(
        run.code, 1,
        "over on two devices fails the gate: {}",
        run.stderr
    );
    assert!(
        run.stdout.contains("131,072 OVER +29,696"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("as shipped"), "{}", run.stdout);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let kernel = &report["kernels"][0];
    assert_eq!(
        kernel["name"],
        "triton_tem_fused__unsafe_view_gelu_mm_t_view_0"
    );
    assert_eq!(kernel["original_arch"], "sm_80");
    assert_eq!(
        kernel["shipped"]["images"],
        serde_json::json!(["sm_80", "compute_80"])
    );
    for (key, value) in [
        ("BLOCK_M", 128),
        ("BLOCK_N", 128),
        ("BLOCK_K", 64),
        ("num_stages", 5),
    ] {
        assert_eq!(kernel["options"][key], value, "{key}");
    }
    assert_eq!(
        verdicts(&report, 0),
        [
            ("a100".to_owned(), "fits".to_owned()),
            ("h100".to_owned(), "fits".to_owned()),
            ("rtx-5090".to_owned(), "over-budget".to_owned()),
            ("rtx-pro-6000".to_owned(), "over-budget".to_owned()),
        ]
    );
    for result in report["results"].as_array().unwrap() {
        assert_eq!(
            result["shared_bytes"], 131_072,
            "the bytes the host code asks, everywhere"
        );
        assert_eq!(result["replayed_with"], "as shipped");
    }
    // Read back as its consumers read it: the saved report gates again, the map names it.
    let again = tilefit(
        &["report", json.to_str().unwrap(), "--fail-on", "over-budget"],
        None,
    );
    assert_eq!(again.code, 1, "{}", again.stderr);
    let map = std::fs::read_to_string(&html).unwrap();
    assert!(map.contains("triton_tem_fused__unsafe_view_gelu_mm_t_view_0"));
}

#[test]
fn a_cubin_only_package_loads_on_ampere_and_ada_alone() {
    let run = tilefit(
        &[
            "replay",
            &fixture("aoti/gemm_gelu_sm80_cubin"),
            "--targets",
            "a100,rtx-4090,h100,rtx-5090",
            "--json",
            "-",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        report["kernels"][0]["shipped"]["images"],
        serde_json::json!(["sm_80"])
    );
    assert_eq!(
        verdicts(&report, 0),
        [
            ("a100".to_owned(), "fits".to_owned()),
            ("h100".to_owned(), "unsupported-on-target".to_owned()),
            ("rtx-4090".to_owned(), "over-budget".to_owned()),
            ("rtx-5090".to_owned(), "unsupported-on-target".to_owned()),
        ]
    );
    let hopper = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["arch"] == "sm_90")
        .unwrap();
    let why = hopper["error"]["message"].as_str().unwrap();
    assert!(
        why.contains("no image of the binary loads on sm_90 (it holds sm_80)"),
        "{why}"
    );
}

#[test]
fn packages_that_cannot_be_read_are_named_and_fail_the_run() {
    let dir = scratch("shipped-hostile");
    // Not a zip at all.
    let garbage = dir.join("model.pt2");
    std::fs::write(&garbage, b"not a zip").unwrap();
    let run = tilefit(
        &["replay", garbage.to_str().unwrap(), "--targets", "a100"],
        None,
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("model.pt2") && run.stderr.contains("zip"),
        "{}",
        run.stderr
    );
    // A wrapper whose binary is missing and one whose launch is garbled, beside the good
    // package: the good kernel is judged, the two are listed, and the run fails.
    let broken = dir.join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    let wrapper = r#"
    kernels_.k_missing = loadKernel("/build/cmissing.cubin", "k_missing", 1024, cubin_dir_);
    launchKernel(kernels_.k_missing, grid_0, grid_1, grid_2, 4, 1024, kernel_args_, stream_);
    kernels_.k_garbled = loadKernel("/build/cmissing.cubin", "k_garbled", lots, cubin_dir_);
"#;
    std::fs::write(broken.join("c0.wrapper.cpp"), wrapper).unwrap();
    let run = tilefit(
        &[
            "replay",
            broken.to_str().unwrap(),
            &fixture("aoti/gemm_gelu_sm80.pt2"),
            "--targets",
            "rtx-5090",
            "--json",
            "-",
        ],
        None,
    );
    assert_eq!(
        run.code, 2,
        "unreadable kernels are not judged: {}",
        run.stderr
    );
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["stats"]["unreadable_shipped"], 2);
    let skipped = report["skipped"].to_string();
    assert!(
        skipped.contains("k_missing") && skipped.contains("not in the package"),
        "{skipped}"
    );
    assert!(skipped.contains("`lots` is not a number"), "{skipped}");
    assert_eq!(
        verdicts(&report, 0),
        [("rtx-5090".to_owned(), "over-budget".to_owned())]
    );
    // A package has no compile to share out.
    let sharded = tilefit(
        &[
            "replay",
            &fixture("aoti/gemm_gelu_sm80.pt2"),
            "--shard",
            "1/2",
            "--json",
            dir.join("shard.json").to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(sharded.code, 2, "{}", sharded.stderr);
    assert!(sharded.stderr.contains("--shard"), "{}", sharded.stderr);
}

#[test]
fn a_moved_or_unzipped_package_keeps_its_kernel_ids_so_a_baseline_matches() {
    let dir = scratch("shipped-moved");
    let package = fixture("aoti/gemm_gelu_sm80.pt2");
    let base = dir.join("base.json");
    let first = tilefit(
        &[
            "replay",
            &package,
            "--targets",
            "rtx-5090",
            "--json",
            base.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(first.code, 0, "{}", first.stderr);
    let moved = dir.join("elsewhere.pt2");
    std::fs::copy(&package, &moved).unwrap();
    let again = tilefit(
        &[
            "replay",
            moved.to_str().unwrap(),
            "--targets",
            "rtx-5090",
            "--baseline",
            base.to_str().unwrap(),
            "--fail-on",
            "over-budget",
        ],
        None,
    );
    assert_eq!(
        again.code, 0,
        "the same kernel is in the baseline: {}",
        again.stderr
    );
    let listed = tilefit(&["replay", moved.to_str().unwrap(), "--list"], None);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(
        listed.stdout.contains("1 shipped kernels")
            && listed.stdout.contains("131,072 bytes  8 warps"),
        "{}",
        listed.stdout
    );
}

#[test]
fn a_kernel_its_binary_does_not_hold_and_a_missing_package_are_named() {
    let dir = scratch("shipped-names");
    // A kernel name the binary does not hold: the driver would not find it.
    let renamed = dir.join("renamed");
    std::fs::create_dir_all(&renamed).unwrap();
    let cubin = fixture("aoti/gemm_gelu_sm80_cubin");
    for entry in std::fs::read_dir(&cubin).unwrap().flatten() {
        let name = entry.file_name().into_string().unwrap();
        let mut bytes = std::fs::read(entry.path()).unwrap();
        if name.ends_with(".wrapper.cpp") {
            bytes = String::from_utf8(bytes)
                .unwrap()
                .replace(
                    "\"triton_tem_fused__unsafe_view_gelu_mm_t_view_0\", 131072",
                    "\"not_in_the_cubin\", 131072",
                )
                .into_bytes();
        }
        std::fs::write(renamed.join(name), bytes).unwrap();
    }
    let run = tilefit(
        &[
            "replay",
            renamed.to_str().unwrap(),
            "--targets",
            "a100",
            "--json",
            "-",
        ],
        None,
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stdout.contains("holds no kernel `not_in_the_cubin`"),
        "{}",
        run.stdout
    );
    // A path that is not there is named as such.
    let missing = tilefit(&["replay", dir.join("gone.pt2").to_str().unwrap()], None);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("gone.pt2") && missing.stderr.contains("No such file"),
        "{}",
        missing.stderr
    );
}
