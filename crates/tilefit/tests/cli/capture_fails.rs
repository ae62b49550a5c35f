//! `tilefit capture` fails closed: each way a script's run can end, with its exit code and the
//! report's line (`fixtures/capture/fails.py MODE`, the real torch and Triton).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::{Run, emulate_python, scratch, tilefit_with};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/capture")
}

fn args_for<'a>(json: &'a str, python: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "capture",
        "--targets",
        "h100",
        "--python",
        python,
        "--jobs",
        "1",
        "--json",
        json,
    ];
    args.extend(extra);
    args
}

/// `tilefit capture fails.py MODE --targets h100 [extra]`: the run and the report.
fn run_mode(mode: &str, extra: &[&str]) -> (Run, Value) {
    let cache = scratch(&format!("capture-fails-{mode}"));
    let json = cache.join("report.json");
    let python = emulate_python();
    let script = fixtures().join("fails.py");
    let mut args = args_for(json.to_str().unwrap(), python.to_str().unwrap(), extra);
    args.extend([script.to_str().unwrap(), "--", mode]);
    let run = tilefit_with(&args, None, &[("TILEFIT_CACHE_DIR", &cache)]);
    let report = std::fs::read_to_string(&json)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    (run, report)
}

fn failures(report: &Value) -> Vec<(String, String)> {
    report["targets"][0]["failures"]
        .as_array()
        .map(|all| {
            all.iter()
                .map(|f| {
                    (
                        f["code"].as_str().unwrap().to_owned(),
                        f["message"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn line_of(needle: &str) -> usize {
    let source = std::fs::read_to_string(fixtures().join("fails.py")).unwrap();
    source.lines().position(|l| l.contains(needle)).unwrap() + 1
}

/// One row of the failure table: a mode of `fails.py`, its flags, the exit code, the failure's
/// code and words its line holds.
struct Row {
    mode: &'static str,
    extra: Vec<&'static str>,
    code: i32,
    failure: Option<&'static str>,
    words: Vec<String>,
}

fn row(mode: &'static str, code: i32, failure: Option<&'static str>, words: &[&str]) -> Row {
    Row {
        mode,
        extra: Vec::new(),
        code,
        failure,
        words: words.iter().map(|w| (*w).to_owned()).collect(),
    }
}

fn check(row: &Row, run: &Run, report: &Value, took: std::time::Duration) {
    let mode = row.mode;
    let found = failures(report);
    assert_eq!(run.code, row.code, "{mode}: {found:?}\n{}", run.stderr);
    match row.failure {
        None => assert!(found.is_empty(), "{mode}: {found:?}"),
        Some(failure) => {
            let line = found
                .iter()
                .find(|(c, _)| c == failure)
                .unwrap_or_else(|| panic!("{mode}: no {failure} in {found:?}"));
            for word in &row.words {
                assert!(
                    line.1.contains(word.as_str()),
                    "{mode}: `{word}` in {line:?}"
                );
            }
            // The terminal shows the same line.
            assert!(
                run.stdout.contains(&format!("FAILED ({failure})")),
                "{mode}: {}",
                run.stdout
            );
        }
    }
    // The script's own output streams live, prefixed by its target.
    assert!(
        run.stderr.contains(&format!("[h100] mode {mode}")),
        "{mode}: {}",
        run.stderr
    );
    if mode == "grandchild" {
        assert!(
            took.as_secs() < 120,
            "a grandchild held the run for {took:?}"
        );
    }
    if mode == "flood" {
        // 64 MiB written (8 times the bound); the terminal shows a bounded part, the report the
        // count and tail.
        assert!(
            run.stderr.len() < 8 << 20,
            "{} bytes echoed",
            run.stderr.len()
        );
        // Its 2^16 lines and the mode's line were counted (stderr's warnings come on top),
        // and the report keeps the last ones.
        let script = &report["targets"][0]["script"];
        assert!(script["lines"].as_u64().unwrap() >= 65_537, "{script}");
        let last = script["stdout_tail"].as_array().unwrap().last().unwrap();
        assert_eq!(last.as_str().unwrap().len(), 1023);
    }
}

#[test]
fn each_way_a_script_ends_has_its_exit_code_and_its_line() {
    // The everyday rows: a clean end, the script's errors, a status, a crash, records lost, an
    // empty run, a launch not judged and a compile error. The exhaustive tier adds the slow
    // ends (a time limit, a grandchild holding the pipes, a flood of output, signals).
    let raise_at = format!("fails.py:{}", line_of("settings[\"missing\"]"));
    let import_at = format!(
        "fails.py:{}",
        line_of("import tilefit_fixture_no_such_module")
    );
    // Nothing launched, nothing to write: `--emit-spec` says so and makes no folder.
    let unwritten = scratch("capture-fails-empty-specs").join("specs");
    let unwritten_arg: &'static str = Box::leak(unwritten.display().to_string().into_boxed_str());
    let mut empty = row("empty", 1, Some("empty"), &["nothing was launched"]);
    empty.extra = vec!["--emit-spec", unwritten_arg];
    ends(
        vec![
            row("clean", 0, None, &[]),
            row(
                "import-error",
                1,
                Some("script-error"),
                &["ModuleNotFoundError", &import_at],
            ),
            row("raise", 1, Some("script-error"), &["KeyError", &raise_at]),
            row(
                "assert",
                1,
                Some("script-error"),
                &["AssertionError", "FakeTensor"],
            ),
            row("exit4", 1, Some("exit-status"), &["status 4"]),
            row("segfault", 1, Some("signal"), &["SIGSEGV", "a crash"]),
            row(
                "os-exit0",
                1,
                Some("records"),
                &["without tilefit's records"],
            ),
            empty,
            row("not-judged", 1, Some("not-judged"), &["cpu tensor"]),
            row("compile-error", 1, Some("compile-error"), &["arange"]),
        ],
        None,
    );
    assert!(!unwritten.exists(), "an empty --emit-spec folder was made");
}

#[test]
#[ignore = "exhaustive tier: .ci/run runs it with `-- --ignored`"]
fn the_slow_ways_a_script_ends_have_their_exit_codes_and_lines() {
    // The hang runs after the others, alone, so that its limit can be short and still leave
    // the script time to start under the other captures' load.
    let mut hang = row("hang", 1, Some("timeout"), &["time limit"]);
    hang.extra = vec!["--script-timeout", "20"];
    ends(
        vec![
            row("os-exit3", 1, Some("exit-status"), &["status 3"]),
            row("signal", 1, Some("signal"), &["SIGKILL"]),
            // The grandchild is a Python of the run, killed with the script before it could
            // write its records: it fails the run, named.
            row(
                "grandchild",
                1,
                Some("child"),
                &["python -c", "without writing its records"],
            ),
            row("flood", 0, None, &[]),
        ],
        Some(hang),
    );
}

/// Capture `fails.py` in each row's mode at once (then `last`, alone) and check each run.
fn ends(table: Vec<Row>, last: Option<Row>) {
    let timed = |row: &Row| {
        let started = std::time::Instant::now();
        let (run, report) = run_mode(row.mode, &row.extra);
        (run, report, started.elapsed())
    };
    let mut results: Vec<(Run, Value, std::time::Duration)> = std::thread::scope(|scope| {
        let handles: Vec<_> = table
            .iter()
            .map(|row| scope.spawn(move || timed(row)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut table = table;
    if let Some(row) = last {
        results.push(timed(&row));
        table.push(row);
    }
    for (row, (run, report, took)) in table.iter().zip(&results) {
        check(row, run, report, *took);
        if row.mode == "empty" {
            assert!(
                run.stderr.contains("--emit-spec: no probe spec to write"),
                "{}",
                run.stderr
            );
        }
    }
}

#[test]
fn an_unknown_target_is_refused_before_any_run() {
    let (run, report) = run_mode("clean", &["--targets", "no-such-gpu"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("no-such-gpu"), "{}", run.stderr);
    assert!(!run.stderr.contains("[h100]"), "{}", run.stderr);
    assert_eq!(report, Value::Null);
}

#[test]
fn a_pytest_collection_error_fails_the_target() {
    let cache = scratch("capture-fails-collection");
    let json = cache.join("report.json");
    let python = emulate_python();
    let suite = fixtures().join("collection_error");
    let mut args = args_for(
        json.to_str().unwrap(),
        python.to_str().unwrap(),
        &["--module", "pytest"],
    );
    args.extend([
        "--",
        "-q",
        "-p",
        "no:cacheprovider",
        suite.to_str().unwrap(),
    ]);
    let run = tilefit_with(&args, None, &[("TILEFIT_CACHE_DIR", &cache)]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let found = failures(&report);
    assert!(
        found
            .iter()
            .any(|(c, m)| c == "exit-status" && m.contains("status 2")),
        "{found:?}"
    );
}

#[test]
fn ctrl_c_kills_the_script_and_marks_the_report_incomplete() {
    let cache = scratch("capture-fails-sigint");
    let json = cache.join("report.json");
    let python = emulate_python();
    let script = fixtures().join("fails.py");
    let child = Command::new(env!("CARGO_BIN_EXE_tilefit"))
        .args(args_for(
            json.to_str().unwrap(),
            python.to_str().unwrap(),
            &["--targets", "h100,rtx-pro-6000"],
        ))
        .args([script.to_str().unwrap(), "--", "wait-for-ctrl-c"])
        .env("TILEFIT_CACHE_DIR", &cache)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the script is running (its first line), then Ctrl-C.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let pid = child.id();
    let mut running = false;
    while std::time::Instant::now() < deadline && !running {
        std::thread::sleep(std::time::Duration::from_millis(500));
        running = std::fs::read_dir("/proc").unwrap().any(|e| {
            let Ok(e) = e else { return false };
            std::fs::read_to_string(e.path().join("cmdline"))
                .is_ok_and(|c| c.contains("_capture_main") && c.contains("wait-for-ctrl-c"))
        });
    }
    assert!(running, "the script never started");
    std::thread::sleep(std::time::Duration::from_secs(2));
    let status = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["incomplete"], true);
    assert_eq!(
        report["targets"].as_array().unwrap().len(),
        1,
        "the second target never ran"
    );
    assert!(failures(&report).iter().any(|(c, _)| c == "cancelled"));
    // The script and what it started are gone.
    let left = std::fs::read_dir("/proc").unwrap().any(|e| {
        let Ok(e) = e else { return false };
        std::fs::read_to_string(e.path().join("cmdline"))
            .is_ok_and(|c| c.contains("_capture_main") && c.contains("wait-for-ctrl-c"))
    });
    assert!(!left, "the script outlived the run");
}

#[test]
fn an_exception_s_text_is_one_escaped_line_in_every_format() {
    let (run, report) = run_mode("hostile-error", &[]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(report.is_object(), "{}", run.stderr);
    let saved = super::scratch_root()
        .join("capture-fails-hostile-error")
        .join("report.json");
    for format in ["terminal", "markdown", "github"] {
        let shown = tilefit_with(
            &["report", saved.to_str().unwrap(), "--output-format", format],
            None,
            &[],
        );
        let all = format!("{}{}", shown.stdout, shown.stderr);
        assert!(all.contains("RuntimeError"), "{format}: {all}");
        super::assert_no_forged_lines(&all, format, "# Injected");
        for line in all.lines() {
            assert!(!line.starts_with("```"), "{format}: {line}");
            if format == "markdown" {
                assert!(!line.contains("<details><summary>y"), "{format}: {line}");
            }
        }
    }
}
