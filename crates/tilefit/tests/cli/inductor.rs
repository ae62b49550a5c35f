//! `tilefit capture` of `torch.compile`d code (`fixtures/capture/compiled.py`, the real torch,
//! Inductor and Triton): every kernel Inductor generates for the emulated device is recorded with
//! the configs it chose there, compiled for the target's arch and judged; Inductor's own compile
//! of each config for that arch agrees with tilefit's byte for byte.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::{emulate_python, emulate_python_newest, scratch, tilefit_with};

/// The template kernel's launch and its compile, on one target.
fn template(target: &Value) -> (&Value, &Value) {
    let launches = target["launches"].as_array().unwrap();
    let launch = launches
        .iter()
        .find(|l| l["inductor"]["kind"] == "template")
        .unwrap_or_else(|| panic!("no template kernel in {launches:?}"));
    let at = usize::try_from(launch["compiles"][0].as_u64().unwrap()).unwrap();
    let compile = &target["compiles"][at];
    (launch, compile)
}

#[test]
fn torch_compile_kernels_are_judged_per_device_and_flex_attention_misses_the_desk_part() {
    // Flex attention's forward with head_dim 192 in bf16: Inductor's sm_90 table entry fits an
    // H100 (229,376 bytes); the sm_120 one does not fit an RTX PRO 6000 (172,032 > 101,376),
    // where torch.compile fails with "No valid triton configs" (the table).
    let (run, report) = capture("compiled.py", "h100,rtx-pro-6000", &["--", "192"]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let targets = report["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 2);
    for target in targets {
        check_target(target);
    }
    // A launch is placed at the user's call of the compiled function, not at its definition.
    let source = std::fs::read_to_string(fixture_script("compiled.py")).unwrap();
    let line_of = |needle: &str| source.lines().position(|l| l.starts_with(needle)).unwrap() + 1;
    let reduction = targets[0]["launches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["inductor"]["kind"] == "reduction")
        .unwrap();
    assert_eq!(
        reduction["caller"]["line"],
        line_of("row_norms(x)"),
        "{reduction}"
    );
    let (h100, h100_bytes) = template(&targets[0]);
    assert_eq!(h100_bytes["result"]["shared_bytes"], 229_376);
    assert_eq!(h100["verdict"], "fits");
    let (desk, desk_bytes) = template(&targets[1]);
    assert_eq!(desk_bytes["result"]["shared_bytes"], 172_032);
    assert_eq!(desk["verdict"], "over");
    let no_valid = desk["inductor"]["no_valid_configs"].as_str().unwrap();
    assert!(
        no_valid.contains("No valid triton configs") && no_valid.contains("Required: 172032"),
        "{no_valid}"
    );
    // The way out in Inductor's terms, compiled and judged on the device.
    let fix = &desk["fix"];
    assert_eq!(
        fix["pass"],
        "pass kernel_options={\"fwd_BLOCK_M\": 64, \"fwd_BLOCK_N\": 64, \"fwd_num_stages\": 1, \"fwd_num_warps\": 4} to flex_attention",
        "{fix}"
    );
    assert!(
        fix["fits"][0]["shared_bytes"].as_u64().unwrap() <= 101_376,
        "{fix}"
    );
    // The terminal names the line, the failure and the fix.
    let line = line_of("print(attention(q, k, v)");
    assert!(
        run.stdout
            .contains("torch.compile fails here with RuntimeError: No valid triton configs"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains(&format!(
            "launched at compiled.py:{line} on rtx-pro-6000 172,032 > 101,376"
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn a_reductions_configs_halved_for_registers_after_the_load_are_judged_too() {
    // Inductor reads each loaded config's registers per thread and, where they leave fewer
    // resident blocks than the grid has, adds a copy with its R blocks halved: the emulated load
    // reads the registers from the cubin, as the driver does, so the copy is made here too.
    let (run, report) = capture("rescale.py", "h100,rtx-pro-6000", &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    for target in report["targets"].as_array().unwrap() {
        let device = target["device"]["device"].as_str().unwrap();
        let compiles = target["compiles"].as_array().unwrap();
        let launch = target["launches"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["inductor"]["kind"] == "reduction")
            .unwrap_or_else(|| panic!("{device}: no reduction in {}", target["launches"]));
        let mine: Vec<&Value> = launch["compiles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| &compiles[usize::try_from(i.as_u64().unwrap()).unwrap()])
            .collect();
        assert_eq!(launch["autotune"]["configs"], mine.len(), "{device}");
        let added: Vec<&&Value> = mine
            .iter()
            .filter(|c| !c["inductor_rescaled"].is_null())
            .collect();
        assert!(!added.is_empty(), "{device}: nothing rescaled in {mine:?}");
        for compile in added {
            let rescale = &compile["inductor_rescaled"];
            let block = compile["constexprs"]["R0_BLOCK"].as_u64().unwrap();
            assert_eq!(
                rescale["from"]["R0_BLOCK"],
                2 * block,
                "{device}: {compile}"
            );
            // More registers than the device's threads per SM leave each thread.
            assert!(
                rescale["registers"].as_u64().unwrap() > 32,
                "{device}: {rescale}"
            );
            // The config it halved is the launch's too, and Inductor's bytes are tilefit's.
            assert!(mine.iter().any(|c| {
                c["constexprs"]["R0_BLOCK"] == 2 * block
                    && c["constexprs"]["XBLOCK"] == compile["constexprs"]["XBLOCK"]
                    && c["options"]["num_warps"] == compile["options"]["num_warps"]
            }));
            assert_eq!(
                compile["inductor_shared"], compile["result"]["shared_bytes"],
                "{device}"
            );
        }
        assert!(
            run.stdout
                .contains("Inductor adds 1 config with R blocks halved for registers"),
            "{}",
            run.stdout
        );
    }
}

#[test]
#[ignore = "exhaustive tier: .ci/run runs it with `-- --ignored`"]
fn torch_compile_where_capture_cannot_judge_fails_closed() {
    let (run, report) = capture("compiled_fails.py", "h100", &[]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let target = &report["targets"][0];
    let failures: Vec<(&str, &str)> = target["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["code"].as_str().unwrap(), f["message"].as_str().unwrap()))
        .collect();
    // The dynamic-shape kernel: both byte counts, not judged.
    assert!(
        failures
            .iter()
            .any(|(c, m)| *c == "not-judged" && m.contains("dynamic shapes")),
        "{failures:?}"
    );
    // A failed compile (max-autotune with no backend), although the script caught it.
    assert!(
        run.stderr.contains("fell back: InductorError"),
        "{}",
        run.stderr
    );
    assert!(
        failures
            .iter()
            .any(|(c, m)| *c == "script-error"
                && m.contains("torch.compile failed under the emulation")),
        "{failures:?}"
    );
    // Autocast was on: the compiled matmul's inputs were cast to bf16 by a generated kernel.
    let casts = target["compiles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c["kernel"]["function"]
                .as_str()
                .unwrap()
                .contains("_to_copy")
                && c["args"]
                    .as_object()
                    .unwrap()
                    .values()
                    .any(|a| a["type"] == "*bf16")
        })
        .count();
    assert!(casts > 0, "{}", target["compiles"]);
}

#[test]
#[ignore = "exhaustive tier: .ci/run runs it with `-- --ignored`"]
fn max_autotune_choices_and_flex_backward_are_judged_on_the_device() {
    // `fixtures/capture/autotuned.py 192` on an RTX PRO 6000: the matmul's max-autotune
    // selection, each Triton template choice judged (some over: the autotuner skips them; ATen's
    // mm is the fallback), and flex attention's backward with head_dim 192, whose sm_120 table
    // entry needs 114,688 bytes (pytorch#198224 on a GB10: "No valid triton configs").
    let (run, report) = capture("autotuned.py", "rtx-pro-6000", &["--", "192"]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let target = &report["targets"][0];
    assert!(
        target["failures"].as_array().unwrap().is_empty(),
        "{}",
        target["failures"]
    );
    let launches = target["launches"].as_array().unwrap();
    let selection = launches
        .iter()
        .find(|l| l["inductor"]["kind"] == "template-choice")
        .unwrap_or_else(|| panic!("no max-autotune selection in {launches:?}"));
    let choices = &selection["inductor"]["choices"];
    assert_eq!(choices["fallback"], "ATen mm", "{choices}");
    let compiles: Vec<&Value> = selection["compiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &target["compiles"][usize::try_from(i.as_u64().unwrap()).unwrap()])
        .collect();
    assert_eq!(compiles.len() as u64, choices["triton"].as_u64().unwrap());
    // Each choice compiled by Inductor for the emulated arch and again by tilefit: the same
    // bytes; and Inductor's description of it rides along.
    let budget = 101_376;
    let mut over = 0;
    for compile in &compiles {
        let bytes = compile["result"]["shared_bytes"].as_u64().unwrap();
        assert_eq!(
            compile["inductor_shared"].as_u64(),
            Some(bytes),
            "{compile}"
        );
        assert!(
            compile["inductor_choice"]
                .as_str()
                .unwrap()
                .contains("BLOCK_M="),
            "{compile}"
        );
        over += usize::from(bytes > budget);
    }
    assert!(
        over > 0 && over < compiles.len(),
        "{over} of {}",
        compiles.len()
    );
    assert_eq!(selection["verdict"], "some-skipped");
    assert!(
        run.stdout.contains(&format!(
            "on rtx-pro-6000: {} of {} Triton choices fit; the autotuner skips BLOCK_K=",
            compiles.len() - over,
            compiles.len()
        )),
        "{}",
        run.stdout
    );
    // The kernel the selection put in the graph fits (the capture takes the first choice that
    // fits, where the device takes the fastest).
    assert!(
        launches.iter().any(|l| l["inductor"]["kind"] == "template"
            && l["inductor"]["kernel"].as_str().unwrap().contains("mm")
            && l["verdict"] == "fits"),
        "{launches:?}"
    );
    // Flex attention's backward: over, with Inductor's own error.
    let backward = launches
        .iter()
        .find(|l| {
            l["inductor"]["kernel"]
                .as_str()
                .unwrap()
                .starts_with("triton_tem_fused_flex_attention_backward")
        })
        .unwrap_or_else(|| panic!("no flex attention backward in {launches:?}"));
    assert_eq!(backward["verdict"], "over");
    let at = usize::try_from(backward["compiles"][0].as_u64().unwrap()).unwrap();
    assert_eq!(target["compiles"][at]["result"]["shared_bytes"], 114_688);
    let no_valid = backward["inductor"]["no_valid_configs"].as_str().unwrap();
    assert!(no_valid.contains("Required: 114688"), "{no_valid}");
}

#[test]
#[ignore = "exhaustive tier: .ci/run runs it with `-- --ignored`"]
fn pytest_emulate_runs_a_suite_that_calls_torch_compile() {
    let cache = scratch("capture-pytest-compile");
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/capture/compile_suite");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::process::Command::new(emulate_python())
        .args([
            "-m",
            "pytest",
            "-p",
            "tilefit.pytest_plugin",
            "--tilefit-emulate=h100,rtx-pro-6000",
        ])
        .arg(&suite)
        .arg("--tilefit-bin")
        .arg(env!("CARGO_BIN_EXE_tilefit"))
        .env("PYTHONPATH", repo.join("python"))
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
    // Both tests ran on both devices; the flex attention template misses the desk part only,
    // with Inductor's own error and the kernel_options that fit.
    assert_eq!(
        stdout.matches("2 tests: 2 captured, passed").count(),
        2,
        "{stdout}"
    );
    assert!(stdout.contains("(test_flex_attention)"), "{stdout}");
    assert!(stdout.contains("172,032 (+70,656)"), "{stdout}");
    assert!(stdout.contains("would miss rtx-pro-6000"), "{stdout}");
    assert!(!stdout.contains("would miss h100"), "{stdout}");
    assert!(
        stdout.contains(
            "pass kernel_options={\"fwd_BLOCK_M\": 64, \"fwd_BLOCK_N\": 64, \"fwd_num_stages\": 1"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("gate failed"), "{stdout}");
}

#[test]
#[ignore = "exhaustive tier: .ci/run runs it with `-- --ignored`"]
fn the_newest_torch_retries_at_one_stage_and_the_capture_says_whether_that_rescues() {
    // torch 2.15 (Triton 3.9): where no config of a kernel loads, Inductor retries it at
    // num_stages=1 before it fails. Flex attention's forward with head_dim 192 on an RTX PRO
    // 6000 (172,032 bytes at 3 stages) is rescued at 1 stage (73,728); its backward is at 1
    // stage already (114,688) and still fails; max-autotune's choices are judged as with 2.11.
    let (run, report) = capture_with(
        emulate_python_newest(),
        "autotuned.py",
        "rtx-pro-6000",
        &["--", "192"],
    );
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let target = &report["targets"][0];
    assert!(
        target["failures"].as_array().unwrap().is_empty(),
        "{}",
        target["failures"]
    );
    assert!(
        report["triton_version"]
            .as_str()
            .unwrap()
            .starts_with("3.9"),
        "{}",
        report["triton_version"]
    );
    let launches = target["launches"].as_array().unwrap();
    let kernel = |prefix: &str| {
        launches
            .iter()
            .find(|l| {
                l["inductor"]["kernel"]
                    .as_str()
                    .unwrap()
                    .starts_with(prefix)
                    && l["inductor"]["kind"] == "template"
            })
            .unwrap_or_else(|| panic!("no {prefix} in {launches:?}"))
    };
    let bytes = |launch: &Value| -> Vec<u64> {
        launch["compiles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                target["compiles"][usize::try_from(i.as_u64().unwrap()).unwrap()]["result"]
                    ["shared_bytes"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    };
    let forward = kernel("triton_tem_fused_flex_attention_");
    assert_eq!(forward["inductor"]["retry"]["num_stages"], 1, "{forward}");
    assert_eq!(bytes(forward), [172_032, 73_728]);
    assert_eq!(forward["verdict"], "some-skipped");
    assert!(
        run.stdout.contains(
            "torch retries it at num_stages=1 (73,728), which fits: the kernel runs, without software pipelining"
        ),
        "{}",
        run.stdout
    );
    let backward = kernel("triton_tem_fused_flex_attention_backward");
    assert_eq!(bytes(backward), [114_688]);
    assert_eq!(backward["verdict"], "over");
    assert!(
        launches
            .iter()
            .any(|l| l["inductor"]["kind"] == "template-choice" && l["verdict"] == "some-skipped"),
        "{launches:?}"
    );
    for compile in target["compiles"].as_array().unwrap() {
        if let Some(inductor) = compile["inductor_shared"].as_u64() {
            assert_eq!(
                Some(inductor),
                compile["result"]["shared_bytes"].as_u64(),
                "{}",
                compile["kernel"]["function"]
            );
        }
    }
}

#[test]
#[ignore = "exhaustive tier: .ci/run runs it with `-- --ignored`"]
fn the_public_flex_attention_reports_are_reproduced_from_their_model_code() {
    // examples/compile/reports/: each report's shapes and mask, its device, and the bytes its
    // error message gives (`Required: N`), compiled here for that device.
    let cases: [(&str, &Path, &str, &str, u64); 3] = [
        // pytorch#180278: torch 2.11's sm_86 fallthrough for head_dim 192.
        (
            "pytorch_180278.py",
            emulate_python(),
            "a10",
            "triton_tem_fused_flex_attention_",
            139_776,
        ),
        // NVIDIA-NeMo/Automodel#3064: head_dim 512 on an H100.
        (
            "nemo_automodel_3064.py",
            emulate_python(),
            "h100",
            "triton_tem_fused_flex_attention_",
            263_168,
        ),
        // pytorch#198224: the sm_12x backward default for head_dim > 128 on a GB10 (the
        // forward, over at 3 stages, is rescued at 1 by torch 2.15's retry; the backward, at 1
        // stage already, is not).
        (
            "pytorch_198224.py",
            emulate_python_newest(),
            "gb10",
            "triton_tem_fused_flex_attention_backward",
            114_688,
        ),
    ];
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/compile/reports");
    for (script, python, device, kernel, required) in cases {
        let (run, report) = capture_path(python, &root.join(script), device, &[]);
        assert_eq!(run.code, 1, "{script}: {}\n{}", run.stdout, run.stderr);
        let target = &report["targets"][0];
        assert!(
            target["failures"].as_array().unwrap().is_empty(),
            "{script}: {}",
            target["failures"]
        );
        let launch = target["launches"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| {
                l["inductor"]["kind"] == "template"
                    && l["inductor"]["kernel"]
                        .as_str()
                        .unwrap()
                        .starts_with(kernel)
                    && l["verdict"] == "over"
            })
            .unwrap_or_else(|| panic!("{script}: no {kernel} over on {device}"));
        let at = usize::try_from(launch["compiles"][0].as_u64().unwrap()).unwrap();
        assert_eq!(
            target["compiles"][at]["result"]["shared_bytes"], required,
            "{script}"
        );
        let error = launch["inductor"]["no_valid_configs"].as_str().unwrap();
        assert!(
            error.contains(&format!("Required: {required}")),
            "{script}: {error}"
        );
        if script == "pytorch_198224.py" {
            backward_fix_is_what_inductor_compiles(launch);
        }
    }
}

/// pytorch#198224's backward is at one stage already: its fix halves the tiles in pairs that
/// keep their ratios, and passed back as `bwd_` kernel_options, Inductor's own compile of the
/// backward gives the bytes the fix names, and fits.
fn backward_fix_is_what_inductor_compiles(launch: &Value) {
    let fix = &launch["fix"];
    let pass = fix["pass"].as_str().unwrap();
    let options = pass
        .strip_prefix("pass kernel_options=")
        .and_then(|p| p.strip_suffix(" to flex_attention"))
        .unwrap_or_else(|| panic!("{pass}"));
    assert!(options.contains("\"bwd_BLOCK_M1\""), "{pass}");
    let named = fix["fits"][0]["shared_bytes"].as_u64().unwrap();
    assert!(named <= 101_376, "{fix}");
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/compile/flex_attention.py");
    let (run, again) = capture_path(
        emulate_python_newest(),
        &example,
        "gb10",
        &[
            "--",
            "192",
            "bf16",
            "--backward",
            "--kernel-options",
            options,
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let target = &again["targets"][0];
    let backward = target["launches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| {
            l["inductor"]["kernel"]
                .as_str()
                .unwrap()
                .starts_with("triton_tem_fused_flex_attention_backward")
        })
        .unwrap_or_else(|| panic!("no backward in {target}"));
    assert_eq!(backward["verdict"], "fits");
    let at = usize::try_from(backward["compiles"][0].as_u64().unwrap()).unwrap();
    assert_eq!(target["compiles"][at]["result"]["shared_bytes"], named);
    assert_eq!(target["compiles"][at]["inductor_shared"], named);
}

#[test]
#[ignore = "exhaustive tier: .ci/run runs it with `-- --ignored`"]
fn the_flex_fix_passed_to_flex_attention_gives_the_bytes_it_names() {
    // fp32 head_dim 192 on an RTX PRO 6000 (344,320 bytes): no stage count fits with the
    // table's 64x64 tiles, so the fix halves them in the template's source. Passed back as
    // kernel_options, Inductor renders and compiles that config itself: the same bytes, and it
    // fits.
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/compile/flex_attention.py");
    let (_, report) = capture_path(
        emulate_python(),
        &example,
        "rtx-pro-6000",
        &["--", "192", "fp32"],
    );
    let target = &report["targets"][0];
    let (launch, compile) = template(target);
    assert_eq!(compile["result"]["shared_bytes"], 344_320);
    let fix = &launch["fix"];
    let pass = fix["pass"].as_str().unwrap();
    let options = pass
        .strip_prefix("pass kernel_options=")
        .and_then(|p| p.strip_suffix(" to flex_attention"))
        .unwrap_or_else(|| panic!("{pass}"));
    let parsed: Value = serde_json::from_str(options).unwrap();
    assert!(
        parsed["fwd_BLOCK_M"].as_u64().unwrap() < 64
            || parsed["fwd_BLOCK_N"].as_u64().unwrap() < 64,
        "{pass}"
    );
    let named = fix["fits"][0]["shared_bytes"].as_u64().unwrap();
    let (run, again) = capture_path(
        emulate_python(),
        &example,
        "rtx-pro-6000",
        &["--", "192", "fp32", "--kernel-options", options],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let (applied, bytes) = template(&again["targets"][0]);
    assert_eq!(applied["verdict"], "fits");
    assert_eq!(bytes["result"]["shared_bytes"], named);
    assert_eq!(bytes["inductor_shared"], named);
}

/// What every target of the capture holds: no failure, every kind of kernel the script makes,
/// the training step's backward, and Inductor's bytes equal to tilefit's on every compile.
fn check_target(target: &Value) {
    let device = target["device"]["device"].as_str().unwrap();
    assert!(
        target["failures"].as_array().unwrap().is_empty(),
        "{device}: {}\n{}",
        target["failures"],
        target["errors"]
    );
    // Every kind the script makes: the row reduction, the layer norm's persistent reductions,
    // the template, and the pointwise kernels of flex attention's block mask.
    let kinds: BTreeSet<&str> = target["launches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["inductor"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        BTreeSet::from(["persistent-reduction", "pointwise", "reduction", "template"]),
        "{device}"
    );
    // The training step's backward kernels are Inductor's too (layer norm's backward).
    assert!(
        target["launches"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["inductor"]["kernel"]
                .as_str()
                .unwrap()
                .contains("native_layer_norm_backward")),
        "{device}: no backward kernel"
    );
    // Inductor compiled each config for the emulated arch in the script's process; tilefit
    // compiled it again from the captured launch: the same bytes.
    for compile in target["compiles"].as_array().unwrap() {
        assert_eq!(
            compile["inductor_shared"], compile["result"]["shared_bytes"],
            "{device}: {}",
            compile["kernel"]["function"]
        );
    }
}

/// `tilefit capture fixtures/capture/SCRIPT --targets TARGETS --json ... [extra]` with the
/// emulation's Python: the run and its JSON report.
fn capture(script: &str, targets: &str, extra: &[&str]) -> (super::Run, Value) {
    capture_with(emulate_python(), script, targets, extra)
}

/// [`capture`] with another Python (another torch release).
fn capture_with(python: &Path, script: &str, targets: &str, extra: &[&str]) -> (super::Run, Value) {
    capture_path(python, &fixture_script(script), targets, extra)
}

/// [`capture_with`] of a script anywhere.
fn capture_path(python: &Path, path: &Path, targets: &str, extra: &[&str]) -> (super::Run, Value) {
    let script = path.file_name().unwrap().to_str().unwrap();
    let dir = scratch(&format!("capture-inductor-{script}"));
    let json = dir.join("report.json");
    let mut args = vec![
        "capture",
        path.to_str().unwrap(),
        "--targets",
        targets,
        "--python",
        python.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend(extra);
    let run = tilefit_with(&args, None, &[("TILEFIT_CACHE_DIR", dir.as_path())]);
    let report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (run, report)
}

fn fixture_script(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/capture/{name}"))
}
