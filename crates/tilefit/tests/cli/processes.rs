//! Nothing a captured script starts outlives the run, whatever ends it: the script's own exit
//! (with a child in a new session, a double-forked daemon), a second Ctrl-C during the grace, a
//! SIGHUP, a SIGKILL of tilefit (`fixtures/processes/leaky.py MODE PIDFILE`, under the real
//! emulation). Each test kills what it recorded when it ends, passed or failed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{emulate_python, scratch};

fn leaky() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/processes/leaky.py")
}

/// Whether `pid` is running (a zombie is not), and is one of the fixture's (a pid reused by
/// another program is not).
fn running(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit(')')
        .next()
        .and_then(|r| r.trim().chars().next());
    let command = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let command = String::from_utf8_lossy(&command);
    let ours = ["sleep\u{0}300", "leaky.py", "time.sleep(300)"]
        .iter()
        .any(|part| command.contains(part));
    ours && !matches!(state, None | Some('Z' | 'X'))
}

/// tilefit and the pids its script wrote: all killed when dropped, so a failing test leaves
/// nothing behind.
struct Capture {
    tilefit: Child,
    pids: PathBuf,
    json: PathBuf,
}

impl Capture {
    fn start(test: &str, mode: &str) -> Capture {
        let dir = scratch(&format!("processes-{test}"));
        let pids = dir.join("pids");
        let json = dir.join("report.json");
        let tilefit = Command::new(env!("CARGO_BIN_EXE_tilefit"))
            .args(["capture", "--targets", "h100", "--jobs", "1", "--python"])
            .arg(emulate_python())
            .arg("--json")
            .arg(&json)
            // The script writes its processes' pids beside the cache.
            .arg("--allow-writes")
            .arg(&dir)
            .arg(leaky())
            .args(["--", mode])
            .arg(&pids)
            .env("TILEFIT_CACHE_DIR", &dir)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
            .spawn()
            .unwrap();
        Capture {
            tilefit,
            pids,
            json,
        }
    }

    fn pids(&self) -> Vec<u32> {
        std::fs::read_to_string(&self.pids)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// Wait until the script wrote `count` pids.
    fn wait_for(&self, count: usize) -> Vec<u32> {
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.pids().len() < count && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
        }
        let pids = self.pids();
        assert_eq!(pids.len(), count, "the script never got going");
        pids
    }

    /// Wait until the script noted a SIGTERM (`PIDFILE.term`), at most `limit`.
    fn wait_for_term(&self, limit: Duration) {
        let noted = self.pids.with_extension("term");
        let deadline = Instant::now() + limit;
        while !noted.exists() {
            assert!(Instant::now() < deadline, "the script never got SIGTERM");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// tilefit's exit code (None: a signal ended it), waiting at most `limit`.
    fn exit(&mut self, limit: Duration) -> Option<i32> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.tilefit.try_wait().unwrap() {
                return status.code();
            }
            assert!(Instant::now() < deadline, "tilefit did not exit");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.tilefit.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// The pids still running `within` after now.
    fn left(&self, within: Duration) -> Vec<u32> {
        let deadline = Instant::now() + within;
        loop {
            let left: Vec<u32> = self.pids().into_iter().filter(|&p| running(p)).collect();
            if left.is_empty() || Instant::now() >= deadline {
                return left;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = self.tilefit.kill();
        let _ = self.tilefit.wait();
        for pid in self.pids() {
            if running(pid) {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
        }
    }
}

#[test]
fn a_child_in_a_new_session_and_a_daemon_end_with_the_script() {
    for (mode, count) in [("new-session", 2), ("daemon", 1), ("unmarked", 1)] {
        let mut capture = Capture::start(mode, mode);
        capture.exit(Duration::from_secs(180));
        assert_eq!(
            capture.pids().len(),
            count,
            "{mode}: the script did not run"
        );
        let left = capture.left(Duration::ZERO);
        assert!(left.is_empty(), "{mode}: {left:?} outlived the run");
    }
}

#[test]
fn a_second_ctrl_c_kills_a_script_that_ignores_sigterm_and_exits() {
    // The second signal must land after the first was taken (two signals pending at once are
    // one) and within the grace between SIGTERM and SIGKILL: the test sends it once the script
    // noted its SIGTERM, not after a fixed pause (a CI machine under load took longer than
    // one). A try can still miss the window and end as a plain cancel (exit 2), so the scenario
    // gets three tries; every try leaves nothing behind.
    let mut codes = Vec::new();
    for attempt in 0..3 {
        let mut capture = Capture::start(&format!("ctrl-c-{attempt}"), "stubborn");
        capture.wait_for(2);
        std::thread::sleep(Duration::from_millis(500));
        capture.signal("-INT");
        capture.wait_for_term(Duration::from_secs(60));
        capture.signal("-INT");
        let code = capture.exit(Duration::from_secs(10));
        let left = capture.left(Duration::from_secs(1));
        assert!(left.is_empty(), "{left:?} outlived the run");
        codes.push(code);
        if code == Some(130) {
            return;
        }
        assert_eq!(
            code,
            Some(2),
            "a try that missed the window is a plain cancel"
        );
    }
    panic!("no try exited 130 on the second Ctrl-C: {codes:?}");
}

#[test]
fn sighup_ends_the_run_like_ctrl_c_and_its_processes_with_it() {
    let mut capture = Capture::start("sighup", "wait");
    capture.wait_for(3);
    std::thread::sleep(Duration::from_millis(500));
    capture.signal("-HUP");
    assert_eq!(
        capture.exit(Duration::from_secs(30)),
        Some(2),
        "SIGHUP is a cancel"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&capture.json).unwrap()).unwrap();
    assert_eq!(report["incomplete"], true);
    let left = capture.left(Duration::ZERO);
    assert!(left.is_empty(), "{left:?} outlived the run");
}

#[test]
fn sigkill_of_tilefit_takes_the_script_and_its_processes_down() {
    let mut capture = Capture::start("sigkill", "wait");
    capture.wait_for(3);
    // The Python child has its watch in place once it runs the script's code.
    std::thread::sleep(Duration::from_secs(3));
    capture.signal("-KILL");
    assert_eq!(capture.exit(Duration::from_secs(10)), None);
    let left = capture.left(Duration::from_secs(5));
    assert!(left.is_empty(), "{left:?} outlived tilefit");
}
