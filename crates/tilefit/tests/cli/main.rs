//! CLI tests: run the real `tilefit` binary and check exit code, stdout and stderr as a user
//! sees them.

mod devices;
mod explain;

use std::io::Write as _;
use std::process::{Command, Stdio};

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
    let mut child = Command::new(env!("CARGO_BIN_EXE_tilefit"))
        .args(args)
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
