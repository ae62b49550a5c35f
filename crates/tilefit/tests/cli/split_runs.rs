//! A test suite at CI speed: its tests split over processes (`--jobs`), over shards (`--shard
//! K/N`, put back by `tilefit merge`) and run through pytest's own options (`-n`, `--junitxml`),
//! each equal to the serial run launch for launch, compile for compile, test for test; and the
//! JUnit file read back by a JUnit parser (`junit-parser`): a case per test and device, the
//! failures carrying the kernel, the bytes, the budget and the fix. The suite is
//! `fixtures/capture/split_suite`: real torch, real Triton, real processes.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::capture::{fixture, repo};
use super::{Run, emulate_python, scratch, tilefit_with};

const TARGETS: &str = "rtx-pro-6000,h100";

/// `tilefit capture --module pytest` on the suite with `extra` options, its JSON written to
/// `json`; compiles cached in `cache` (shared by the runs of a test, as a CI cache would be).
fn capture(cache: &Path, json: &Path, extra: &[&str]) -> Run {
    let suite = fixture("split_suite");
    let mut args = vec![
        "capture",
        "--module",
        "pytest",
        "--targets",
        TARGETS,
        "--python",
        emulate_python().to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&[
        "--",
        "-p",
        "tilefit.pytest_plugin",
        "-p",
        "no:cacheprovider",
    ]);
    args.extend_from_slice(&["-q", suite.to_str().unwrap()]);
    let python_path = repo().join("python");
    tilefit_with(
        &args,
        None,
        &[("TILEFIT_CACHE_DIR", cache), ("PYTHONPATH", &python_path)],
    )
}

/// The report without what differs between two runs of the same suite by nature: times, the
/// processes' exits and output, where and whether a compile was cached, the tool and its workers.
fn judged(report: &Value) -> Value {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                for key in [
                    "seconds",
                    "compile_seconds",
                    "cached",
                    "binary",
                    "script",
                    "tool",
                    "workers",
                ] {
                    map.remove(key);
                }
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut value = report.clone();
    strip(&mut value);
    value
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn launches(report: &Value) -> u64 {
    report["targets"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["launches"].as_array().unwrap())
        .map(|l| l["count"].as_u64().unwrap())
        .sum()
}

#[test]
fn a_suite_split_over_processes_and_over_shards_gives_the_serial_runs_report() {
    let dir = scratch("split-runs");
    let cache = dir.join("cache");
    let serial = dir.join("serial.json");
    let run = capture(&cache, &serial, &["--jobs", "1"]);
    // A launch over the RTX PRO 6000's budget, and a test that fails for real: exit 1.
    assert_eq!(run.code, 1, "{}\n{}", run.stderr, run.stdout);
    let whole = read(&serial);
    assert_eq!(whole["targets"][0]["tests"].as_array().unwrap().len(), 12);
    assert!(launches(&whole) > 20, "{whole}");

    // Four processes: each target's tests in two.
    let parallel = dir.join("parallel.json");
    let junit = dir.join("parallel.xml");
    let run = capture(
        &cache,
        &parallel,
        &["--jobs", "4", "--junit", junit.to_str().unwrap()],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("its tests in 2 processes"),
        "{}",
        run.stderr
    );
    assert_eq!(judged(&read(&parallel)), judged(&whole));

    // Three shards, each its share of both targets' tests, merged.
    let mut shards: Vec<PathBuf> = Vec::new();
    for k in 1..=3 {
        let shard = dir.join(format!("shard-{k}.json"));
        let run = capture(
            &cache,
            &shard,
            &["--jobs", "2", "--shard", &format!("{k}/3")],
        );
        assert!(run.code <= 1, "shard {k}: {}", run.stderr);
        let report = read(&shard);
        assert_eq!(report["shard"]["index"], k, "{report}");
        assert!(report["targets"][0]["records"].is_object());
        shards.push(shard);
    }
    let merged = dir.join("merged.json");
    let merged_junit = dir.join("merged.xml");
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(|s| s.to_str().unwrap()));
    args.extend([
        "--json",
        merged.to_str().unwrap(),
        "--junit",
        merged_junit.to_str().unwrap(),
    ]);
    let run = tilefit_with(&args, None, &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("merged 3 capture shards"),
        "{}",
        run.stderr
    );
    assert_eq!(judged(&read(&merged)), judged(&whole));

    // A shard missing is refused, naming it.
    let run = tilefit_with(
        &[
            "merge",
            shards[0].to_str().unwrap(),
            shards[2].to_str().unwrap(),
        ],
        None,
        &[],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("2/3"), "{}", run.stderr);

    // A shard of another checkout of the suite (one more test collected) is refused.
    let mut other = read(&shards[2]);
    let collected = other["targets"][0]["records"]["collected"]
        .as_u64()
        .unwrap();
    assert_eq!(collected, 12);
    other["targets"][0]["records"]["collected"] = (collected + 1).into();
    let other_path = dir.join("shard-3-other.json");
    std::fs::write(&other_path, other.to_string()).unwrap();
    let run = tilefit_with(
        &[
            "merge",
            shards[0].to_str().unwrap(),
            shards[1].to_str().unwrap(),
            other_path.to_str().unwrap(),
        ],
        None,
        &[],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("ran different suites"),
        "{}",
        run.stderr
    );

    for file in [&junit, &merged_junit] {
        junit_cases_are_tests_times_devices(file);
    }
}

