//! A user's script run as a child process under control (`tilefit capture`): its own process
//! group, so everything it starts dies with it; its stdout and stderr streamed line by line to a
//! callback while it runs, with only a bounded tail kept in memory; a time limit; the run's
//! cancel flag (SIGINT/SIGTERM). When the script itself exits, the group is killed, so a
//! grandchild that still holds the pipes cannot hang the run.

use std::collections::VecDeque;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

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

fn kill_group(pid: u32) {
    use rustix::process::{Pid, Signal, kill_process_group};
    if let Some(group) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = kill_process_group(group, Signal::TERM);
        std::thread::sleep(KILL_GRACE);
        let _ = kill_process_group(group, Signal::KILL);
    }
}

/// Run `command` (its stdin closed) until it ends, `limit` passes or `cancel` is raised;
/// `on_line` gets each line of its output as it is written.
pub fn run(
    mut command: Command,
    limit: Duration,
    cancel: &Cancel,
    on_line: &mut dyn FnMut(Stream, &str),
) -> ScriptOutcome {
    let started = Instant::now();
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    command
        .stdin(Stdio::null())
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
    let end = loop {
        if let Ok(message) = messages.recv_timeout(Duration::from_millis(50)) {
            take(message, &mut done);
            continue;
        }
        match child.try_wait() {
            Ok(Some(status)) => {
                use std::os::unix::process::ExitStatusExt as _;
                break match (status.code(), status.signal()) {
                    (Some(code), _) => ScriptEnd::Exited(code),
                    (None, Some(signal)) => ScriptEnd::Signaled(signal),
                    (None, None) => ScriptEnd::Exited(-1),
                };
            }
            Ok(None) => {}
            Err(e) => break ScriptEnd::CannotStart(e.to_string()),
        }
        if cancel.is_cancelled() {
            kill_group(pid);
            let _ = child.wait();
            break ScriptEnd::Cancelled;
        }
        if started.elapsed() > limit {
            kill_group(pid);
            let _ = child.wait();
            break ScriptEnd::TimedOut(limit);
        }
    };
    // Whatever the script started dies with it: a grandchild holding the pipes would hold the
    // readers (and the run) open.
    kill_group(pid);
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
