//! Toolchain provisioning failures: no python3, no package registry. Each is exit 2 with a hint,
//! and nothing half-made is left in the cache directory.

use std::path::Path;

use super::{scratch, tilefit_with};

fn leftovers(cache: &Path) -> Vec<String> {
    std::fs::read_dir(cache.join("toolchains"))
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn no_python3_is_a_clear_error() {
    let cache = scratch("no-python3");
    let run = tilefit_with(
        &["toolchain", "install", "3.7.1"],
        None,
        &[
            ("TILEFIT_CACHE_DIR", &cache),
            ("TILEFIT_BOOTSTRAP_PYTHON", Path::new("/no/such/python3")),
        ],
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("error: cannot run `/no/such/python3`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("hint: install Python 3.10 or newer"),
        "{}",
        run.stderr
    );
    assert!(leftovers(&cache).is_empty(), "{:?}", leftovers(&cache));
}

#[test]
fn an_unreachable_registry_leaves_nothing_half_made() {
    let cache = scratch("no-registry");
    let run = tilefit_with(
        &["toolchain", "install", "3.7.1"],
        None,
        &[
            ("TILEFIT_CACHE_DIR", &cache),
            ("PIP_INDEX_URL", Path::new("http://127.0.0.1:9/simple")),
            ("PIP_FIND_LINKS", Path::new("")),
            ("PIP_NO_INDEX", Path::new("0")),
            ("PIP_RETRIES", Path::new("0")),
            ("PIP_TIMEOUT", Path::new("2")),
            ("PIP_CONFIG_FILE", Path::new("/dev/null")),
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("error: installing triton==3.7.1 failed"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("hint: "), "{}", run.stderr);
    assert!(
        leftovers(&cache).is_empty(),
        "the staging folder is removed: {:?}",
        leftovers(&cache)
    );
}

#[test]
fn an_install_killed_midway_leaves_nothing_used_and_is_cleaned_up() {
    let cache = scratch("killed-install");
    // What a SIGKILLed install leaves: a staging folder of a process that no longer exists.
    let abandoned = cache.join("toolchains/.staging-triton-3.7.1-999999999");
    std::fs::create_dir_all(abandoned.join("bin")).unwrap();
    std::fs::write(abandoned.join("bin/python"), "half").unwrap();
    // It is never taken for an installed toolchain...
    let run = tilefit_with(
        &["toolchain", "list"],
        None,
        &[("TILEFIT_CACHE_DIR", &cache)],
    );
    assert!(run.stdout.contains("none yet"), "{}", run.stdout);
    // ...and the next install removes it (this one then fails: no python3 to build with).
    let run = tilefit_with(
        &["toolchain", "install", "3.7.1"],
        None,
        &[
            ("TILEFIT_CACHE_DIR", &cache),
            ("TILEFIT_BOOTSTRAP_PYTHON", Path::new("/no/such/python3")),
        ],
    );
    assert_eq!(run.code, 2);
    assert!(
        !abandoned.exists(),
        "the abandoned staging folder is removed"
    );
    assert!(leftovers(&cache).is_empty(), "{:?}", leftovers(&cache));
}

#[test]
fn the_worker_package_is_written_as_the_binary_runs_it() {
    let dir = scratch("worker-package");
    let run = super::tilefit(&["toolchain", "worker", dir.to_str().unwrap()], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let package = dir.join("tilefit_worker");
    assert_eq!(run.stdout.trim(), package.display().to_string());
    // Every module of the source folder, with the same text: what the benchmarks import.
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tilefit-core/src/compile/worker");
    let mut modules = 0;
    for entry in std::fs::read_dir(&source).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "py") {
            continue;
        }
        let written = std::fs::read_to_string(package.join(path.file_name().unwrap()))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            written,
            std::fs::read_to_string(&path).unwrap(),
            "{}",
            path.display()
        );
        modules += 1;
    }
    assert!(modules >= 10, "{modules} modules");
    // A folder that cannot be made is an error that names it.
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let run = super::tilefit(&["toolchain", "worker", file.to_str().unwrap()], None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("cannot write the worker package into"),
        "{}",
        run.stderr
    );
}
