//! Fault injection with a fake worker (the only place a fake stands in for Triton): a worker that
//! crashes, hangs, garbles its reply, dies mid-line or floods stderr fails only its own job; the
//! worker is replaced and every other result is reported. A toolchain whose Triton does not import
//! stops the run before any job, with the import error. A killed worker takes every process it
//! started with it (its process group).

use std::path::{Path, PathBuf};

use super::{Run, fixture, scratch, tilefit_with};

/// `tilefit probe` of the faults fixture with the fake worker, a fresh result cache named
/// `cache_name`, and `extra_args` / `extra_env` on top.
fn probe_with_fake_worker(
    cache_name: &str,
    extra_args: &[&str],
    extra_env: &[(&str, &Path)],
) -> Run {
    let cache = scratch(cache_name);
    let worker = PathBuf::from(fixture("fake_worker.py"));
    let spec = fixture("faults.toml");
    let python = super::python().to_str().unwrap();
    let mut args = vec!["probe", spec.as_str(), "--python", python];
    args.extend(extra_args);
    let mut env = vec![
        ("TILEFIT_CACHE_DIR", cache.as_path()),
        ("TILEFIT_WORKER_SCRIPT", worker.as_path()),
    ];
    env.extend(extra_env);
    tilefit_with(&args, None, &env)
}

#[test]
fn worker_faults_fail_only_their_job() {
    let run = probe_with_fake_worker(
        "faults",
        &["--timeout", "3", "--jobs", "2", "--json", "-"],
        &[],
    );
    assert_eq!(
        run.code, 2,
        "worker faults make the run exit 2: {}",
        run.stderr
    );
    assert!(run.stderr.contains("4 of 8 jobs failed"), "{}", run.stderr);
    let report: serde_json::Value =
        serde_json::from_str(&run.stdout).expect("the report is still printed");
    let by_fault = |fault: &str| -> Vec<&serde_json::Value> {
        report["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["config"]["FAULT"] == fault)
            .collect()
    };
    for ok in by_fault("ok") {
        assert_eq!(ok["status"], "ok");
        assert_eq!(ok["shared_bytes"], 4096);
        assert_eq!(ok["verdicts"][0]["verdict"], "fits");
    }
    let message = |fault: &str| {
        by_fault(fault)[0]["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(by_fault("crash")[0]["status"], "failed");
    assert!(
        message("crash").contains("killed by signal 11 (SIGSEGV)"),
        "{}",
        message("crash")
    );
    assert!(
        message("hang").contains("did not answer within 3 s"),
        "{}",
        message("hang")
    );
    assert!(
        message("garbage").contains("not a protocol message: this is not json"),
        "{}",
        message("garbage")
    );
    assert!(
        by_fault("half")[0]["status"] == "failed",
        "{}",
        message("half")
    );
    // Megabytes of stderr neither block the worker nor fail the job.
    assert_eq!(by_fault("flood")[0]["status"], "ok");
    assert_eq!(report["stats"]["failed"], 4);
    // The faulted cells read FAILED in the table.
}

#[test]
fn the_table_marks_failed_cells() {
    let run = probe_with_fake_worker("faults-table", &["--timeout", "2"], &[]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stdout.matches(" FAILED").count(),
        5,
        "four cells and the footer: {}",
        run.stdout
    );
    assert!(run.stdout.contains("FAULT=flood"));
}

#[test]
fn a_triton_that_does_not_import_stops_the_run() {
    let run = probe_with_fake_worker(
        "no-triton",
        &[],
        &[("FAKE_WORKER_NO_TRITON", Path::new("1"))],
    );
    assert_eq!(run.code, 2);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.contains("the compile worker could not start"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("triton does not import: ImportError: libtriton.so"),
        "{}",
        run.stderr
    );
}

#[test]
fn sigterm_mid_sweep_reaps_workers_and_keeps_what_finished() {
    interrupt_mid_sweep("-TERM");
}

#[test]
fn sigint_mid_sweep_reaps_workers_and_keeps_what_finished() {
    interrupt_mid_sweep("-INT");
}

fn interrupt_mid_sweep(signal: &str) {
    use std::io::Read as _;
    use std::process::{Command, Stdio};
    let dir = scratch(&format!("signal{signal}"));
    let pids = dir.join("pids");
    std::fs::create_dir_all(&pids).unwrap();
    let spec = dir.join("slow.toml");
    std::fs::write(
        &spec,
        format!(
            "[kernel]\nfile = {:?}\nfunction = \"scale_rows\"\n[args]\nx = \"*fp32\"\n[sweep]\nFAULT = [\"slow\"]\nBLOCK = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]\n[targets]\ndevices = [\"sm_90\"]\n",
            fixture("specialize.py")
        ),
    )
    .unwrap();
    let worker = fixture("fake_worker.py");
    let python = super::python();
    let run = |cache: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_tilefit"))
            .args([
                "probe",
                spec.to_str().unwrap(),
                "--python",
                python.to_str().unwrap(),
                "--jobs",
                "2",
                "--json",
                "-",
            ])
            .env("TILEFIT_CACHE_DIR", cache)
            .env("TILEFIT_WORKER_SCRIPT", &worker)
            .env("FAKE_WORKER_PIDS", &pids)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let cache = dir.join("cache");
    let mut child = run(&cache);
    std::thread::sleep(std::time::Duration::from_millis(3500));
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an interrupted run exits 2: {stderr}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&stdout).expect("the partial report is printed");
    assert_eq!(report["stats"]["complete"], false);
    let results = report["results"].as_array().unwrap();
    let finished = results.iter().filter(|r| r["status"] == "ok").count();
    let interrupted = results
        .iter()
        .filter(|r| r["error"]["kind"] == "interrupted")
        .count();
    assert!(
        finished >= 2 && interrupted >= 2,
        "{finished} finished, {interrupted} interrupted"
    );
    assert_eq!(finished + interrupted, 12);
    // No orphans: every worker tilefit started is gone.
    for pid in std::fs::read_dir(&pids).unwrap() {
        let pid = pid.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "worker {pid} outlived tilefit"
        );
    }
    // What finished is in the cache: a re-run compiles only the rest.
    let out = run(&cache).wait_with_output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["stats"]["cached"],
        finished,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(report["stats"]["complete"], true);
}

#[test]
fn two_runs_sharing_one_cache_both_finish_and_leave_it_whole() {
    use std::process::{Command, Stdio};
    let dir = scratch("shared-cache");
    let spec = dir.join("many.toml");
    let blocks: Vec<String> = (1..=40).map(|b| b.to_string()).collect();
    std::fs::write(
        &spec,
        format!(
            "[kernel]\nfile = {:?}\nfunction = \"scale_rows\"\n[args]\nx = \"*fp32\"\n[sweep]\nFAULT = [\"ok\"]\nBLOCK = [{}]\n[targets]\ndevices = [\"sm_90\", \"sm_120\"]\n",
            fixture("specialize.py"),
            blocks.join(", ")
        ),
    )
    .unwrap();
    let cache = dir.join("cache");
    let python = super::python();
    let start = || {
        Command::new(env!("CARGO_BIN_EXE_tilefit"))
            .args([
                "probe",
                spec.to_str().unwrap(),
                "--python",
                python.to_str().unwrap(),
                "--jobs",
                "2",
                "--json",
                "-",
            ])
            .env("TILEFIT_CACHE_DIR", &cache)
            .env("TILEFIT_WORKER_SCRIPT", fixture("fake_worker.py"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (first, second) = (start(), start());
    for child in [first, second] {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["results"].as_array().unwrap().len(), 80);
        assert!(
            report["results"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r["shared_bytes"] == 4096)
        );
    }
    // Every entry either run wrote is whole: a third run takes all 80 from the cache.
    let out = start().wait_with_output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["stats"]["cached"], 80);
    assert_eq!(report["stats"]["recomputed"], 0);
}

/// Whether a process is still running (a zombie waiting for its reaper is not).
fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|status| {
        !status
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z'))
    })
}

