//! CLI tests: run the real `tilefit` binary and check exit code, stdout and stderr as a user
//! sees them.

mod autograd;
mod bench_harness;
mod capture;
mod capture_fails;
mod capture_reports;
mod devices;
mod emulation_units;
mod explain;
mod extract;
mod faults;
mod field;
mod fix_files;
mod flags;
mod github;
mod hostile;
mod hostile_files;
mod hostile_outputs;
mod inductor;
mod listed;
mod live;
mod no_trace;
mod one_pipeline;
mod probe;
mod processes;
mod python;
mod replay;
mod report;
mod resources;
mod saved;
mod scale;
mod scope_values;
mod shapes;
mod shipped;
mod split_runs;
mod thread_limit;
mod toolchain;
mod triton_upgrade;
mod whole_run;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// What one run of the binary produced.
pub struct Run {
    /// Exit code.
    pub code: i32,
    /// Everything printed to stdout.
    pub stdout: String,
    /// Everything printed to stderr.
    pub stderr: String,
}

/// Run `tilefit ARGS`, optionally with text on stdin.
pub fn tilefit(args: &[&str], stdin: Option<&str>) -> Run {
    tilefit_with(args, stdin, &[])
}

/// Run `tilefit ARGS` with extra environment variables.
pub fn tilefit_with(args: &[&str], stdin: Option<&str>, env: &[(&str, &Path)]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tilefit"))
        .args(args)
        .env_remove("TILEFIT_WORKER_SCRIPT")
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .env("NO_COLOR", "1")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tilefit binary starts");
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let run = Run {
        code: out.status.code().expect("exited, not killed by a signal"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    };
    assert!(
        !run.stderr.contains("panicked"),
        "tilefit panicked: {}",
        run.stderr
    );
    run
}

/// The Python with the pinned Triton that compiling tests use: `TILEFIT_PYTHON` when set (CI
/// sets it), else tilefit's own managed environment, provisioned once (the real thing either way).
pub fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        if let Some(python) = std::env::var_os("TILEFIT_PYTHON") {
            return PathBuf::from(python);
        }
        let cache = tilefit_core::compile::toolchain::default_cache_dir();
        tilefit_core::compile::toolchain::ensure_managed(
            &cache,
            tilefit_core::compile::toolchain::DEFAULT_TRITON_VERSION,
            &mut |_| {},
        )
        .expect("provisioning Triton for the tests (set TILEFIT_PYTHON to use an existing one)")
        .python
    })
}

/// The torch release the emulation tests pin (PyPI's build; it imports on a machine with no GPU,
/// and brings the Triton it was built with).
pub const EMULATION_TORCH: &str = "2.11.0";

/// The newest torch release, whose Inductor the `torch.compile` capture is also tested against
/// (it brings Triton 3.9).
pub const EMULATION_TORCH_NEWEST: &str = "2.15.0";

/// The Python with torch that `tilefit capture` tests run scripts with: `TILEFIT_EMULATE_PYTHON`
/// when set (CI sets it), else a virtual environment with torch and pytest under tilefit's cache,
/// made once (the real thing either way: torch's FakeTensor and Triton's compiler).
pub fn emulate_python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| emulation_venv("TILEFIT_EMULATE_PYTHON", EMULATION_TORCH))
}

/// As [`emulate_python`], with the newest torch release ([`EMULATION_TORCH_NEWEST`]):
/// `TILEFIT_EMULATE_PYTHON_NEWEST` when set (CI sets it).
pub fn emulate_python_newest() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| emulation_venv("TILEFIT_EMULATE_PYTHON_NEWEST", EMULATION_TORCH_NEWEST))
}

