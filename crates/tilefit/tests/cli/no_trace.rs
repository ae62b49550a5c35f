//! A capture leaves the machine as it found it: the script's caches go to its scratch (two
//! captures of a tuner that persists its timings see the same configs), a write it makes anywhere
//! else fails the run with its path, the stand-in tools are the only ones it reaches, tilefit's own
//! folders are its own, and a relative cache folder survives a script that changes folder.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::capture::{capture, fixture, launches, target};
use super::{emulate_python, scratch, tilefit_with};

/// Every file and folder below `dir`, by its path from it.
fn tree(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
            let path = entry.path();
            found.push(path.strip_prefix(dir).unwrap().display().to_string());
            if path.is_dir() && !path.is_symlink() {
                stack.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The script errors of one target, as text.
fn errors(report: &Value, device: &str) -> String {
    target(report, device)["errors"].to_string()
}

#[test]
fn a_tuner_that_keeps_its_timings_in_home_sees_every_config_each_capture_and_home_stays_empty() {
    let home = scratch("trace-home");
    let xdg = scratch("trace-xdg");
    let temp = scratch("trace-temp");
    let python = emulate_python().to_str().unwrap();
    let script = fixture("trace/tuned.py");
    for attempt in 0..2 {
        let cache = scratch(&format!("trace-tuned-{attempt}"));
        let json = cache.join("report.json");
        let run = tilefit_with(
            &[
                "capture",
                script.to_str().unwrap(),
                "--targets",
                "rtx-pro-6000,h100",
                "--python",
                python,
                "--jobs",
                "2",
                "--json",
                json.to_str().unwrap(),
            ],
            None,
            &[
                ("TILEFIT_CACHE_DIR", &cache),
                ("HOME", &home),
                ("XDG_CACHE_HOME", &xdg),
                ("TMPDIR", &temp),
            ],
        );
        assert_eq!(run.code, 0, "capture {attempt}: {}", run.stderr);
        let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        for device in ["rtx-pro-6000", "h100"] {
            let mut blocks: Vec<u64> = target(&report, device)["compiles"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["kernel"]["function"] == "scale")
                .filter_map(|c| c["constexprs"]["BLOCK"].as_u64())
                .collect();
            blocks.sort_unstable();
            assert_eq!(
                blocks,
                [256, 512, 1024, 2048],
                "capture {attempt} on {device}: every config the tuner lists, none from a cache"
            );
        }
    }
    for (name, dir) in [("HOME", &home), ("XDG_CACHE_HOME", &xdg), ("TMPDIR", &temp)] {
        assert_eq!(
            tree(dir),
            Vec::<String>::new(),
            "the captures left files in {name}"
        );
    }
}

#[test]
fn a_write_outside_the_scratch_fails_the_run_with_its_path_unless_allowed() {
    let out = scratch("trace-outside-out");
    std::fs::write(out.join("keep.txt"), "kept\n").unwrap();
    let script = fixture("trace/writes_outside.py");
    let (run, report) = capture(&script, "h100", &[], &[out.to_str().unwrap()]);
    assert_ne!(run.code, 0, "a write outside fails the run: {}", run.stderr);
    assert_eq!(
        tree(&out),
        ["keep.txt"],
        "each write refused before anything changed"
    );
    let said = errors(&report, "h100");
    for name in ["results.csv", "tuned.db", "keep.txt"] {
        let path = out.join(name);
        assert!(
            said.contains(&format!("`{}`", path.display())),
            "{name} named: {said}"
        );
    }
    assert!(
        said.contains("writes_outside.py"),
        "the line that wrote: {said}"
    );
    let (run, report) = capture(
        &script,
        "h100",
        &["--allow-writes", out.to_str().unwrap()],
        &[out.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(errors(&report, "h100"), "[]");
    assert_eq!(tree(&out), ["results.csv", "tuned.db"], "allowed, written");
}

#[test]
fn writes_by_links_handles_shared_memory_c_plus_plus_and_a_child_s_own_allowance_are_refused() {
    let out = scratch("trace-escapes-out");
    std::fs::write(out.join("keep.txt"), "kept\n").unwrap();
    std::fs::write(out.join("exists.txt"), "there\n").unwrap();
    let shm = format!("/dev/shm/tilefit-escapes-{}", std::process::id());
    let (run, report) = capture(
        &fixture("trace/escapes.py"),
        "h100",
        &[],
        &[out.to_str().unwrap(), &shm],
    );
    let shm_written = Path::new(&shm).exists();
    let _ = std::fs::remove_file(&shm);
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(!shm_written, "nothing kept in /dev/shm");
    assert_eq!(
        tree(&out),
        ["exists.txt", "keep.txt"],
        "nothing made or changed in the folder: {}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(out.join("keep.txt")).unwrap(),
        "kept\n"
    );
    let said = errors(&report, "h100");
    for name in [
        "proc-root.txt",
        "dev-fd.txt",
        "dir-fd",
        "keep.txt",
        "socket",
        "child.txt",
        "linked.txt",
        "/fd/2",
        "model.pt",
        "uri.db",
        "moved.txt",
    ] {
        assert!(said.contains(name), "{name} named: {said}");
    }
    assert!(said.contains(&shm), "{shm} named: {said}");
    assert_eq!(
        report["targets"][0]["launches"].as_array().map(Vec::len),
        Some(1),
        "the script went on past every write to its launch: {}",
        run.stderr
    );
    assert!(
        said.contains("escapes.py\\\", line"),
        "the lines that wrote: {said}"
    );
    let made = format!("`{}` (os.mkdir)", out.display());
    assert!(
        !said.contains(&made),
        "makedirs of a folder that is there changes nothing: {said}"
    );
    for quiet in ["exists.txt", "pym-", "probe-", "/hard` (os.remove"] {
        assert!(
            !said.contains(quiet),
            "{quiet} changes nothing outside: {said}"
        );
    }
}

/// The emulation venv again, at a path with a space and over 200 characters long: a `#!` line
/// with it breaks (the kernel reads at most 255 bytes of it, and splits at the space). A venv is
/// its `pyvenv.cfg` and the interpreter beside it: both placed there, its packages linked.
fn awkward_python(root: &Path) -> PathBuf {
    let venv = emulate_python().parent().and_then(Path::parent).unwrap();
    let there = root
        .join("a folder with spaces")
        .join("x".repeat(120))
        .join("y".repeat(100));
    std::fs::create_dir_all(there.join("bin")).unwrap();
    std::fs::copy(venv.join("pyvenv.cfg"), there.join("pyvenv.cfg")).unwrap();
    std::os::unix::fs::symlink(venv.join("lib"), there.join("lib")).unwrap();
    let python = there.join("bin").join("python3");
    std::os::unix::fs::symlink(emulate_python(), &python).unwrap();
    python
}

#[test]
fn the_stand_in_answers_whatever_the_python_path_and_the_real_tool_is_not_reached() {
    let root = scratch("trace-tools");
    let python = awkward_python(&root);
    // A "real" nvidia-smi on the machine's PATH, after the stand-in's folder.
    let real = root.join("real-bin");
    std::fs::create_dir_all(&real).unwrap();
    let tool = real.join("nvidia-smi");
    std::fs::write(&tool, "#!/bin/sh\necho 'GPU 0: the REAL machine GPU'\n").unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&tool)
        .status()
        .unwrap();
    let path = std::env::join_paths(std::iter::once(real.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let out = scratch("trace-tools-out");
    let cache = scratch("trace-tools-cache");
    let json = cache.join("report.json");
    let run = tilefit_with(
        &[
            "capture",
            fixture("trace/tools.py").to_str().unwrap(),
            "--targets",
            "h100",
            "--python",
            python.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--allow-writes",
            out.to_str().unwrap(),
            "--",
            out.to_str().unwrap(),
            tool.to_str().unwrap(),
        ],
        None,
        &[("TILEFIT_CACHE_DIR", &cache), ("PATH", Path::new(&path))],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("seen.json")).unwrap()).unwrap();
    for how in ["by_name", "by_path"] {
        assert_eq!(
            seen[how]["out"], "GPU 0: NVIDIA H100 80GB HBM3\n",
            "nvidia-smi {how}: {seen}"
        );
    }
}

#[test]
fn stand_ins_that_cannot_run_fail_the_capture_closed() {
    // A noexec mount for tilefit's cache (the scratch, where the stand-ins are written). Making one
    // needs root; elsewhere the test says so and checks nothing.
    let mount = scratch("trace-noexec");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "noexec,mode=0700", "tmpfs"])
        .arg(&mount)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("no noexec mount can be made here (not root): the check is not run");
        return;
    }
    let json = scratch("trace-noexec-out").join("report.json");
    let run = tilefit_with(
        &[
            "capture",
            fixture("trace/tools.py").to_str().unwrap(),
            "--targets",
            "h100",
            "--python",
            emulate_python().to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--",
            "/nonexistent",
            "/usr/bin/nvidia-smi",
        ],
        None,
        &[("TILEFIT_CACHE_DIR", &mount)],
    );
    let _ = Command::new("umount").arg(&mount).status();
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stderr.contains("cannot be run") && run.stderr.contains("noexec"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_relative_cache_folder_keeps_the_records_of_a_script_that_changes_folder() {
    let cwd = scratch("trace-relative");
    let run = Command::new(env!("CARGO_BIN_EXE_tilefit"))
        .args(["capture"])
        .arg(fixture("trace/chdir.py"))
        .args(["--targets", "h100", "--python"])
        .arg(emulate_python())
        .args(["--json", "report.json"])
        .current_dir(&cwd)
        .env("TILEFIT_CACHE_DIR", "cache")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(cwd.join("report.json")).unwrap()).unwrap();
    // The script's launch, and its child's (which found tilefit's package by an absolute path).
    assert_eq!(launches(&report, "h100", "copy").len(), 2, "{stderr}");
}

#[test]
fn without_home_the_cache_is_this_users_and_a_planted_one_is_refused() {
    let temp = scratch("trace-nohome");
    let me = Command::new("id").arg("-u").output().unwrap();
    let uid = String::from_utf8_lossy(&me.stdout).trim().to_owned();
    let planted = temp.join(format!("tilefit-cache-{uid}"));
    let toolchain = planted.join("toolchains");
    std::fs::create_dir_all(&toolchain).unwrap();
    // Another user made it first: as root, hand it to `nobody`; as anyone else, open it to all.
    let handed = if uid == "0" {
        Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(&planted)
            .status()
            .unwrap()
    } else {
        Command::new("chmod")
            .arg("777")
            .arg(&planted)
            .status()
            .unwrap()
    };
    assert!(handed.success());
    let run = Command::new(env!("CARGO_BIN_EXE_tilefit"))
        .args(["probe", &super::repo_file("examples/mla_decode/spec.toml")])
        .args(["--targets", "h100", "--python"])
        .arg(super::python())
        .env_remove("HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("TILEFIT_CACHE_DIR")
        .env("TMPDIR", &temp)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_ne!(run.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("`{}`", planted.display())),
        "the folder is named: {stderr}"
    );
    assert_eq!(
        tree(&toolchain),
        Vec::<String>::new(),
        "nothing written there"
    );
}

#[test]
fn records_the_script_wrote_itself_are_refused() {
    let (run, report) = capture(&fixture("trace/forged.py"), "h100", &["--allow-empty"], &[]);
    assert_ne!(run.code, 0, "forged records fail the run: {}", run.stderr);
    let failure = target(&report, "h100")["failure"].to_string();
    assert!(
        failure.contains("not the one tilefit's recorder wrote"),
        "{failure}"
    );
}
