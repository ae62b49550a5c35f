//! Triton upgrades move the bytes: Triton's knobs in the environment key the cache and are named
//! in the report (`TRITON_HIP_USE_ASYNC_COPY` on gfx950), and a version matrix over the newest
//! releases names what a version moved (triton-lang/triton#11526's tf32x3 dot under 3.8.0).

use std::path::Path;

use super::capture::repo;
use super::{Run, emulate_python, json_of, scratch, tilefit_with};

fn example(name: &str) -> String {
    repo()
        .join("examples/triton-upgrade")
        .join(name)
        .display()
        .to_string()
}

fn stage_bytes(report: &serde_json::Value) -> Vec<(u64, u64)> {
    let mut cells: Vec<(u64, u64)> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["config"]["num_stages"].as_u64().unwrap(),
                r["shared_bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    cells.sort_unstable();
    cells
}

#[test]
fn triton_s_knobs_in_the_environment_key_the_cache_and_are_named_in_the_report() {
    let cache = scratch("triton-knobs");
    let python = emulate_python().to_str().unwrap().to_owned();
    let spec = example("async_copy.toml");
    let probe = |env: &[(&str, &Path)]| -> Run {
        let mut all = vec![("TILEFIT_CACHE_DIR", cache.as_path())];
        all.extend_from_slice(env);
        tilefit_with(
            &["probe", &spec, "--python", &python, "--json", "-"],
            None,
            &all,
        )
    };
    // Triton 3.6.0 on gfx950: no async copy by default, an LDS buffer per stage with it.
    let plain = json_of(&probe(&[]));
    assert_eq!(stage_bytes(&plain), [(2, 32_768), (3, 65_536)]);
    assert!(plain.get("triton_env").is_none(), "{plain}");
    let one = Path::new("1");
    let run = probe(&[("TRITON_HIP_USE_ASYNC_COPY", one)]);
    let copied = json_of(&run);
    // The same cache: the knob is part of each key, so nothing came from the plain run's.
    assert_eq!(stage_bytes(&copied), [(2, 68_016), (3, 102_064)]);
    assert_eq!(copied["stats"]["cached"], 0, "{copied}");
    assert_eq!(copied["triton_env"]["TRITON_HIP_USE_ASYNC_COPY"], "1");
    // A path variable is not a knob.
    let again = json_of(&probe(&[
        ("TRITON_HIP_USE_ASYNC_COPY", one),
        ("TRITON_DUMP_DIR", cache.as_path()),
    ]));
    assert_eq!(again["stats"]["cached"], 2, "{again}");
    // A value with a control character is no knob Triton reads: left out, so the saved report
    // reads back.
    let saved = cache.join("weird.json");
    let weird = tilefit_with(
        &[
            "probe",
            &spec,
            "--python",
            &python,
            "--json",
            saved.to_str().unwrap(),
        ],
        None,
        &[
            ("TILEFIT_CACHE_DIR", cache.as_path()),
            ("TRITON_HIP_USE_ASYNC_COPY", one),
            ("TRITON_ODD", Path::new("a\n::error::b")),
            ("TRITON_MARKUP", Path::new("<img src=x>")),
        ],
    );
    assert_eq!(weird.code, 0, "{}", weird.stderr);
    let back = tilefit_with(&["report", saved.to_str().unwrap()], None, &[]);
    assert_eq!(back.code, 0, "{}", back.stderr);
    assert!(!back.stdout.contains("TRITON_ODD"), "{}", back.stdout);
    // A knob's value is text in the Markdown footer, not markup.
    let markdown = tilefit_with(
        &["report", saved.to_str().unwrap(), "--markdown"],
        None,
        &[],
    );
    assert!(
        markdown.stdout.contains("TRITON_MARKUP=&lt;img src=x&gt;")
            && !markdown.stdout.contains("<img"),
        "{}",
        markdown.stdout
    );
    let terminal = tilefit_with(
        &["probe", &spec, "--python", &python],
        None,
        &[
            ("TILEFIT_CACHE_DIR", cache.as_path()),
            ("TRITON_HIP_USE_ASYNC_COPY", one),
        ],
    );
    assert!(
        terminal
            .stdout
            .contains("Triton 3.6.0 with TRITON_HIP_USE_ASYNC_COPY=1 (Python"),
        "{}",
        terminal.stdout
    );
}

/// The issue's repro and TransformerEngine's projection under 3.6.0, 3.8.0 and 3.9.0 (the
/// newest on PyPI), each a managed toolchain provisioned from PyPI.
#[test]
#[ignore = "exhaustive: provisions Triton 3.6.0, 3.8.0 and 3.9.0 from PyPI (about 3 minutes)"]
fn a_triton_upgrade_that_adds_a_tf32x3_copy_is_shown_named_and_gated() {
    let cache = scratch("triton-upgrade");
    let matrix = cache.join("matrix.json");
    let run = |spec: &str, json: &Path| {
        tilefit_with(
            &[
                "probe",
                &example(spec),
                "--triton",
                "3.6.0,3.8.0,3.9.0",
                "--json",
                json.to_str().unwrap(),
            ],
            None,
            &[("TILEFIT_CACHE_DIR", cache.as_path())],
        )
    };
    let issue = run("issue.toml", &matrix);
    assert_eq!(issue.code, 0, "{}", issue.stderr);
    assert!(
        issue.stdout.contains(
            "Triton 3.6.0 -> 3.8.0: 3 of 6 results changed: every change has PRECISION=tf32x3; none with PRECISION=tf32 changed; +1,536 bytes in every change"
        ),
        "{}",
        issue.stdout
    );
    assert!(
        issue
            .stdout
            .contains("PRECISION=tf32x3 num_stages=2 num_warps=1 on sm_89: 1,536 -> 3,072 bytes (+1,536, x2.00)"),
        "{}",
        issue.stdout
    );
    assert!(
        issue
            .stdout
            .contains("Triton 3.8.0 -> 3.9.0: 3 of 6 results changed"),
        "3.9.0 gives it back: {}",
        issue.stdout
    );
    // TransformerEngine's first config: fits an L40 under 3.6.0, over under 3.8.0.
    let projection = cache.join("projection.json");
    let run_projection = run("projection.toml", &projection);
    assert_eq!(run_projection.code, 0, "{}", run_projection.stderr);
    let diff = tilefit_with(
        &["diff", projection.to_str().unwrap()],
        None,
        &[("TILEFIT_CACHE_DIR", cache.as_path())],
    );
    assert_eq!(
        diff.code, 1,
        "a config that fit no longer does: {}",
        diff.stdout
    );
    assert!(
        diff.stdout.contains(
            "PRECISION=tf32x3 num_stages=3 num_warps=2 on sm_89: 81,920 -> 131,072 bytes (+49,152, x1.60); l40 fits -> over-budget (BREAKS)"
        ),
        "{}",
        diff.stdout
    );
    // The JSON says the same, for a CI step that reads it.
    let diff_json = cache.join("diff.json");
    let written = tilefit_with(
        &[
            "diff",
            projection.to_str().unwrap(),
            "--json",
            diff_json.to_str().unwrap(),
        ],
        None,
        &[],
    );
    assert_eq!(written.code, 1, "{}", written.stderr);
    let diffs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&diff_json).unwrap()).unwrap();
    let first = if diffs.is_array() { &diffs[0] } else { &diffs };
    assert_eq!(first["old_triton"], "3.6.0", "{diffs}");
    assert_eq!(
        first["named"][0], "every change has PRECISION=tf32x3; none with PRECISION=tf32 changed",
        "{diffs}"
    );
}
