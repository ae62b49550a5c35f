//! The Python package (`python/tilefit`): its unit tests run against exports this binary writes
//! for the examples, with the test Python and the real Triton (the autotuned kernel's own
//! `triton.Config` list is imported). No GPU: every device is named.

use std::path::Path;

use super::{probe, python, scratch};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .unwrap()
}

#[test]
fn the_python_package_reads_the_exports_the_probe_writes() {
    let cache = scratch("python-cache");
    let out = scratch("python-out");
    let examples = repo().join("examples");
    let path = |name: &str| out.join(name).display().to_string();
    let mla = probe(
        examples.join("mla_decode/spec.toml").to_str().unwrap(),
        &cache,
        &["--emit-configs", &path("mla.json")],
    );
    assert_eq!(mla.code, 0, "{}", mla.stderr);
    let matmul = probe(
        examples.join("matmul/autotune.toml").to_str().unwrap(),
        &cache,
        &[
            "--emit-configs",
            &path("mm.json"),
            "--json",
            &path("mm-report.json"),
        ],
    );
    assert_eq!(matmul.code, 0, "{}", matmul.stderr);

    let run = std::process::Command::new(python())
        .args(["-m", "unittest", "discover", "-v", "-s"])
        .arg(repo().join("python/tests"))
        .env("PYTHONPATH", repo().join("python"))
        .env("TILEFIT_TEST_MLA_EXPORT", out.join("mla.json"))
        .env("TILEFIT_TEST_MM_EXPORT", out.join("mm.json"))
        .env("TILEFIT_TEST_MM_REPORT", out.join("mm-report.json"))
        .env(
            "TILEFIT_TEST_MM_KERNEL",
            examples.join("matmul/matmul_autotuned.py"),
        )
        .env("TILEFIT_TEST_NO_GPU", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{text}");
    // Every offline test ran: none skipped for a missing export.
    assert!(text.contains("Ran "), "{text}");
    assert!(!text.contains("skipped 'TILEFIT_TEST_"), "{text}");
    for name in [
        "test_a_desk_part_gets_the_shallow_config",
        "test_a_datacenter_part_gets_the_deeper_config_the_report_recommends",
        "test_an_unprobed_arch_raises_unless_a_fallback_is_given",
        "test_the_pruner_keeps_exactly_what_the_probe_says_fits_sm_120",
        "test_each_malformed_export_names_its_file_and_field",
        "test_configs_hold_kernel_parameters_only",
        "test_every_product_name_of_the_table_resolves_to_its_arch",
        "test_no_gpu_is_a_tilefit_error_that_says_what_to_pass",
        "test_the_prune_hint_names_what_exists",
    ] {
        assert!(
            text.contains(&format!("{name} (")),
            "{name} did not run: {text}"
        );
    }
}

/// The test Python's `PYTHONPATH` for pytest: the package, plus a scratch install of pytest when
/// the interpreter has none (CI installs it into its venv; tilefit's managed one has none).
fn pytest_path() -> std::ffi::OsString {
    let mut paths = vec![repo().join("python")];
    let has = std::process::Command::new(python())
        .args(["-c", "import pytest"])
        .status()
        .unwrap()
        .success();
    if !has {
        let site = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pytest-site");
        if !site.join("pytest").exists() {
            let installed = std::process::Command::new(python())
                .args(["-m", "pip", "install", "--quiet", "--target"])
                .arg(&site)
                .arg("pytest")
                .status()
                .unwrap();
            assert!(installed.success(), "installing pytest for the plugin test");
        }
        paths.push(site);
    }
    std::env::join_paths(paths).unwrap()
}

fn pytest(args: &[&str], env: &[(&str, &Path)]) -> super::Run {
    let out = std::process::Command::new(python())
        .args([
            "-m",
            "pytest",
            "-p",
            "tilefit.pytest_plugin",
            "-p",
            "no:cacheprovider",
        ])
        .args(["--tilefit-bin", env!("CARGO_BIN_EXE_tilefit")])
        .args(args)
        .current_dir(repo())
        .env("PYTHONPATH", pytest_path())
        .env("TILEFIT_PYTHON", python())
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .output()
        .unwrap();
    super::Run {
        code: out.status.code().unwrap(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn the_pytest_plugin_replays_what_the_suite_compiled_for_the_fleet() {
    let out = scratch("pytest-plugin");
    let bytes_file = out.join("shared");
    let suite = "python/plugin_suite/test_matmul_compile.py";
    let env = [
        ("TILEFIT_SUITE_OUT", bytes_file.as_path()),
        ("TILEFIT_CACHE_DIR", out.as_path()),
    ];
    let run = pytest(&["--tilefit-fleet=h100,rtx-pro-6000", suite], &env);
    // The suite passed, but its kernel misses the RTX PRO 6000: the session fails.
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("1 passed"), "{}", run.stdout);
    let shared: u64 = std::fs::read_to_string(&bytes_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(shared > 101_376 && shared <= 232_448, "sm_90: {shared}");
    // The RTX PRO 6000's bytes come from its own arch's compile: the same config compiled
    // directly for sm_120.
    let direct = std::process::Command::new(python())
        .arg(repo().join(suite))
        .arg("sm_120")
        .env("TRITON_CACHE_DIR", out.join("direct-cache"))
        .output()
        .unwrap();
    assert!(
        direct.status.success(),
        "{}",
        String::from_utf8_lossy(&direct.stderr)
    );
    let sm_120: u64 = String::from_utf8_lossy(&direct.stdout)
        .trim()
        .parse()
        .unwrap();
    assert!(sm_120 > 101_376, "sm_120: {sm_120}");
    let line = format!(
        "matmul_kernel  OVER on rtx-pro-6000: {sm_120} bytes > 101376 (by {})",
        sm_120 - 101_376
    );
    assert!(run.stdout.contains(&line), "{line}\n{}", run.stdout);
    assert!(!run.stdout.contains("OVER on h100"), "{}", run.stdout);

    let run = pytest(
        &[
            "--tilefit-fleet=h100,rtx-pro-6000",
            "--tilefit-report-only",
            suite,
        ],
        &env,
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains(&line), "{}", run.stdout);

    // A suite that compiles no Triton kernel has nothing to replay, and passes.
    let plain = out.join("test_plain.py");
    std::fs::write(&plain, "def test_plain():\n    assert 1 + 1 == 2\n").unwrap();
    let run = pytest(
        &["--tilefit-fleet=h100,rtx-pro-6000", plain.to_str().unwrap()],
        &env,
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("the session compiled no Triton kernels"),
        "{}",
        run.stdout
    );

    // A test failing with Triton's OutOfResources carries tilefit explain's reading.
    let run = pytest(
        &["--tilefit-fleet=h100", "python/plugin_suite/oor_case.py"],
        &env,
    );
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("tilefit explain"), "{}", run.stdout);
    assert!(run.stdout.contains("101376"), "{}", run.stdout);
}

/// The plugin fails a session whose replay reports a compile error, not only one with a kernel
/// over budget: a suite that passes, whose cluster kernel (`num_ctas=2`, compiled for sm_90)
/// Triton refuses to compile for an A100. One line says why; nothing is left in the temp folder.
#[test]
fn the_pytest_plugin_fails_a_session_whose_replay_does_not_compile() {
    let out = scratch("pytest-compile-error");
    let tmp = scratch("pytest-compile-error-tmp");
    let env = [
        ("TILEFIT_CACHE_DIR", out.as_path()),
        ("TMPDIR", tmp.as_path()),
    ];
    let suite = "python/plugin_suite/test_clusters_compile.py";
    let run = pytest(&["--tilefit-fleet=h100,a100", suite], &env);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("1 passed"), "{}", run.stdout);
    assert!(
        run.stdout.contains("copy_kernel  COMPILE-ERROR on sm_80"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("tilefit: failing the session: 1 replays that did not compile or failed"),
        "{}",
        run.stdout
    );
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "the plugin left {left:?} behind");

    // --tilefit-report-only reports the same, and passes.
    let run = pytest(
        &["--tilefit-fleet=h100,a100", "--tilefit-report-only", suite],
        &env,
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("--tilefit-report-only: not failing the session"),
        "{}",
        run.stdout
    );

    // A replay that cannot run at all (a fleet tilefit does not know) fails the session too.
    let run = pytest(&["--tilefit-fleet=no-such-gpu", suite], &env);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("tilefit: failing the session: `tilefit replay` failed (exit 2)"),
        "{}",
        run.stdout
    );
    assert!(std::fs::read_dir(&tmp).unwrap().next().is_none());
}
