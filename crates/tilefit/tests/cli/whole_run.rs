//! Capture sees the whole run: the example GEMM at 5 stages (131,072 bytes: over an RTX PRO
//! 6000) launched from a thread, a pool, a thread still running when the body returns, a `fork`,
//! `spawn` or `forkserver` child, a Python `subprocess`, an engine's worker fed through a pipe,
//! past value checks, and with an argument read on the host (`fixtures/capture/whole_run.py
//! MODE`), each judged over with exit 1 and the process or thread named; and a pytest test that
//! checks values between its launches. The real torch, the real Triton, real processes.

use std::path::Path;

use serde_json::Value;

use super::capture::fixture;
use super::{Run, emulate_python, scratch, tilefit_with};

/// `tilefit capture whole_run.py --targets rtx-pro-6000 -- MODE`: the run and its report.
fn run_mode(mode: &str) -> (Run, Value) {
    let cache = scratch(&format!("whole-run-{mode}"));
    let json = cache.join("report.json");
    let script = fixture("whole_run.py");
    let args = [
        "capture",
        script.to_str().unwrap(),
        "--targets",
        "rtx-pro-6000",
        "--python",
        emulate_python().to_str().unwrap(),
        "--jobs",
        "2",
        "--json",
        json.to_str().unwrap(),
        "--",
        mode,
    ];
    let run = tilefit_with(&args, None, &[("TILEFIT_CACHE_DIR", &cache)]);
    let Ok(text) = std::fs::read_to_string(&json) else {
        panic!("{mode}: no report: {}\n{}", run.stderr, run.stdout)
    };
    (run, serde_json::from_str(&text).unwrap())
}

