//! Kernels where they live: a kernel module whose first line imports a package that is not
//! installed compiles by extraction, to the bytes of the kernel cut out by hand; JIT helpers,
//! module-level constexprs and an autotune list in the same module come along; a global that
//! cannot be evaluated is an error naming it and its line, and `[globals]` supplies it; `load`
//! forces either way; `module =` names an installed package's module.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::{fixture, json_of, probe, python, scratch};

/// (config, arch) -> bytes.
fn bytes(report: &Value) -> Vec<(String, String, Option<u64>)> {
    let mut cells: Vec<_> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["config"].to_string(),
                r["arch"].as_str().unwrap().to_owned(),
                r["shared_bytes"].as_u64(),
            )
        })
        .collect();
    cells.sort();
    cells
}

/// A copy of a fixture spec with `[kernel]` lines replaced, in a scratch folder beside copies of
/// the fixture's Python files.
fn spec_variant(name: &str, spec: &str, edit: &[(&str, &str)]) -> PathBuf {
    let dir = scratch(name);
    for file in ["engine_module.py", "tile_kernel_cut.py"] {
        std::fs::copy(fixture(&format!("extract/{file}")), dir.join(file)).unwrap();
    }
    let mut text = std::fs::read_to_string(fixture(&format!("extract/{spec}"))).unwrap();
    for (from, to) in edit {
        assert!(text.contains(from), "{from}");
        text = text.replacen(from, to, 1);
    }
    let path = dir.join(spec);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_module_that_imports_a_missing_package_compiles_to_the_hand_cut_kernel_s_bytes() {
    let whole = json_of(&probe(
        &fixture("extract/tile.toml"),
        &scratch("extract-whole"),
        &["--json", "-"],
    ));
    let loaded = &whole["kernel"]["loaded"];
    assert_eq!(loaded["how"], "extract", "{loaded}");
    assert!(
        loaded["import_error"]
            .as_str()
            .unwrap()
            .contains("No module named 'not_a_real_engine'"),
        "{loaded}"
    );
    // The helper and the constexpr came along; the launcher and FP8_MAX never ran.
    let names: Vec<&str> = loaded["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for name in ["BLOCK_LIMIT", "_scale_tile", "tile_kernel"] {
        assert!(names.contains(&name), "{names:?}");
    }
    for name in ["FP8_MAX", "host_launcher", "CONFIGS", "envs"] {
        assert!(!names.contains(&name), "{names:?}");
    }
    let cut = spec_variant(
        "extract-cut",
        "tile.toml",
        &[(
            "file = \"engine_module.py\"",
            "file = \"tile_kernel_cut.py\"",
        )],
    );
    let cut = json_of(&probe(
        cut.to_str().unwrap(),
        &scratch("extract-cut-cache"),
        &["--json", "-"],
    ));
    assert_eq!(cut["kernel"]["loaded"]["how"], "import");
    let (whole_bytes, cut_bytes) = (bytes(&whole), bytes(&cut));
    assert_eq!(whole_bytes.len(), 16, "8 configs x sm_90, sm_120");
    assert!(
        whole_bytes.iter().all(|(_, _, b)| b.is_some()),
        "{whole_bytes:?}"
    );
    assert_eq!(
        whole_bytes, cut_bytes,
        "extracted and hand-cut kernels disagree"
    );

    // The digest in the keys covers what ran: an edit to code the kernel never reaches keeps
    // every result cached; an edit to its helper recompiles.
    let cache = scratch("extract-digest");
    let copy = spec_variant("extract-digest-spec", "tile.toml", &[]);
    json_of(&probe(copy.to_str().unwrap(), &cache, &["--json", "-"]));
    let module = copy.with_file_name("engine_module.py");
    let text = std::fs::read_to_string(&module).unwrap();
    std::fs::write(
        &module,
        text.replace("return envs.LAUNCH_MODE, x", "return envs.OTHER, x"),
    )
    .unwrap();
    let again = json_of(&probe(copy.to_str().unwrap(), &cache, &["--json", "-"]));
    assert_eq!(again["stats"]["cached"], 16, "{}", again["stats"]);
    let text = std::fs::read_to_string(&module).unwrap();
    std::fs::write(
        &module,
        text.replace("return tile * factor", "return tile * factor * 1.0"),
    )
    .unwrap();
    let edited = json_of(&probe(copy.to_str().unwrap(), &cache, &["--json", "-"]));
    assert_eq!(edited["stats"]["cached"], 0, "{}", edited["stats"]);
}

#[test]
fn an_autotune_list_in_the_same_module_is_swept_after_extraction() {
    let report = json_of(&probe(
        &fixture("extract/autotuned.toml"),
        &scratch("extract-autotuned"),
        &["--json", "-"],
    ));
    assert_eq!(report["kernel"]["loaded"]["how"], "extract");
    assert_eq!(report["listed"]["kind"], "autotune");
    assert_eq!(report["listed"]["autotune"].as_array().unwrap().len(), 2);
    // The list's two configs, on both archs, equal the plain kernel's bytes for those tiles.
    let plain = json_of(&probe(
        &fixture("extract/tile.toml"),
        &scratch("extract-autotuned-plain"),
        &["--json", "-"],
    ));
    let find = |report: &Value, m: u64, n: u64, stages: u64, arch: &str| {
        report["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| {
                r["config"]["BLOCK_M"] == m
                    && r["config"]["BLOCK_N"] == n
                    && r["config"]["num_stages"] == stages
                    && r["arch"] == arch
            })
            .map(|r| r["shared_bytes"].as_u64())
    };
    for arch in ["sm_90", "sm_120"] {
        let listed = find(&report, 64, 64, 2, arch).expect("the first autotune config");
        assert_eq!(listed, find(&plain, 64, 64, 2, arch).unwrap(), "{arch}");
    }
}

