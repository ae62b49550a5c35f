//! A user's script run as a child process under control (`tilefit capture`): its own process
//! group and a [`Mark`] in its environment, so everything it starts ends with it, in its group or
//! not (see `guests`); its stdout and stderr streamed line by line to a callback while it runs,
//! with only a bounded tail kept in memory; a time limit; the run's cancel flag (SIGINT, SIGTERM,
//! SIGHUP; raised twice, no grace). When the script itself exits, its processes are ended before
//! it is reaped (its pid, which names its group, stays taken until then), so a grandchild that
//! still holds the pipes cannot hang the run and no reused pid is signalled. The script gets
//! SIGKILL when tilefit dies (a parent-death signal), however tilefit dies.

use std::collections::VecDeque;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, kill_process_group, waitid};

use super::guests::{self, MARK_VAR, Mark};
use crate::cancel::Cancel;

/// The longest line kept or shown; the rest of a longer line is dropped (and said).
const MAX_LINE: usize = 4096;

/// Lines of each stream kept for the report.
const TAIL_LINES: usize = 40;

/// How long the pipes may stay open after the script's group was killed.
const DRAIN: Duration = Duration::from_secs(2);

/// Grace between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_millis(500);

/// Which stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// The script's stdout.
    Stdout,
    /// The script's stderr.
    Stderr,
}

/// How the script ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptEnd {
    /// It exited with this status.
    Exited(i32),
    /// A signal ended it (a crash is SIGSEGV, SIGABRT, SIGBUS).
    Signaled(i32),
    /// It ran past the time limit and was killed.
    TimedOut(Duration),
    /// The run was cancelled (SIGINT or SIGTERM to tilefit) and the script killed.
    Cancelled,
    /// It could not be started.
    CannotStart(String),
}

/// What a script run came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptOutcome {
    /// How it ended.
    pub end: ScriptEnd,
    /// The last lines of its stdout.
    pub stdout_tail: Vec<String>,
    /// The last lines of its stderr.
    pub stderr_tail: Vec<String>,
    /// Lines it wrote in all.
    pub lines: u64,
    /// Wall time.
    pub elapsed: Duration,
}

/// The name of a signal a script commonly dies of.
pub fn signal_name(signal: i32) -> &'static str {
    match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => "a signal",
    }
}

/// What a reader saw of its stream in all: the lines, and the last of them.
#[derive(Default)]
struct Seen {
    lines: u64,
    tail: VecDeque<String>,
}

enum Message {
    /// A line to show while the script runs (the first [`LIVE_LINES`] of each stream).
    Line(Stream, String),
    /// The stream ended.
    Done(Stream, Seen),
}

/// Lines of each stream sent on while the script runs; the rest are counted, and the tail kept.
const LIVE_LINES: u64 = 5000;

fn reader(mut pipe: impl Read + Send + 'static, stream: Stream, out: mpsc::Sender<Message>) {
    std::thread::spawn(move || {
        let mut buffer = vec![0u8; 64 * 1024];
        let mut line: Vec<u8> = Vec::new();
        let mut cut = false;
        let mut seen = Seen::default();
        let finish = |line: &[u8], cut: bool, seen: &mut Seen| {
            let mut text = String::from_utf8_lossy(line).into_owned();
            if cut {
                text.push_str(" [line cut]");
            }
            seen.lines += 1;
            if seen.lines <= LIVE_LINES {
                let _ = out.send(Message::Line(stream, text.clone()));
            }
            if seen.tail.len() == TAIL_LINES {
                seen.tail.pop_front();
            }
            seen.tail.push_back(text);
        };
        loop {
            let n = match pipe.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let mut rest = &buffer[..n];
            while !rest.is_empty() {
                let end = memchr::memchr(b'\n', rest);
                let part = &rest[..end.unwrap_or(rest.len())];
                let room = MAX_LINE.saturating_sub(line.len());
                line.extend_from_slice(&part[..part.len().min(room)]);
                cut |= part.len() > room;
                match end {
                    Some(at) => {
                        finish(&line, cut, &mut seen);
                        line.clear();
                        cut = false;
                        rest = &rest[at + 1..];
                    }
                    None => rest = &[],
                }
            }
        }
        if !line.is_empty() {
            finish(&line, cut, &mut seen);
        }
        let _ = out.send(Message::Done(stream, seen));
    });
}