/// The JUnit file, read by a JUnit parser: every test on every device is a case; the launches
/// over the RTX PRO 6000's budget fail their tests there with the bytes, the budget and the fix;
/// the test that fails for real fails on both; the one marked to fail is skipped.
fn junit_cases_are_tests_times_devices(path: &Path) {
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let suites = junit_parser::from_reader(file)
        .unwrap_or_else(|e| panic!("{}: not JUnit: {e}", path.display()));
    assert_eq!(suites.suites.len(), 2, "{suites:?}");
    assert_eq!(suites.tests, 24);
    for suite in &suites.suites {
        assert_eq!(suite.cases.len(), 12, "{}", suite.name);
        let device = suite.name.split(' ').next().unwrap();
        for case in &suite.cases {
            // The parser names a case `classname::name`; `original_name` is the name written.
            assert!(
                case.original_name.ends_with(&format!("[{device}]")),
                "{}",
                case.original_name
            );
            assert!(
                case.file
                    .as_deref()
                    .is_some_and(|f| f.ends_with("test_tiles.py"))
            );
            assert!(case.line.is_some_and(|l| l > 1), "{case:?}");
        }
        let failing: Vec<&str> = suite
            .cases
            .iter()
            .filter(|c| c.status.is_failure())
            .map(|c| c.original_name.as_str())
            .collect();
        let skipped = suite.cases.iter().filter(|c| c.status.is_skipped()).count();
        // The skipped test and the one marked to fail.
        assert_eq!(skipped, 2, "{}", suite.name);
        if device == "rtx-pro-6000" {
            assert_eq!(
                failing,
                [
                    "test_tiles[128-1] [rtx-pro-6000]",
                    "test_tiles[128-2] [rtx-pro-6000]",
                    "test_tiles[128-3] [rtx-pro-6000]",
                    "test_check_between_launches [rtx-pro-6000]",
                    "test_fails_for_real [rtx-pro-6000]"
                ],
                "{}",
                path.display()
            );
            let over = suite
                .cases
                .iter()
                .find(|c| c.original_name == "test_tiles[128-2] [rtx-pro-6000]")
                .unwrap();
            let failure = over.status.failure_as_ref();
            assert_eq!(failure.failure_type, "over-budget");
            assert!(
                failure.message.contains("needs 131072 bytes")
                    && failure.message.contains("allows 101376")
                    && failure.message.contains("fix: pass BLOCK_M=64"),
                "{}",
                failure.message
            );
        } else {
            assert_eq!(failing, [format!("test_fails_for_real [{device}]")]);
        }
    }
}

#[test]
fn pytest_takes_its_own_options_for_workers_shards_and_junit() {
    let dir = scratch("split-runs-pytest");
    let suite = fixture("split_suite");
    let junit = dir.join("pytest.xml");
    let json = dir.join("shard.json");
    let out = std::process::Command::new(emulate_python())
        .args(["-m", "pytest", "-p", "tilefit.pytest_plugin"])
        .arg(format!("--tilefit-emulate={TARGETS}"))
        .arg(&suite)
        .args(["--junitxml", "pytest.xml", "--tilefit-json", "shard.json"])
        .args(["--tilefit-shard", "2/2"])
        .arg("--tilefit-bin")
        .arg(env!("CARGO_BIN_EXE_tilefit"))
        .env("PYTHONPATH", repo().join("python"))
        .env("TILEFIT_CACHE_DIR", &dir)
        .current_dir(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.code().is_some_and(|c| c <= 1), "{stdout}");
    // tilefit's own lines as they come: each device started, its tests done and left.
    assert!(stdout.contains("as if on rtx-pro-6000"), "{stdout}");
    assert!(stdout.contains("tests done, 0 left"), "{stdout}");
    let report = read(&json);
    assert_eq!(report["shard"]["count"], 2);
    // Shard 2 of 2 runs the tests 1, 3, 5... of the first target and 0, 2, 4... of the second.
    let tests = |t: usize| report["targets"][t]["tests"].as_array().unwrap().len();
    assert_eq!((tests(0), tests(1)), (6, 6), "{report}");
    let file = std::io::BufReader::new(std::fs::File::open(&junit).unwrap());
    let suites = junit_parser::from_reader(file).unwrap();
    assert_eq!(suites.tests, 12, "{suites:?}");
}
