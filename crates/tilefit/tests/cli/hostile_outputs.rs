//! Every output file as a hostile checkout or a hostile script could set it up: `--json`,
//! `--html` and `--emit-configs` at a link or a FIFO, `--emit-spec` below a link or with a stale
//! link in its folder (the report and its JSON come first and are never lost), and a captured
//! script whose strings hold tabs, carriage returns and ANSI colours: its records are read whole
//! and the report tilefit wrote is read back by `report`, `--baseline` and `diff`, where a new
//! capture that failed closed fails the diff.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{Run, emulate_python, fixture, scratch, tilefit_with};

/// Run `tilefit ARGS`, killed after `limit` (a regression that blocks on a FIFO fails the test
/// instead of hanging the suite).
fn tilefit_within(args: &[&str], limit: Duration) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tilefit"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tilefit binary starts");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("tilefit {args:?} ran past {limit:?}: it blocked on an output");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().expect("exited, not killed by a signal"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success());
}

#[test]
fn output_files_never_follow_a_link_nor_block_on_a_fifo() {
    let dir = scratch("outputs-links-fifos");
    let report = fixture("reports/mla_probe.json");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "keep").unwrap();
    for flag in ["--json", "--html", "--emit-configs"] {
        let link = dir.join(format!("link{flag}"));
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let run = tilefit_within(
            &["report", &report, flag, link.to_str().unwrap()],
            Duration::from_secs(60),
        );
        assert_eq!(run.code, 2, "{flag}: {}", run.stderr);
        assert!(
            run.stderr.contains("symbolic link"),
            "{flag}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains(&format!("link{flag}")),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("hint: "), "{}", run.stderr);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep", "{flag}");

        let fifo = dir.join(format!("fifo{flag}"));
        mkfifo(&fifo);
        let run = tilefit_within(
            &["report", &report, flag, fifo.to_str().unwrap()],
            Duration::from_secs(60),
        );
        assert_eq!(run.code, 2, "{flag}: {}", run.stderr);
        assert!(run.stderr.contains("a FIFO"), "{flag}: {}", run.stderr);
        assert!(
            run.stderr.contains("hint: name a regular file"),
            "{}",
            run.stderr
        );
    }
    // A folder on the way that is a link: nothing written where it points.
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join("out")).unwrap();
    let through = dir.join("out/report.json");
    let run = tilefit_within(
        &["report", &report, "--json", through.to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    // A plain file is written, and replaced whole.
    let plain = dir.join("plain.json");
    std::fs::write(&plain, "old").unwrap();
    let run = tilefit_within(
        &["report", &report, "--json", plain.to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        std::fs::read_to_string(&plain)
            .unwrap()
            .contains("\"kind\": \"probe\"")
    );
}

/// `tilefit capture control_chars.py [ARGS] --targets a100 --json JSON EXTRA...`.
fn capture(dir: &Path, json: &str, script_args: &[&str], extra: &[&str]) -> Run {
    let script = fixture("capture/control_chars.py");
    let json = dir.join(json);
    let mut args = vec![
        "capture",
        &script,
        "--targets",
        "a100",
        "--python",
        emulate_python().to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend(extra);
    if !script_args.is_empty() {
        args.push("--");
        args.extend(script_args);
    }
    tilefit_with(&args, None, &[("TILEFIT_CACHE_DIR", dir)])
}

#[test]
fn emit_spec_never_follows_a_link_and_never_loses_the_report() {
    let dir = scratch("outputs-emit-spec");
    // A stale link where a spec goes: refused, after the report is printed and its JSON written.
    let specs = dir.join("specs");
    std::fs::create_dir(&specs).unwrap();
    std::os::unix::fs::symlink(dir.join("missing.toml"), specs.join("copy-a100.toml")).unwrap();
    let run = capture(
        &dir,
        "stale.json",
        &[],
        &["--emit-spec", specs.to_str().unwrap()],
    );
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("1 launch captured"), "{}", run.stdout);
    assert!(dir.join("stale.json").is_file(), "{}", run.stderr);
    assert!(run.stderr.contains("copy-a100.toml"), "{}", run.stderr);
    assert!(
        run.stderr.contains("the report above is whole"),
        "{}",
        run.stderr
    );
    assert!(!dir.join("missing.toml").exists());

    // A link among the named folder's parents: nothing written where it points.
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join("out")).unwrap();
    let below = dir.join("out/specs");
    let run = capture(
        &dir,
        "linked.json",
        &[],
        &["--emit-spec", below.to_str().unwrap()],
    );
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("symbolic link"), "{}", run.stderr);
    assert!(dir.join("linked.json").is_file(), "{}", run.stderr);
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn a_capture_with_control_characters_is_read_whole_and_back() {
    let dir = scratch("outputs-control-chars");
    let env = [("TILEFIT_CACHE_DIR", dir.as_path())];
    // The global message with a tab and a newline: one escaped field, the launch judged.
    let run = capture(&dir, "old.json", &[], &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("1 launch captured"), "{}", run.stdout);
    let old = dir.join("old.json");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&old).unwrap()).unwrap();
    let target = &json["targets"][0];
    assert_eq!(
        target["compiles"][0]["globals"]["MSG"],
        "bad\\tvalue\\nhere"
    );
    let tail = target["script"]["stdout_tail"].to_string();
    assert!(
        tail.contains("\\t") && tail.contains("\\r") && tail.contains("\\u001b"),
        "{tail}"
    );

    // The report tilefit wrote reads back: `report`, `--baseline`, `diff`.
    let old = old.to_str().unwrap();
    let report = tilefit_with(&["report", old], None, &env);
    assert_eq!(report.code, 0, "{}", report.stderr);
    assert!(!report.stdout.contains('\u{1b}'), "{}", report.stdout);
    let baseline = tilefit_with(&["report", old, "--baseline", old], None, &env);
    assert_eq!(baseline.code, 0, "{}", baseline.stderr);
    let same = tilefit_with(&["diff", old, old], None, &env);
    assert_eq!(same.code, 0, "{}", same.stderr);

    // The script raises an ANSI-coloured error after its launch: the capture fails closed, its
    // report reads back, and a diff against it fails, saying why.
    let raised = capture(&dir, "new.json", &["raise"], &[]);
    assert_eq!(raised.code, 1, "{}\n{}", raised.stdout, raised.stderr);
    let new = dir.join("new.json");
    let new = new.to_str().unwrap();
    let report = tilefit_with(&["report", new], None, &env);
    assert_eq!(report.code, 1, "{}", report.stderr);
    assert!(report.stdout.contains("script-error"), "{}", report.stdout);
    let diff = tilefit_with(&["diff", old, new], None, &env);
    assert_eq!(diff.code, 1, "{}\n{}", diff.stdout, diff.stderr);
    assert!(diff.stderr.contains("failed closed"), "{}", diff.stderr);
    assert!(diff.stderr.contains("script-error"), "{}", diff.stderr);
    assert!(!diff.stderr.contains('\u{1b}'), "{}", diff.stderr);
}
