//! Shape sweeps through host code: a launcher whose config depends on the shape, captured over a
//! pytest parametrization of batch sizes and context lengths; each shape is a test, judged per
//! target, in the report and in JUnit.

use serde_json::Value;

use super::capture::repo;
use super::{emulate_python, scratch, tilefit_with};

#[test]
fn a_launcher_is_judged_per_shape_and_only_the_split_path_misses() {
    let suite = repo().join("examples/shapes/test_decode_shapes.py");
    let cache = scratch("shapes");
    let (junit, json) = (cache.join("shapes.xml"), cache.join("report.json"));
    let run = tilefit_with(
        &[
            "capture",
            "--module",
            "pytest",
            "--targets",
            "rx-9070-xt,h100",
            "--python",
            emulate_python().to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
            "--",
            "-q",
            suite.to_str().unwrap(),
        ],
        None,
        &[("TILEFIT_CACHE_DIR", &cache)],
    );
    assert_eq!(
        run.code, 1,
        "the split-KV path misses rx-9070-xt: {}",
        run.stderr
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let text = std::fs::read_to_string(&junit).unwrap();
    let cases = junit_parser::from_reader(std::io::Cursor::new(text.as_bytes())).unwrap();
    let mut failed: Vec<String> = Vec::new();
    let mut total = 0;
    for suite in &cases.suites {
        for case in &suite.cases {
            total += 1;
            if case.status.is_failure() {
                // `module::test[params] [device]`: the shape and the device.
                let name = case.name.rsplit("::").next().unwrap_or(&case.name);
                failed.push(name.to_owned());
            }
        }
    }
    assert_eq!(total, 18, "9 shapes x 2 targets");
    failed.sort();
    // More than 64 sequences or more than 8,192 tokens take the split-KV path: 5 of the 9
    // shapes, over on rx-9070-xt only.
    assert_eq!(
        failed,
        [
            "test_decode[1-32768] [rx-9070-xt]",
            "test_decode[16-32768] [rx-9070-xt]",
            "test_decode[256-32768] [rx-9070-xt]",
            "test_decode[256-4096] [rx-9070-xt]",
            "test_decode[256-512] [rx-9070-xt]",
        ]
    );
    let amd = super::capture::target(&report, "rx-9070-xt");
    assert_eq!(amd["tests"].as_array().unwrap().len(), 9);
    assert!(
        run.stdout.contains("BLOCK_N=128 num_stages=3 num_warps=8"),
        "{}",
        run.stdout
    );
}
