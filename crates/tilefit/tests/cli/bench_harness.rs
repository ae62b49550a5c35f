//! The benchmark harness (`bench/harness.py`) run as a user runs it: from a folder holding the
//! binary's path, `bench/` and a spec, without the source tree. Every ratio it prints must come
//! from runs that worked: a baseline that crashes, compiles fewer jobs or other bytes stops it
//! with a non-zero exit and the reason (the faults are injected by baseline scripts that wrap the
//! real one); a probe whose gate exits 1 with a whole report is a run that worked.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{python, repo_file, scratch};

/// One config of the matmul example, over the RTX PRO 6000's budget and within the H100's: the
/// probe's gate (`--fail-on over-budget`) exits 1.
const SPEC: &str = r#"[kernel]
file = "matmul.py"
function = "matmul_kernel"

[args]
a_ptr = "*fp16"
b_ptr = "*fp16"
c_ptr = "*fp16"
M = { type = "i32", value = 4096 }
N = { type = "i32", value = 4096 }
K = { type = "i32", value = 4096 }
stride_am = { type = "i32", value = 4096 }
stride_ak = { type = "i32", value = 1 }
stride_bk = { type = "i32", value = 4096 }
stride_bn = { type = "i32", value = 1 }
stride_cm = { type = "i32", value = 4096 }
stride_cn = { type = "i32", value = 1 }

[constexprs]
GROUP_M = 8
BLOCK_M = 128
BLOCK_N = 256
BLOCK_K = 64

[sweep]
num_stages = [4]
num_warps = [8]

"#;

/// What a user has: `bench/` and a spec with its kernel, no `crates/`.
fn user_folder(name: &str) -> PathBuf {
    let dir = scratch(name);
    std::fs::create_dir_all(dir.join("bench")).unwrap();
    for file in ["harness.py", "baseline.py", "worker_script.py"] {
        std::fs::copy(
            repo_file(&format!("bench/{file}")),
            dir.join("bench").join(file),
        )
        .unwrap();
    }
    std::fs::create_dir_all(dir.join("spec")).unwrap();
    std::fs::copy(
        repo_file("examples/matmul/matmul.py"),
        dir.join("spec/matmul.py"),
    )
    .unwrap();
    std::fs::write(dir.join("spec/spec.toml"), SPEC).unwrap();
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    dir
}

/// A baseline script that runs the real one (`bench/baseline.py`) on the arguments it is given,
/// after `before` (Python, with `jobs_file` bound) and with its JSON line passed through `after`
/// (Python, with `line` bound to the parsed line).
fn wrapping_baseline(dir: &Path, name: &str, before: &str, after: &str) -> PathBuf {
    let path = dir.join(format!("{name}.py"));
    let real = dir.join("bench/baseline.py");
    std::fs::write(
        &path,
        format!(
            "import contextlib, hashlib, io, json, runpy, sys\n\
             jobs_file = sys.argv[2]\n\
             {before}\n\
             sys.argv = [{real:?}, sys.argv[1], jobs_file]\n\
             out = io.StringIO()\n\
             with contextlib.redirect_stdout(out):\n    runpy.run_path({real:?}, run_name='__main__')\n\
             line = json.loads(out.getvalue().splitlines()[-1])\n\
             {after}\n\
             print(json.dumps(line))\n",
            real = real.display().to_string(),
        ),
    )
    .unwrap();
    path
}

struct Harness {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `python bench/harness.py` in `dir`, one sweep of the spec on both devices with the gate on, one
/// repeat, one worker, the baseline and the cold run.
fn harness(dir: &Path, baseline: Option<&Path>) -> Harness {
    harness_of(dir, Path::new(env!("CARGO_BIN_EXE_tilefit")), baseline)
}

/// [`harness`] measuring `tilefit`.
fn harness_of(dir: &Path, tilefit: &Path, baseline: Option<&Path>) -> Harness {
    let mut command = Command::new(python());
    command
        .current_dir(dir)
        .arg("bench/harness.py")
        .arg("--tilefit")
        .arg(tilefit)
        .arg("--python")
        .arg(python())
        .args(["--workers", "1", "--repeat", "1", "--only", "ab"])
        .args(["--sweep", "one=spec/spec.toml@h100,rtx-pro-6000"])
        .args(["--fail-on", "over-budget"])
        .env("TMPDIR", dir.join("tmp"))
        .env("TILEFIT_CACHE_DIR", dir.join("tmp"))
        .env("NO_COLOR", "1");
    if let Some(baseline) = baseline {
        command.arg("--baseline").arg(baseline);
    }
    let out = command.output().unwrap();
    let run = Harness {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    // The harness cleans up after itself, whatever happened.
    let left: Vec<_> = std::fs::read_dir(dir.join("tmp"))
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            name.starts_with("tilefit-bench").then_some(name)
        })
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}\n{}", run.stderr);
    run
}