#[test]
fn a_global_that_cannot_be_evaluated_is_named_with_its_line_and_globals_supplies_it() {
    let failed = probe(
        &fixture("extract/scaled.toml"),
        &scratch("extract-fp8"),
        &[],
    );
    assert_eq!(failed.code, 2, "{}", failed.stderr);
    assert!(
        failed.stderr.contains(
            "`FP8_MAX` (engine_module.py:11) needs `not_a_real_engine`, which is not installed: give it in [globals] or install the package"
        ),
        "{}",
        failed.stderr
    );
    let given = spec_variant(
        "extract-globals",
        "scaled.toml",
        &[("[targets]", "[globals]\nFP8_MAX = 448.0\n\n[targets]")],
    );
    let report = json_of(&probe(
        given.to_str().unwrap(),
        &scratch("extract-globals-cache"),
        &["--json", "-"],
    ));
    assert_eq!(
        report["results"][0]["status"], "ok",
        "{}",
        report["results"][0]
    );
    // `load = "import"` refuses to extract: the import's own error, by name.
    let forced = spec_variant(
        "extract-import",
        "tile.toml",
        &[(
            "function = \"tile_kernel\"",
            "function = \"tile_kernel\"\nload = \"import\"",
        )],
    );
    let refused = probe(
        forced.to_str().unwrap(),
        &scratch("extract-import-cache"),
        &[],
    );
    assert_eq!(refused.code, 2);
    assert!(
        refused
            .stderr
            .contains("No module named 'not_a_real_engine'"),
        "{}",
        refused.stderr
    );
    // `load = "extract"` extracts a file that would import.
    let extracted = spec_variant(
        "extract-forced",
        "tile.toml",
        &[
            (
                "file = \"engine_module.py\"",
                "file = \"tile_kernel_cut.py\"",
            ),
            (
                "function = \"tile_kernel\"",
                "function = \"tile_kernel\"\nload = \"extract\"",
            ),
        ],
    );
    let report = json_of(&probe(
        extracted.to_str().unwrap(),
        &scratch("extract-forced-cache"),
        &["--json", "-"],
    ));
    assert_eq!(report["kernel"]["loaded"]["how"], "extract");
    assert!(report["kernel"]["loaded"].get("import_error").is_none());
}

