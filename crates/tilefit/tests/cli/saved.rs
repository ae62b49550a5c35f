//! Saved reports from before a change render and gate exactly as they did: every report in
//! `fixtures/saved/` (the examples' probes, a replay, a report of an older schema) runs through
//! `tilefit report` in each format and gate, and must give the golden's stdout, stderr, exit code
//! and written files. The goldens were recorded with the binary of the version before issue 25's
//! restructure (`scripts/saved_report_goldens.py`); this test never rewrites them.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The repository root: the reports name their kernel and config files relative to it.
fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn digest(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    use std::fmt::Write as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .fold(String::new(), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// One scenario, run as the golden script ran it; its differences from the golden.
fn check(scenario: &Value, scratch: &Path) -> Vec<String> {
    let out = scratch.to_str().unwrap();
    let field = |key: &str| scenario[key].as_str().unwrap_or_default().to_owned();
    let args: Vec<String> = scenario["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().replace("{out}", out))
        .collect();
    let mut command = Command::new(env!("CARGO_BIN_EXE_tilefit"));
    command.args(&args).current_dir(root()).env("NO_COLOR", "1");
    for (key, _) in std::env::vars() {
        if key.starts_with("GITHUB_") || key.starts_with("TILEFIT_") {
            command.env_remove(key);
        }
    }
    for (key, value) in scenario["env"].as_object().unwrap() {
        command.env(key, value.as_str().unwrap().replace("{out}", out));
    }
    let done = command.output().unwrap();
    let stdout = String::from_utf8(done.stdout).unwrap();
    let stderr = String::from_utf8(done.stderr)
        .unwrap()
        .replace(out, "{out}");
    let stdout = if field("name") == "json" {
        format!("sha256:{}", digest(stdout.as_bytes()))
    } else {
        stdout
    };
    let mut problems = Vec::new();
    let name = field("name");
    let golden_code = scenario["code"]
        .as_i64()
        .and_then(|c| i32::try_from(c).ok());
    if done.status.code() != golden_code {
        problems.push(format!(
            "{name}: exit {:?}, golden {}",
            done.status.code(),
            scenario["code"]
        ));
    }
    for (what, got, want) in [
        ("stdout", &stdout, field("stdout")),
        ("stderr", &stderr, field("stderr")),
    ] {
        if *got != want {
            let first = got
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| got.lines().count().min(want.lines().count()));
            problems.push(format!(
                "{name}: {what} differs from line {}:\n  now:    {:?}\n  golden: {:?}",
                first + 1,
                got.lines().nth(first),
                want.lines().nth(first)
            ));
        }
    }
    // The cliff map says when it was made (to the minute): that line is not compared.
    let date = regex::bytes::Regex::new(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC").unwrap();
    for (file, want) in scenario["files"].as_object().unwrap() {
        let got = std::fs::read(scratch.join(file))
            .ok()
            .map(|b| digest(&date.replace_all(&b, b"{date}".as_slice())));
        if got.as_deref() != want.as_str() {
            problems.push(format!("{name}: {file} is {got:?}, golden {want}"));
        }
    }
    problems
}

#[test]
fn saved_reports_render_and_gate_as_the_version_before() {
    let folder = root().join("crates/tilefit/tests/fixtures/saved");
    let mut goldens: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".golden.json"))
        .collect();
    goldens.sort();
    assert!(goldens.len() >= 7, "the goldens are missing: {goldens:?}");
    let mut problems = Vec::new();
    let mut checked = 0;
    for golden in &goldens {
        let golden: Value = serde_json::from_slice(&std::fs::read(golden).unwrap()).unwrap();
        for scenario in golden["scenarios"].as_array().unwrap() {
            let scratch = crate::scratch(&format!(
                "saved-{}-{}",
                golden["report"].as_str().unwrap(),
                scenario["name"].as_str().unwrap()
            ));
            for problem in check(scenario, &scratch) {
                problems.push(format!("{}: {problem}", golden["report"]));
            }
            checked += 1;
        }
    }
    assert!(checked >= 60, "only {checked} scenarios");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