#[test]
fn a_killed_worker_takes_what_it_started_with_it() {
    let dir = scratch("process-group");
    let children = dir.join("children");
    std::fs::create_dir_all(&children).unwrap();
    let spec = dir.join("spawn.toml");
    std::fs::write(
        &spec,
        format!(
            "[kernel]\nfile = {:?}\nfunction = \"scale_rows\"\n[args]\nx = \"*fp32\"\n[sweep]\nFAULT = [\"spawn-and-hang\", \"ok\"]\n[targets]\ndevices = [\"sm_90\"]\n",
            fixture("specialize.py")
        ),
    )
    .unwrap();
    let cache = dir.join("cache");
    let worker = PathBuf::from(fixture("fake_worker.py"));
    let python = super::python().to_str().unwrap();
    let run = tilefit_with(
        &[
            "probe",
            spec.to_str().unwrap(),
            "--python",
            python,
            "--timeout",
            "2",
            "--jobs",
            "1",
        ],
        None,
        &[
            ("TILEFIT_CACHE_DIR", cache.as_path()),
            ("TILEFIT_WORKER_SCRIPT", worker.as_path()),
            ("FAKE_WORKER_CHILDREN", children.as_path()),
        ],
    );
    // The hung job failed alone; the other ran on a fresh worker.
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stdout.contains("did not answer within 2 s"),
        "{}",
        run.stdout
    );
    let started: Vec<String> = std::fs::read_dir(&children)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(started.len(), 1, "the worker started its child");
    // Nothing the worker started outlives it, though both ignored SIGTERM.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    while started.iter().any(|pid| running(pid)) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let left: Vec<&String> = started.iter().filter(|pid| running(pid)).collect();
    assert!(left.is_empty(), "still running: {left:?}");
}

/// One exit-code policy: a saved report read back exits as the run that wrote it, FAILED cells
/// (exit 2) and gate findings (exit 1) alike.
#[test]
fn report_exits_as_the_probe_that_wrote_it() {
    let dir = scratch("exit-policy");
    let saved = dir.join("faults.json");
    let run = probe_with_fake_worker(
        "exit-policy-cache",
        &[
            "--timeout",
            "3",
            "--jobs",
            "2",
            "--json",
            saved.to_str().unwrap(),
            "--fail-on",
            "over-budget",
        ],
        &[],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    let again = tilefit_with(
        &[
            "report",
            saved.to_str().unwrap(),
            "--fail-on",
            "over-budget",
        ],
        None,
        &[],
    );
    assert_eq!(again.code, run.code, "{}", again.stderr);
    assert!(
        again.stderr.contains("jobs failed (worker faults"),
        "{}",
        again.stderr
    );

    // Gate findings without FAILED cells: exit 1 from both.
    let cache = dir.join("cache");
    let gated = dir.join("gated.json");
    let run = super::probe(
        &fixture("field/moe_fp8.toml"),
        &cache,
        &[
            "--json",
            gated.to_str().unwrap(),
            "--fail-on",
            "over-budget",
        ],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let again = tilefit_with(
        &[
            "report",
            gated.to_str().unwrap(),
            "--fail-on",
            "over-budget",
        ],
        None,
        &[],
    );
    assert_eq!(again.code, 1, "{}", again.stderr);
    let clean = tilefit_with(&["report", gated.to_str().unwrap()], None, &[]);
    assert_eq!(clean.code, 0, "{}", clean.stderr);
}