/// The harness stopped: exit 1, every one of `reasons` in what it printed, and no results.
fn stopped(run: &Harness, reasons: &[&str]) {
    assert_eq!(run.code, 1, "{}", run.stderr);
    for reason in reasons {
        assert!(run.stderr.contains(reason), "{reason}:\n{}", run.stderr);
    }
    assert!(run.stdout.is_empty(), "no results: {}", run.stdout);
}

#[test]
fn from_the_binary_alone_a_gate_that_exits_1_with_a_whole_report_is_measured() {
    let dir = user_folder("bench-gate");
    // The probe's own gate fails: one device is over its budget.
    let probe = Command::new(env!("CARGO_BIN_EXE_tilefit"))
        .current_dir(&dir)
        .args(["probe", "spec/spec.toml", "--targets", "h100,rtx-pro-6000"])
        .args(["--fail-on", "over-budget"])
        .arg("--python")
        .arg(python())
        .env("TILEFIT_CACHE_DIR", dir.join("tmp"))
        .output()
        .unwrap();
    assert_eq!(
        probe.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&probe.stderr)
    );
    let run = harness(&dir, None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let results: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let sweep = &results["sweeps"]["one"];
    assert_eq!(sweep["jobs"], 2, "{}", run.stdout);
    // The baseline's bytes were compared with the cold run's, job by job.
    assert_eq!(
        sweep["baseline_bytes_checked_against"], "b1",
        "{}",
        run.stdout
    );
    let ratio = sweep["ratios"]["b1_over_baseline"].as_f64().unwrap();
    assert!(ratio > 0.0, "{}", run.stdout);
    assert!(run.stderr.contains("one run 1: (a)"), "{}", run.stderr);
    assert!(run.stderr.contains("one run 1: (b1)"), "{}", run.stderr);
}

#[test]
fn a_baseline_that_crashes_stops_the_harness_with_its_traceback() {
    let dir = user_folder("bench-crash");
    let crash = dir.join("crash.py");
    std::fs::write(
        &crash,
        "raise ModuleNotFoundError(\"No module named 'tilefit_worker'\")\n",
    )
    .unwrap();
    let run = harness(&dir, Some(&crash));
    stopped(
        &run,
        &[
            "exited 1; a baseline must exit 0",
            "No module named 'tilefit_worker'",
        ],
    );
}

#[test]
fn a_baseline_that_compiles_fewer_jobs_stops_the_harness() {
    let dir = user_folder("bench-fewer");
    let fewer = wrapping_baseline(
        &dir,
        "fewer",
        "jobs = json.load(open(jobs_file))[:1]\n\
         jobs_file = jobs_file + '.fewer'\n\
         json.dump(jobs, open(jobs_file, 'w'))",
        "",
    );
    let run = harness(&dir, Some(&fewer));
    stopped(&run, &["compiled 1 jobs (1 sizes), not the sweep's 2"]);
}

#[test]
fn a_baseline_that_compiles_other_bytes_stops_the_harness_with_the_difference() {
    let dir = user_folder("bench-other");
    let other = wrapping_baseline(
        &dir,
        "other",
        "",
        "line['sizes'][1] = line['sizes'][1] + 1024\n\
         line['sizes_sha'] = hashlib.sha256(json.dumps(line['sizes']).encode()).hexdigest()[:16]",
    );
    let run = harness(&dir, Some(&other));
    stopped(
        &run,
        &["compiled other bytes than tilefit's b1 on 1 of 2 jobs: job 1: a "],
    );
}

#[test]
fn a_probe_that_exits_1_without_its_whole_report_stops_the_harness() {
    let dir = user_folder("bench-probe-crash");
    // The real binary plans the jobs and writes the worker; the timed probe dies as a Python
    // traceback would.
    let crashing = dir.join("tilefit");
    std::fs::write(
        &crashing,
        format!(
            "#!/bin/sh\ncase \"$*\" in *--json*) ;; *) exec {:?} \"$@\";; esac\necho 'Traceback: the worker died' >&2\nexit 1\n",
            env!("CARGO_BIN_EXE_tilefit")
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &crashing,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let run = harness_of(&dir, &crashing, None);
    stopped(
        &run,
        &[
            "exited 1 and its report",
            "cannot be read",
            "Traceback: the worker died",
        ],
    );
}