fn emulation_venv(variable: &str, torch: &str) -> PathBuf {
    if let Some(python) = std::env::var_os(variable) {
        return PathBuf::from(python);
    }
    let cache = tilefit_core::compile::toolchain::default_cache_dir();
    let venv = cache.join(format!("test-emulation-torch-{torch}"));
    let python = venv.join("bin/python");
    let ready = |python: &Path| {
        Command::new(python)
            .args(["-c", "import torch, pytest"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if ready(&python) {
        return python;
    }
    let staging = cache.join(format!(".staging-test-emulation-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&staging)
        .status()
        .expect("python3 makes a venv for the emulation tests");
    assert!(made.success(), "python3 -m venv failed");
    let installed = Command::new(staging.join("bin/python"))
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg(format!("torch=={torch}"))
        .arg("pytest")
        .status()
        .expect("pip runs");
    assert!(
        installed.success(),
        "installing torch {torch} for the emulation tests (set {variable} to a Python with torch)"
    );
    let _ = std::fs::remove_dir_all(&venv);
    std::fs::rename(&staging, &venv).expect("moving the emulation venv in place");
    assert!(
        ready(&python),
        "the emulation venv does not import torch and pytest"
    );
    python
}

/// The folder every test's scratch folders live in: under the build's `target/tmp`, never
/// `/tmp`, one per test process. Folders that earlier test processes left (killed, or kept for a
/// look after a failure) are removed the first time, once those processes are gone.
pub fn scratch_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        if let Ok(entries) = std::fs::read_dir(base) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Some(pid) = name.strip_prefix("tilefit-test-") else {
                    continue;
                };
                if !Path::new("/proc").join(pid).exists() {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let root = base.join(format!("tilefit-test-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        root
    })
}

/// A fresh, empty folder for one test, under [`scratch_root`].
pub fn scratch(name: &str) -> PathBuf {
    let dir = scratch_root().join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A file of the repository, by its path from the root.
pub fn repo_file(path: &str) -> String {
    format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))
}

/// The MoE example's spec, its kernel named by absolute path and its config files by `from_files`
/// (to write beside a folder made elsewhere).
pub fn moe_spec(from_files: &str) -> String {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/moe");
    std::fs::read_to_string(example.join("spec.toml"))
        .unwrap()
        .replace(
            "file = \"fused_moe.py\"",
            &format!(
                "file = {:?}",
                example.join("fused_moe.py").display().to_string()
            ),
        )
        .replace(
            "from_files = \"configs/*.json\"",
            &format!("from_files = {from_files:?}"),
        )
}

/// No line of a run's output is a workflow command but tilefit's own annotations (under
/// `github`, whose values GitHub's rules escape), and none starts with `starts`.
pub fn assert_no_forged_lines(text: &str, format: &str, starts: &str) {
    for line in text.lines() {
        let own = format == "github"
            && ["::error ", "::warning ", "::notice "]
                .iter()
                .any(|c| line.starts_with(c));
        assert!(
            own || !line.trim_start().starts_with("::"),
            "{format}: {line}"
        );
        assert!(!line.starts_with(starts), "{format}: {line}");
    }
}

/// A fixture's path.
pub fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `tilefit probe SPEC --python <the test Python> --jobs 2 EXTRA...` with its own cache.
pub fn probe(spec: &str, cache: &Path, extra: &[&str]) -> Run {
    let python = python().to_str().unwrap();
    let mut args = vec!["probe", spec, "--python", python, "--jobs", "2"];
    args.extend(extra);
    tilefit_with(&args, None, &[("TILEFIT_CACHE_DIR", cache)])
}

/// The JSON a successful run printed.
pub fn json_of(run: &Run) -> serde_json::Value {
    assert_eq!(
        run.code, 0,
        "stderr: {}\nstdout: {}",
        run.stderr, run.stdout
    );
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

/// Run a fixture script with the test Python (plain Triton, no tilefit), Triton's cache in
/// `triton_cache`; its stdout. Fails the test when the script fails.
pub fn run_fixture(script: &str, args: &[&str], triton_cache: &Path) -> String {
    let out = std::process::Command::new(python())
        .arg(fixture(script))
        .args(args)
        .env("TRITON_CACHE_DIR", triton_cache)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Compile matmul example configs (`sm_90:128:256:64:4:3`: target, BLOCK_M, BLOCK_N, BLOCK_K,
/// num_warps, num_stages) with a plain `triton.compile`, keeping binaries and ptxas's log in
/// `dir`; the script's `TAG BYTES` lines.
pub fn compile_binaries(dir: &Path, configs: &[&str]) -> String {
    let mut args = vec![dir.to_str().unwrap()];
    args.extend(configs);
    run_fixture("compile_binaries.py", &args, &dir.join("triton-cache"))
}

/// The MLA example's shared bytes from Triton's own `triton.compile` for `arch` (no tilefit
/// involved), with Triton's cache in `triton_cache`: the reference the probe and replay tests
/// check tilefit against.
pub fn direct_mla_compile(
    arch: &str,
    (kv, block_n, stages): (&str, u32, u32),
    triton_cache: &Path,
) -> u64 {
    let kernel = format!(
        "{}/../../examples/mla_decode/mla_decode.py",
        env!("CARGO_MANIFEST_DIR")
    );
    run_fixture(
        "direct_compile.py",
        &[
            &kernel,
            "mla_decode_stage1",
            arch,
            kv,
            &block_n.to_string(),
            &stages.to_string(),
        ],
        triton_cache,
    )
    .trim()
    .parse()
    .unwrap()
}
