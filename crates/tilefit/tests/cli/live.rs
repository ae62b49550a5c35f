//! The driver-facing commands on whatever machine runs the tests: on a CPU machine (CI) they fail
//! with "no CUDA driver found", exit 2, without a panic; on a GPU machine they answer.

use super::{fixture, tilefit};

#[test]
fn devices_live_without_a_driver_is_a_clear_error() {
    let run = tilefit(&["devices", "--live", "--json"], None);
    if run.code == 0 {
        let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        assert!(
            json["devices"].as_array().is_some_and(|d| !d.is_empty()),
            "{}",
            run.stdout
        );
        return;
    }
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr
            .starts_with("error: no CUDA driver found (tried libcuda.so.1"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("hint: this needs a machine with an NVIDIA GPU"),
        "{}",
        run.stderr
    );
}

#[test]
fn verify_without_a_driver_fails_before_compiling() {
    let run = tilefit(&["verify", &fixture("specialize.toml")], None);
    if run.code == 0 {
        return; // a GPU machine: verify ran for real
    }
    assert!(run.code == 2 || run.code == 1, "{}", run.stderr);
    if run.code == 2 {
        assert!(
            run.stderr.starts_with("error: no CUDA driver found"),
            "{}",
            run.stderr
        );
    }
}
