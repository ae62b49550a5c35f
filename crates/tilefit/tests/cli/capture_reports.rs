//! A capture's JSON is a report like the others: `tilefit report` renders and gates it again,
//! `--baseline` adopts its findings, `tilefit diff` compares two captures of one script.

use std::path::Path;

use serde_json::Value;

use super::{emulate_python, scratch, tilefit_with};

#[test]
fn report_baseline_and_diff_read_capture_reports() {
    let dir = scratch("capture-reports");
    let old = dir.join("old.json");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/capture/kernels.py");
    let env = [("TILEFIT_CACHE_DIR", dir.as_path())];
    let captured = tilefit_with(
        &[
            "capture",
            script.to_str().unwrap(),
            "--targets",
            "rtx-pro-6000,a100",
            "--python",
            emulate_python().to_str().unwrap(),
            "--json",
            old.to_str().unwrap(),
        ],
        None,
        &env,
    );
    assert_eq!(captured.code, 1, "{}", captured.stderr);
    let old_text = old.to_str().unwrap();

    // Rendered again: the same table, the same exit.
    let report = tilefit_with(&["report", old_text], None, &env);
    assert_eq!(report.code, 1, "{}", report.stderr);
    assert!(
        report
            .stdout
            .contains("deep_matmul would miss rtx-pro-6000"),
        "{}",
        report.stdout
    );
    assert!(
        report.stdout.contains("fix for deep_matmul"),
        "{}",
        report.stdout
    );
    let markdown = tilefit_with(
        &["report", old_text, "--output-format", "markdown"],
        None,
        &env,
    );
    assert!(
        markdown.stdout.contains("deep_matmul"),
        "{}",
        markdown.stdout
    );

    // Adopted as a baseline: its findings no longer fail.
    let adopted = tilefit_with(&["report", old_text, "--baseline", old_text], None, &env);
    assert_eq!(adopted.code, 0, "{}", adopted.stderr);

    // Diffed with itself: nothing changed.
    let same = tilefit_with(&["diff", old_text, old_text], None, &env);
    assert_eq!(same.code, 0, "{}", same.stderr);
    assert!(same.stdout.contains("0 of "), "{}", same.stdout);

    // A capture where matmul's first config grew past the A100's budget: the diff breaks.
    let mut grown: Value = serde_json::from_str(&std::fs::read_to_string(&old).unwrap()).unwrap();
    let a100 = grown["targets"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t["device"]["device"] == "a100")
        .unwrap();
    let compile = a100["compiles"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["kernel"]["function"] == "matmul" && c["result"]["shared_bytes"] == 131_072)
        .unwrap();
    compile["result"]["shared_bytes"] = Value::from(200_000);
    for verdict in compile["result"]["verdicts"].as_array_mut().unwrap() {
        verdict["verdict"] = Value::from("over-budget");
        verdict["over_by"] = Value::from(200_000 - verdict["budget"].as_u64().unwrap());
    }
    let new = dir.join("new.json");
    std::fs::write(&new, grown.to_string()).unwrap();
    let diff = tilefit_with(&["diff", old_text, new.to_str().unwrap()], None, &env);
    assert_eq!(diff.code, 1, "{}\n{}", diff.stdout, diff.stderr);
    assert!(diff.stdout.contains("kernel=matmul"), "{}", diff.stdout);
    assert!(
        diff.stdout.contains("a100 fits -> over-budget (BREAKS)"),
        "{}",
        diff.stdout
    );
}

/// `tilefit capture stages.py MATMUL STAGES --targets rtx-pro-6000 --json FILE`.
fn capture_stages(dir: &Path, stages: &str) -> (super::Run, std::path::PathBuf) {
    let json = dir.join(format!("stages-{stages}.json"));
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/capture");
    let matmul = fixtures.join("../../../../../examples/matmul/matmul.py");
    let run = tilefit_with(
        &[
            "capture",
            fixtures.join("stages.py").to_str().unwrap(),
            "--targets",
            "rtx-pro-6000",
            "--python",
            emulate_python().to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--",
            matmul.to_str().unwrap(),
            stages,
        ],
        None,
        &[("TILEFIT_CACHE_DIR", dir)],
    );
    (run, json)
}

#[test]
fn a_launch_whose_new_config_crashes_breaks_the_diff() {
    let dir = scratch("capture-diff-stages");
    let (before, old) = capture_stages(&dir, "3");
    assert_eq!(before.code, 0, "{}\n{}", before.stdout, before.stderr);
    let (after, new) = capture_stages(&dir, "5");
    assert_eq!(after.code, 1, "{}\n{}", after.stdout, after.stderr);
    let diff = tilefit_with(
        &["diff", old.to_str().unwrap(), new.to_str().unwrap()],
        None,
        &[("TILEFIT_CACHE_DIR", dir.as_path())],
    );
    assert_eq!(diff.code, 1, "{}\n{}", diff.stdout, diff.stderr);
    assert!(
        diff.stdout.contains("launched at=stages.py:"),
        "{}",
        diff.stdout
    );
    assert!(
        diff.stdout
            .contains("rtx-pro-6000 fits -> over-budget (BREAKS)"),
        "{}",
        diff.stdout
    );
}