/// Puts the fixture packages on the test Python's path for as long as it lives (a `.pth` file in
/// its site-packages, as `pip install -e` does).
struct OnPath(PathBuf);

impl OnPath {
    fn new() -> OnPath {
        let out = std::process::Command::new(python())
            .args([
                "-I",
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ])
            .output()
            .unwrap();
        let site = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
        let pth = site.join(format!("tilefit-test-{}.pth", std::process::id()));
        std::fs::write(&pth, format!("{}\n", fixture("extract/pkg"))).unwrap();
        OnPath(pth)
    }
}

impl Drop for OnPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn module_names_an_installed_package_s_module() {
    let _path = OnPath::new();
    let report = json_of(&probe(
        &fixture("extract/module.toml"),
        &scratch("extract-module"),
        &["--json", "-"],
    ));
    assert_eq!(report["kernel"]["loaded"]["how"], "import");
    assert!(
        Path::new(report["kernel"]["file"].as_str().unwrap())
            .ends_with("extract/pkg/tilefit_fixture_pkg/kernels.py"),
        "{}",
        report["kernel"]
    );
    assert_eq!(bytes(&report).len(), 2);
    // A package whose `__init__` needs what is not installed: its module's file is extracted.
    let broken = spec_variant(
        "extract-module-broken",
        "module.toml",
        &[(
            "tilefit_fixture_pkg.kernels",
            "tilefit_fixture_broken.kernels",
        )],
    );
    let report = json_of(&probe(
        broken.to_str().unwrap(),
        &scratch("extract-module-broken-cache"),
        &["--json", "-"],
    ));
    assert_eq!(
        report["kernel"]["loaded"]["how"], "extract",
        "{}",
        report["kernel"]
    );
    let missing = spec_variant(
        "extract-module-missing",
        "module.toml",
        &[("tilefit_fixture_pkg.kernels", "no_such_package.kernels")],
    );
    let run = probe(
        missing.to_str().unwrap(),
        &scratch("extract-module-missing-cache"),
        &[],
    );
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("[kernel].module"), "{}", run.stderr);
}

#[test]
fn wrappers_that_do_not_evaluate_are_taken_off_down_to_the_jit_function() {
    let cache = scratch("extract-wrapped-cache");
    let run = probe(
        &fixture("extract/wrapped_kernel.toml"),
        &cache,
        &["--json", "-"],
    );
    let report = json_of(&run);
    let loaded = &report["kernel"]["loaded"];
    assert_eq!(loaded["how"], "extract", "{loaded}");
    let peeled: Vec<&str> = loaded["peeled"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(peeled.len(), 2, "{peeled:?}");
    assert_eq!(peeled[0], "@libentry()");
    assert!(
        peeled[1].starts_with("@libtuner(configs=runtime.get_tuned_config('mm')"),
        "{peeled:?}"
    );
    // The kernel compiled is the one they wrap: the same bytes as the bare @triton.jit copy.
    let dir = scratch("extract-wrapped-bare");
    let text = std::fs::read_to_string(fixture("extract/wrapped_kernel.py")).unwrap();
    let bare: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("@lib") && !l.starts_with("from flag_gems_like"))
        .collect();
    let bare = bare.join("\n") + "\n";
    std::fs::write(dir.join("wrapped_kernel.py"), bare).unwrap();
    std::fs::copy(
        fixture("extract/wrapped_kernel.toml"),
        dir.join("wrapped_kernel.toml"),
    )
    .unwrap();
    let plain = json_of(&probe(
        dir.join("wrapped_kernel.toml").to_str().unwrap(),
        &cache,
        &["--json", "-"],
    ));
    assert_eq!(
        plain["kernel"]["loaded"]["how"], "import",
        "{}",
        plain["kernel"]
    );
    assert_eq!(bytes(&report), bytes(&plain));
    assert!(bytes(&report).iter().all(|(_, _, b)| b.is_some()));
}