/// The GEMM's launch in the report: judged over at 131,072 bytes, made where `place` says.
fn gemm_judged_over(mode: &str, run: &Run, report: &Value, place: &str) -> Value {
    assert_eq!(run.code, 1, "{mode}: {}\n{}", run.stdout, run.stderr);
    let target = &report["targets"][0];
    let failures = target["failures"].as_array().unwrap();
    assert!(failures.is_empty(), "{mode}: {failures:?}\n{}", run.stdout);
    let gemm = target["launches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["kernel"]["function"] == "matmul_kernel")
        .unwrap_or_else(|| panic!("{mode}: the GEMM was lost\n{}", run.stdout))
        .clone();
    assert_eq!(gemm["verdict"], "over", "{mode}: {gemm}");
    let index = usize::try_from(gemm["compiles"][0].as_u64().unwrap()).unwrap();
    let compile = &target["compiles"][index];
    assert_eq!(
        compile["result"]["shared_bytes"], 131_072,
        "{mode}: {compile}"
    );
    let places: Vec<&str> = gemm["places"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(places, [place], "{mode}: {gemm}");
    // The table names where it was launched, unless in the main thread of the main process.
    assert_eq!(
        run.stdout.contains(&format!("[{place}]")),
        place != "main / MainThread",
        "{mode}: {}",
        run.stdout
    );
    assert!(run.stderr.contains("gate failed"), "{mode}: {}", run.stderr);
    gemm
}

#[test]
fn a_launch_from_a_thread_a_pool_or_a_fork_is_judged_with_its_place() {
    for (mode, place) in [
        ("thread", "main / gemm-thread"),
        ("pool", "main / ThreadPoolExecutor-0"),
        ("fork", "gemm-fork / MainThread"),
    ] {
        let (run, report) = run_mode(mode);
        gemm_judged_over(mode, &run, &report, place);
        if mode == "fork" {
            let children = report["targets"][0]["children"].as_array().unwrap();
            assert_eq!(children.len(), 1, "{children:?}");
            assert_eq!(children[0]["process"]["kind"], "fork");
            assert_eq!(children[0]["launches"], 1);
        }
    }
}

#[test]
#[ignore = "exhaustive: each child is a fresh Python importing torch (run in CI with --ignored)"]
fn a_launch_from_a_fresh_interpreter_or_a_late_thread_is_judged_with_its_place() {
    for (mode, place) in [
        ("thread-after-body", "main / late"),
        ("spawn", "gemm-spawn / MainThread"),
        ("forkserver", "gemm-forkserver / MainThread"),
        ("subprocess", "python whole_run.py / MainThread"),
    ] {
        let (run, report) = run_mode(mode);
        gemm_judged_over(mode, &run, &report, place);
        // The fork server itself launches nothing and is not a child of its own.
        let children: Vec<String> = report["targets"][0]["children"]
            .as_array()
            .map(|c| c.iter().map(|c| c["process"]["name"].to_string()).collect())
            .unwrap_or_default();
        let expected = usize::from(mode != "thread-after-body");
        assert_eq!(children.len(), expected, "{mode}: {children:?}");
    }
}

#[test]
#[ignore = "exhaustive: a spawned worker imports torch (run in CI with --ignored)"]
fn an_engine_worker_fed_through_a_pipe_is_judged_per_launch() {
    let (run, report) = run_mode("worker");
    let gemm = gemm_judged_over("worker", &run, &report, "engine-worker / MainThread");
    // Three requests, three launches of the same config from the worker's loop.
    assert_eq!(gemm["count"], 3, "{gemm}");
    let child = &report["targets"][0]["children"][0];
    assert_eq!(child["process"]["name"], "engine-worker");
    assert_eq!(child["process"]["kind"], "spawn");
    assert_eq!(child["launches"], 3);
}

#[test]
#[ignore = "exhaustive: children that fail (run in CI with --ignored)"]
fn a_thread_error_or_a_child_without_records_fails_closed_and_is_named() {
    let (run, report) = run_mode("thread-error");
    assert_eq!(run.code, 1, "{}", run.stdout);
    let failures = report["targets"][0]["failures"].to_string();
    assert!(failures.contains("script-error"), "{failures}");
    assert!(failures.contains("the thread broken raised"), "{failures}");
    let (run, report) = run_mode("child-killed");
    assert_eq!(run.code, 1, "{}", run.stdout);
    let failures = report["targets"][0]["failures"].to_string();
    assert!(failures.contains("\"child\""), "{failures}");
    assert!(failures.contains("python -c"), "{failures}");
    assert!(
        failures.contains("without writing its records"),
        "{failures}"
    );
}

#[test]
fn value_checks_are_passed_over_and_host_reads_are_computed() {
    // Checks before the launch: each listed as not checked at its line; the run goes on.
    let (run, report) = run_mode("checks");
    gemm_judged_over("checks", &run, &report, "main / MainThread");
    let source = std::fs::read_to_string(fixture("whole_run.py")).unwrap();
    let line_of = |needle: &str| source.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let checks: Vec<(u64, String)> = report["targets"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["line"].as_u64().unwrap(),
                c["what"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for (needle, what) in [
        (
            "torch.testing.assert_close(out, ref)",
            "torch.testing.assert_close",
        ),
        ("assert torch.allclose(out, ref)", "torch.allclose"),
        (
            "abs().max().item() < 1e-3",
            "a tensor's value read on the host",
        ),
        ("assert torch.equal(out.nonzero()", "nonzero"),
    ] {
        let line = line_of(needle) as u64;
        assert!(
            checks
                .iter()
                .any(|(l, w)| *l == line && w.starts_with(what)),
            "{needle}: {checks:?}"
        );
    }
    assert!(
        run.stdout.contains("not checked at whole_run.py:"),
        "{}",
        run.stdout
    );
    // An argument read with `.item()` from the CPU's seeded generator: computed, no assumption.
    let (run, report) = run_mode("item");
    let gemm = gemm_judged_over("item", &run, &report, "main / MainThread");
    assert!(gemm.get("assumed").is_none(), "{gemm}");
    assert!(report["targets"][0].get("assumptions").is_none());
    // The same values a real run reads: torch.manual_seed(0) on the CPU.
    let printed = run.stdout.clone() + &run.stderr;
    assert!(printed.contains("size 4064 kept 53"), "{printed}");
}

#[test]
fn a_value_drawn_on_the_device_is_assumed_and_the_launches_after_it_are_marked() {
    let (run, report) = run_mode("device-random");
    let target = &report["targets"][0];
    let assumption = &target["assumptions"][0];
    assert!(
        assumption["what"]
            .as_str()
            .unwrap()
            .contains("random numbers drawn on the device"),
        "{assumption}"
    );
    let gemm = target["launches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["kernel"]["function"] == "matmul_kernel")
        .unwrap();
    assert_eq!(gemm["assumed"]["line"], assumption["line"], "{gemm}");
    assert!(
        run.stdout
            .contains("after an assumed value at whole_run.py:"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("1 value assumed"), "{}", run.stdout);
}

/// `pytest --tilefit-emulate=rtx-pro-6000 checks_suite [extra]` with this repository's plugin.
fn pytest_suite(extra: &[&str]) -> (i32, String) {
    let cache = scratch(&format!("whole-run-pytest{}", extra.len()));
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .unwrap();
    let out = std::process::Command::new(emulate_python())
        .args([
            "-m",
            "pytest",
            "-p",
            "tilefit.pytest_plugin",
            "--tilefit-emulate=rtx-pro-6000",
        ])
        .arg(fixture("checks_suite"))
        .args(extra)
        .arg("--tilefit-bin")
        .arg(env!("CARGO_BIN_EXE_tilefit"))
        .env("PYTHONPATH", repo.join("python"))
        .env("TILEFIT_CACHE_DIR", &cache)
        .current_dir(&cache)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code().unwrap_or(-1), stdout)
}

#[test]
fn a_pytest_test_runs_past_its_checks_and_an_early_stop_fails_the_session() {
    let (code, stdout) = pytest_suite(&[]);
    assert_eq!(code, 1, "{stdout}");
    // The test that checks values and then launches reaches the GEMM.
    assert!(
        stdout.contains("matmul_kernel would miss rtx-pro-6000"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "test_checks_then_launches_the_gemm: captured, checks not checked; 2 launches, 4 checks not checked, 0 assumptions, 0 stops"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "test_reads_a_size_on_the_host_and_launches: captured, passed; 1 launch, 0 checks not checked, 0 assumptions, 0 stops"
        ),
        "{stdout}"
    );
    // A test that ends early fails the session as a script's stop does.
    assert!(stdout.contains("FAILED (stopped-early)"), "{stdout}");
    assert!(
        stdout.contains("the test ") && stdout.contains("test_needs_data_no_emulation_has stopped"),
        "{stdout}"
    );
    // --tilefit-report-only reports it without failing on it (the GEMM's miss included).
    let (code, stdout) = pytest_suite(&["--tilefit-report-only"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains("stopped at test_checks_then_launch.py:"),
        "{stdout}"
    );
    assert!(
        stdout.contains("matmul_kernel would miss rtx-pro-6000"),
        "{stdout}"
    );
}

#[test]
fn a_value_read_on_the_host_is_assumed_at_its_line_and_the_launch_after_it_is_marked() {
    // `int(x.sum().item())` of random numbers drawn on the device: the CPU draws other numbers,
    // so the value is an assumption, declared at its line, and the launch it feeds is marked.
    let (run, report) = super::capture::capture(&fixture("kernels.py"), "h100", &[], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let h100 = super::capture::target(&report, "h100");
    assert!(
        h100.get("stopped")
            .is_none_or(|s| s.as_array().unwrap().is_empty()),
        "{h100}"
    );
    let source = std::fs::read_to_string(fixture("kernels.py")).unwrap();
    let line = source
        .lines()
        .position(|l| l.contains("total = int("))
        .unwrap()
        + 1;
    let assumed = &h100["assumptions"][0];
    assert_eq!(assumed["line"], line, "{h100}");
    assert_eq!(assumed["call"], "reads a value on the host");
    assert!(
        assumed["what"]
            .as_str()
            .unwrap()
            .contains("random numbers drawn on the device"),
        "{assumed}"
    );
    // The launch in the call ran with the value, marked; the one after the call is not.
    let copies = super::capture::launches(&report, "h100", "copy");
    assert_eq!(copies.len(), 3, "{h100}");
    let marked: Vec<&Value> = copies
        .iter()
        .filter(|l| l.get("assumed").is_some())
        .copied()
        .collect();
    assert_eq!(marked.len(), 1, "{h100}");
    assert_eq!(marked[0]["assumed"]["line"], line);
    assert_eq!(h100["calls"], 2);
    assert!(
        run.stdout
            .contains(&format!("(after an assumed value at kernels.py:{line})")),
        "{}",
        run.stdout
    );
}
