//! One pipeline per run: a capture of several targets (with the fixes of its OVER launches) and a
//! probe with `--emit-files` (its rounds and its read-back) each start one pool of workers, counted
//! by the run itself, and write no TOML and no config file to their scratch folder, which a
//! thread watches while they run.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use super::{Run, emulate_python, python, scratch, tilefit_with};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .unwrap()
}

/// Every file below `root`, as paths relative to it.
fn files_below(root: &Path, into: &mut BTreeSet<PathBuf>) {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else if let Ok(relative) = path.strip_prefix(root) {
                into.insert(relative.to_path_buf());
            }
        }
    }
}

/// Run `tilefit ARGS` with its cache in `cache`, watching `cache/scratch` every millisecond while
/// it runs: the run, and every file seen there.
fn watched(args: &[&str], cache: &Path) -> (Run, BTreeSet<PathBuf>) {
    let done = Arc::new(AtomicBool::new(false));
    let root = cache.join("scratch");
    let watcher = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut seen = BTreeSet::new();
            while !done.load(Ordering::SeqCst) {
                files_below(&root, &mut seen);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            seen
        })
    };
    let run = tilefit_with(args, None, &[("TILEFIT_CACHE_DIR", cache)]);
    done.store(true, Ordering::SeqCst);
    (run, watcher.join().unwrap())
}

fn extension(path: &Path) -> String {
    path.extension()
        .map(|e| e.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn json_file(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_capture_of_three_targets_starts_one_pool_and_writes_no_spec() {
    let cache = scratch("one-pipeline-capture");
    let json = cache.join("report.json");
    let script = repo().join("crates/tilefit/tests/fixtures/capture/kernels.py");
    let (run, seen) = watched(
        &[
            "capture",
            script.to_str().unwrap(),
            "--targets",
            // Two of one arch and one of another; the fixture's deep matmul is OVER on the
            // sm_120 part, so its fix compiles candidates too.
            "h100,h200,rtx-pro-6000",
            "--python",
            emulate_python().to_str().unwrap(),
            "--jobs",
            "2",
            "--json",
            json.to_str().unwrap(),
            "--fail-on",
            "none",
        ],
        &cache,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = json_file(&json);
    let targets = report["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 3);
    let compiles: usize = targets
        .iter()
        .map(|t| t["compiles"].as_array().unwrap().len())
        .sum();
    assert!(compiles >= 9, "{compiles} compiles");
    let fixed = targets
        .iter()
        .flat_map(|t| t["launches"].as_array().unwrap())
        .filter(|l| !l["fix"].is_null())
        .count();
    assert!(fixed >= 1, "a fix compiled its candidates: {report}");
    let workers = &report["workers"];
    assert_eq!(workers["pools"], 1, "one pool for every target: {workers}");
    assert!(workers["started"].as_u64().unwrap() >= 2, "{workers}");
    assert!(!seen.is_empty(), "the watcher saw the scratch folder");
    for path in &seen {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert_ne!(
            extension(path),
            "toml",
            "a spec written: {}",
            path.display()
        );
        if extension(path) == "json" {
            assert!(
                name.starts_with("device-") || name.starts_with("records-"),
                "only the emulation's device and records are JSON: {}",
                path.display()
            );
        }
    }
}

#[test]
fn emit_files_rounds_and_read_back_share_the_probe_s_pool_and_write_no_config_folder() {
    let cache = scratch("one-pipeline-emit-files");
    let out = cache.join("files");
    let json = cache.join("report.json");
    let spec = repo().join("examples/moe/spec.toml");
    let (run, seen) = watched(
        &[
            "probe",
            spec.to_str().unwrap(),
            "--python",
            python().to_str().unwrap(),
            "--jobs",
            "2",
            "--targets",
            "rtx-pro-6000,rtx-5090",
            "--emit-files",
            out.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        &cache,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("round 2"), "{}", run.stderr);
    assert!(
        run.stderr.contains("judged again"),
        "the files were read back and judged again: {}",
        run.stderr
    );
    let report = json_file(&json);
    let workers = &report["stats"]["workers"];
    assert_eq!(workers["pools"], 1, "one pool for the whole run: {workers}");
    assert!(!seen.is_empty(), "the watcher saw the scratch folder");
    for path in &seen {
        assert!(
            !["toml", "json"].contains(&extension(path).as_str()),
            "a spec or config file written to the scratch: {}",
            path.display()
        );
    }
}
