//! CLI tests: run the real `tilefit` binary and check exit code, stdout and stderr as a user
//! sees them.

mod devices;
mod explain;
mod faults;
mod listed;
mod live;
mod probe;
mod replay;
mod report;
mod resources;
mod toolchain;

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
        let cache = tilefit_core::toolchain::default_cache_dir();
        tilefit_core::toolchain::ensure_managed(
            &cache,
            tilefit_core::toolchain::DEFAULT_TRITON_VERSION,
            &mut |_| {},
        )
        .expect("provisioning Triton for the tests (set TILEFIT_PYTHON to use an existing one)")
        .python
    })
}

/// A fresh, empty folder for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tilefit-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fixture's path.
pub fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
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
    let out = std::process::Command::new(python())
        .arg(fixture("direct_compile.py"))
        .args([
            &kernel,
            "mla_decode_stage1",
            arch,
            kv,
            &block_n.to_string(),
            &stages.to_string(),
        ])
        .env("TRITON_CACHE_DIR", triton_cache)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}