/// End the script's processes: its group and every process that carries its mark, SIGTERM, a
/// grace (none once the cancel is urgent), SIGKILL. The leader must not have been reaped: its
/// pid names the group, and a reaped one could be another's.
fn end_processes(group: Option<Pid>, mark: &Mark, leader: u32, cancel: &Cancel) {
    if let Some(group) = group {
        let first = if cancel.is_urgent() {
            Signal::KILL
        } else {
            Signal::TERM
        };
        let _ = kill_process_group(group, first);
    }
    mark.end(leader, KILL_GRACE, &|| cancel.is_urgent());
    if let Some(group) = group {
        let _ = kill_process_group(group, Signal::KILL);
    }
}

/// Whether the child `pid` has ended, observed without reaping it (its pid stays taken).
/// `block`: wait for it.
fn ended_unreaped(pid: Pid, block: bool) -> std::io::Result<bool> {
    let mut options = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
    if !block {
        options |= WaitIdOptions::NOHANG;
    }
    match waitid(WaitId::Pid(pid), options) {
        Ok(Some(_)) => Ok(true),
        // With NOHANG, a child that has not ended.
        Ok(None) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The script's own command: its process group, its mark, and SIGKILL when tilefit dies.
#[expect(
    unsafe_code,
    reason = "the parent-death signal can only be set in the child, between fork and exec"
)]
fn guest(command: &mut Command, mark: &Mark) {
    use std::os::unix::process::CommandExt as _;
    command.process_group(0).env(MARK_VAR, mark.value());
    let parent = rustix::process::getpid();
    // SAFETY: between fork and exec only async-signal-safe calls are made: two raw syscalls
    // (prctl, getppid) and no allocation.
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
            // tilefit died between the fork and the prctl: no signal will come.
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::from(std::io::ErrorKind::Interrupted));
            }
            Ok(())
        });
    }
}

/// Run `command` (its stdin closed) until it ends, `limit` passes or `cancel` is raised;
/// `on_line` gets each line of its output as it is written.
pub fn run(
    command: Command,
    limit: Duration,
    cancel: &Cancel,
    on_line: &mut dyn FnMut(Stream, &str),
) -> ScriptOutcome {
    run_with_input(command, b"", limit, cancel, on_line)
}

