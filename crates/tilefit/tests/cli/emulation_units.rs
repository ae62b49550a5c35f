//! The Python half's own tests (`python/unit`): its modules (the patch registry, the autograd
//! engine, the values host code reads, the scope writer, the system stand-ins, Inductor's hooks)
//! tested with pytest, without this binary, in the emulation's Python (real torch, real Triton).
//! Run here so that CI runs them with the README's test command.

use std::process::Command;

use super::{emulate_python, repo_file, scratch};

/// Every test file of the folder: a file left out of the run (renamed, skipped) fails here.
const FILES: &[&str] = &[
    "test_autograd.py",
    "test_contract.py",
    "test_inductor.py",
    "test_patches.py",
    "test_scope.py",
    "test_system.py",
    "test_values.py",
    "test_worker_contract.py",
];

#[test]
fn the_python_half_s_own_tests_pass_without_the_binary() {
    let folder = repo_file("python/unit");
    let mut found: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.starts_with("test_") && std::path::Path::new(n).extension() == Some("py".as_ref())
        })
        .collect();
    found.sort();
    assert_eq!(
        found, FILES,
        "python/unit's test files changed: list them here"
    );

    let caches = scratch("emulation-units");
    let run = Command::new(emulate_python())
        .args(["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"])
        .arg(&folder)
        .current_dir(&folder)
        .env("PYTHONPATH", repo_file("python"))
        .env("TRITON_CACHE_DIR", caches.join("triton"))
        .env("TORCHINDUCTOR_CACHE_DIR", caches.join("inductor"))
        .env("TILEFIT_CACHE_DIR", caches.join("tilefit"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&run.stdout);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{out}\n{err}");
    // All of them ran: none skipped, none deselected.
    let summary = out.lines().last().unwrap_or_default();
    assert!(summary.contains(" passed"), "{out}");
    for word in ["skipped", "deselected", "failed", "error"] {
        assert!(!summary.contains(word), "{out}");
    }
}