/// [`run`], with `input` written to the command's stdin and the pipe then closed (a secret that
/// must not be in its environment, where `/proc/PID/environ` shows it); empty, stdin is closed.
pub fn run_with_input(
    mut command: Command,
    input: &[u8],
    limit: Duration,
    cancel: &Cancel,
    on_line: &mut dyn FnMut(Stream, &str),
) -> ScriptOutcome {
    let started = Instant::now();
    guests::become_subreaper();
    let mark = Mark::new();
    guest(&mut command, &mark);
    command
        .stdin(if input.is_empty() {
            Stdio::null()
        } else {
            Stdio::piped()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut outcome = ScriptOutcome {
        end: ScriptEnd::Exited(0),
        stdout_tail: Vec::new(),
        stderr_tail: Vec::new(),
        lines: 0,
        elapsed: Duration::ZERO,
    };
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            outcome.end = ScriptEnd::CannotStart(e.to_string());
            return outcome;
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A few bytes: the pipe holds them without a reader; a child that exits first is its own
        // end to report.
        let _ = std::io::Write::write_all(&mut stdin, input);
    }
    let (send, messages) = mpsc::channel();
    if let Some(out) = child.stdout.take() {
        reader(out, Stream::Stdout, send.clone());
    }
    if let Some(err) = child.stderr.take() {
        reader(err, Stream::Stderr, send);
    }
    let mut done: Vec<(Stream, Seen)> = Vec::new();
    let mut take = |message: Message, done: &mut Vec<(Stream, Seen)>| match message {
        Message::Line(stream, line) => on_line(stream, &line),
        Message::Done(stream, seen) => done.push((stream, seen)),
    };
    let pid = child.id();
    let leader = i32::try_from(pid).ok().and_then(Pid::from_raw);
    let ended = loop {
        if let Ok(message) = messages.recv_timeout(Duration::from_millis(50)) {
            take(message, &mut done);
            continue;
        }
        match leader.map(|l| ended_unreaped(l, false)) {
            Some(Ok(true)) => break None,
            Some(Ok(false)) => {}
            Some(Err(e)) => break Some(ScriptEnd::CannotStart(e.to_string())),
            None => break Some(ScriptEnd::CannotStart(format!("pid {pid}"))),
        }
        if cancel.is_cancelled() || started.elapsed() > limit {
            end_processes(leader, &mark, pid, cancel);
            if let Some(leader) = leader {
                let _ = ended_unreaped(leader, true);
            }
            break Some(if cancel.is_cancelled() {
                ScriptEnd::Cancelled
            } else {
                ScriptEnd::TimedOut(limit)
            });
        }
    };
    // Whatever the script started ends with it (a grandchild holding the pipes would hold the
    // readers, and the run, open), while its pid is still taken; then it is reaped.
    end_processes(leader, &mark, pid, cancel);
    let status = child.wait();
    let end = ended.unwrap_or_else(|| match status {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt as _;
            match (status.code(), status.signal()) {
                (Some(code), _) => ScriptEnd::Exited(code),
                (None, Some(signal)) => ScriptEnd::Signaled(signal),
                (None, None) => ScriptEnd::Exited(-1),
            }
        }
        Err(e) => ScriptEnd::CannotStart(e.to_string()),
    });
    let deadline = Instant::now() + DRAIN;
    while done.len() < 2 {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            break;
        };
        match messages.recv_timeout(left) {
            Ok(message) => take(message, &mut done),
            Err(_) => break,
        }
    }
    for (stream, seen) in done {
        outcome.lines += seen.lines;
        let tail: Vec<String> = seen.tail.into();
        match stream {
            Stream::Stdout => outcome.stdout_tail = tail,
            Stream::Stderr => outcome.stderr_tail = tail,
        }
    }
    outcome.end = end;
    outcome.elapsed = started.elapsed();
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, limit: Duration) -> (ScriptOutcome, Vec<String>) {
        let mut command = Command::new("sh");
        command.arg("-c").arg(script);
        let mut seen = Vec::new();
        let outcome = run(command, limit, &Cancel::new(), &mut |_, line| {
            seen.push(line.to_owned());
        });
        (outcome, seen)
    }

    #[test]
    fn exit_status_signals_and_lines() {
        let (out, seen) = sh("echo one; echo two >&2; exit 4", Duration::from_secs(20));
        assert_eq!(out.end, ScriptEnd::Exited(4));
        assert_eq!(seen.len(), 2);
        assert_eq!(out.stderr_tail, vec!["two".to_owned()]);
        let (out, _) = sh("kill -SEGV $$", Duration::from_secs(20));
        assert_eq!(out.end, ScriptEnd::Signaled(11));
    }

    #[test]
    fn a_hang_is_killed_at_the_limit_and_a_grandchild_cannot_hold_the_pipe() {
        let (out, _) = sh("sleep 60", Duration::from_millis(300));
        assert_eq!(out.end, ScriptEnd::TimedOut(Duration::from_millis(300)));
        assert!(out.elapsed < Duration::from_secs(10));
        let (out, _) = sh("(sleep 60 &) ; echo started", Duration::from_secs(30));
        assert_eq!(out.end, ScriptEnd::Exited(0));
        assert!(out.elapsed < Duration::from_secs(10), "{:?}", out.elapsed);
    }

    #[test]
    fn a_script_that_exited_is_seen_ended_while_its_pid_stays_taken() {
        let mut child = Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !ended_unreaped(pid, false).unwrap() {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(10));
        }
        // Not reaped: a zombie whose pid (and group) no other process can have yet.
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", child.id())).unwrap();
        assert_eq!(
            stat.rsplit(')').next().unwrap().trim().chars().next(),
            Some('Z')
        );
        assert!(ended_unreaped(pid, true).unwrap());
        assert_eq!(child.wait().unwrap().code(), Some(3));
    }

    #[test]
    fn what_the_script_started_in_a_new_session_ends_with_it() {
        let dir = std::env::temp_dir().join(format!("tilefit-script-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pid_file = dir.join("pid");
        let script = format!("setsid sleep 60 & echo $! > {}", pid_file.display());
        let (out, _) = sh(&script, Duration::from_secs(20));
        assert_eq!(out.end, ScriptEnd::Exited(0));
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let left = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()));
        assert!(
            left.is_err() || left.is_ok_and(|s| s.contains(") Z")),
            "the setsid child outlived the script"
        );
    }

    #[test]
    fn a_long_line_is_cut_and_the_tail_is_bounded() {
        let (out, _) = sh(
            "head -c 20000 /dev/zero | tr '\\0' x; echo; seq 1 500",
            Duration::from_secs(20),
        );
        assert_eq!(out.lines, 501);
        assert_eq!(out.stdout_tail.len(), TAIL_LINES);
        assert_eq!(out.stdout_tail.last().map(String::as_str), Some("500"));
    }
}
