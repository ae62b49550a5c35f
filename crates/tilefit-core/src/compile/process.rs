//! One worker process: start, handshake, one request at a time with a timeout, and the faults
//! a child can have (it dies, hangs, or writes something that is not a protocol line). Stdout is
//! read on a thread into a channel so a timeout can be enforced; stderr is drained on another
//! thread into a bounded tail that is attached to faults, so a flood of stderr never blocks the
//! child and never fills memory.
//!
//! A worker is either spawned (a child of tilefit) or forked by a zygote (see `zygote`); the two
//! differ only in how the process is stopped and how its exit status is learnt.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::BorrowedFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::protocol::Envelope;
use super::{Hello, Reply};
use crate::vocab::{PROTOCOL_VERSION, Request};

/// How much of a worker's stderr is kept for error reports.
const STDERR_TAIL_BYTES: usize = 8 * 1024;

/// How to start a worker.
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    /// The interpreter.
    pub program: PathBuf,
    /// Its arguments (the script comes last).
    pub args: Vec<OsString>,
    /// Extra environment (a private `TRITON_CACHE_DIR`).
    pub env: Vec<(OsString, OsString)>,
    /// How long start-up and the handshake may take (importing Triton takes seconds).
    pub startup_timeout: Duration,
    /// Raised on SIGINT/SIGTERM: a worker being waited on is killed and the wait ends.
    pub cancel: crate::cancel::Cancel,
    /// Where the embedded worker package is written before a worker starts (`None` for a
    /// script file).
    pub package: Option<PathBuf>,
}

impl WorkerCommand {
    /// Run the embedded worker package with `python -I -B -u -c BOOT PACKAGE_ROOT`; the package
    /// is written under the Triton cache folder (`tilefit-worker/`), which is the run's own.
    pub fn embedded(python: PathBuf, triton_cache: PathBuf) -> WorkerCommand {
        let package = triton_cache.join("tilefit-worker");
        WorkerCommand {
            program: python,
            args: vec![
                "-I".into(),
                "-B".into(),
                "-u".into(),
                "-c".into(),
                super::protocol::WORKER_BOOT.into(),
                package.clone().into_os_string(),
            ],
            env: vec![("TRITON_CACHE_DIR".into(), triton_cache.into_os_string())],
            startup_timeout: Duration::from_secs(120),
            cancel: crate::cancel::Cancel::new(),
            package: Some(package),
        }
    }

    /// Run a script file instead of the embedded one (fault injection in tests).
    pub fn script(python: PathBuf, script: PathBuf, triton_cache: PathBuf) -> WorkerCommand {
        let mut command = WorkerCommand::embedded(python, triton_cache);
        command.args = vec![
            "-I".into(),
            "-B".into(),
            "-u".into(),
            script.into_os_string(),
        ];
        command.package = None;
        command
    }
}

/// What can go wrong with a worker. Each carries the tail of its stderr.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkerFault {
    /// The process could not be started.
    #[error("the worker could not start: {0}")]
    Spawn(String),
    /// It exited (or closed stdout) before answering.
    #[error("the worker died ({status})")]
    Crashed {
        /// Exit status or signal.
        status: WorkerExit,
        /// Its last stderr.
        stderr: String,
    },
    /// It did not answer in time and was killed.
    #[error("the worker did not answer within {seconds} s and was killed")]
    TimedOut {
        /// The timeout.
        seconds: u64,
        /// Its last stderr.
        stderr: String,
    },
    /// It wrote a line that is not a protocol message.
    #[error("the worker wrote a line that is not a protocol message: {line}")]
    Garbled {
        /// The line, shortened.
        line: String,
        /// Its last stderr.
        stderr: String,
    },
    /// The handshake named another protocol.
    #[error("the worker speaks protocol {found}, tilefit speaks {expected}")]
    Protocol {
        /// What the worker said.
        found: u32,
        /// What we speak.
        expected: u32,
    },
    /// Triton does not import in this interpreter.
    #[error("triton does not import: {0}")]
    TritonImport(String),
    /// The run was interrupted (SIGINT/SIGTERM) while this worker was busy; it was killed.
    #[error("interrupted")]
    Interrupted,
}

impl WorkerFault {
    /// The stderr tail, if the fault carries one.
    pub fn stderr(&self) -> &str {
        match self {
            WorkerFault::Crashed { stderr, .. }
            | WorkerFault::TimedOut { stderr, .. }
            | WorkerFault::Garbled { stderr, .. } => stderr,
            _ => "",
        }
    }
}

/// A running worker.
pub struct Worker {
    cancel: crate::cancel::Cancel,
    process: Process,
    stdin: Box<dyn Write + Send>,
    /// A zygote's stdin is a Unix socket: requests that pass file descriptors go through it.
    control: Option<UnixStream>,
    lines: Receiver<Option<String>>,
    stderr_tail: Arc<Mutex<String>>,
    hello: Hello,
    next_id: u64,
}

/// How the worker process came to be, which decides how it is stopped and reaped.
pub(crate) enum Process {
    /// A child of tilefit.
    Spawned(Child),
    /// Forked by a zygote, which reaps it and reports its exit status. It leads its own process
    /// group, like a spawned worker.
    Forked {
        /// Its process id.
        pid: u32,
        /// The zygote it was forked from.
        parent: Arc<dyn Reaper>,
    },
}

/// What reaps a forked worker and reports how it exited: its zygote. A trait, so this module
/// knows workers and the zygote module knows this one, not the other way round as well.
pub(crate) trait Reaper: Send + Sync {
    /// Wait up to `wait` for `pid` to end and reap it; how it exited, where known.
    fn reap(&self, pid: u32, wait: Duration) -> Option<WorkerExit>;
}

impl Worker {
    /// Start a worker and read its handshake.
    pub fn spawn(command: &WorkerCommand) -> Result<Worker, WorkerFault> {
        Worker::spawn_with(command, None)
    }

    /// Start a worker; with `control`, that socket is its stdin (a zygote) and `extra_env` is set.
    pub(crate) fn spawn_with(
        command: &WorkerCommand,
        control: Option<(UnixStream, UnixStream, (&str, &str))>,
    ) -> Result<Worker, WorkerFault> {
        if let Some(root) = &command.package {
            super::protocol::write_worker_package(root).map_err(|e| {
                WorkerFault::Spawn(format!(
                    "writing the worker package to {}: {e}",
                    root.display()
                ))
            })?;
        }
        let mut process = Command::new(&command.program);
        process
            .args(&command.args)
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut ours = None;
        match control {
            Some((mine, theirs, (key, value))) => {
                process
                    .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
                    .env(key, value);
                ours = Some(mine);
            }
            None => {
                process.stdin(Stdio::piped());
            }
        }
        // Its own process group: whatever it starts (ptxas, a kernel's subprocess) is stopped
        // with it, and a Ctrl-C at the terminal reaches tilefit alone, which stops the workers.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut process, 0);
        let mut child = process
            .spawn()
            .map_err(|e| WorkerFault::Spawn(format!("`{}`: {e}", command.program.display())))?;
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let (stdin, control): (Box<dyn Write + Send>, Option<UnixStream>) = match ours {
            Some(socket) => {
                let writer = socket
                    .try_clone()
                    .map_err(|e| WorkerFault::Spawn(format!("cloning the control socket: {e}")))?;
                (Box::new(writer), Some(socket))
            }
            None => (Box::new(child.stdin.take().expect("piped")), None),
        };
        Worker::connect(
            Process::Spawned(child),
            stdin,
            control,
            stdout,
            stderr,
            &command.cancel,
            command.startup_timeout,
        )
    }

    /// Take over a started process's pipes and read its handshake.
    pub(crate) fn connect(
        process: Process,
        stdin: Box<dyn Write + Send>,
        control: Option<UnixStream>,
        stdout: impl Read + Send + 'static,
        stderr: impl Read + Send + 'static,
        cancel: &crate::cancel::Cancel,
        startup_timeout: Duration,
    ) -> Result<Worker, WorkerFault> {
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(line) => {
                        if sender.send(Some(line)).is_err() {
                            return;
                        }
                    }
                    Err(_) => break,
                }
            }
            let _ = sender.send(None);
        });
        let stderr_tail = Arc::new(Mutex::new(String::new()));
        let tail = Arc::clone(&stderr_tail);
        std::thread::spawn(move || drain_stderr(stderr, &tail));

        let mut worker = Worker {
            cancel: cancel.clone(),
            process,
            stdin,
            control,
            lines,
            stderr_tail,
            hello: Hello {
                protocol: 0,
                python: String::new(),
                triton: None,
                backends: Vec::new(),
                import_error: None,
                pid: 0,
            },
            next_id: 0,
        };
        let line = worker.read_line(startup_timeout)?;
        let hello: Hello = serde_json::from_str(&line).map_err(|_| WorkerFault::Garbled {
            line: shorten(&line),
            stderr: worker.stderr(),
        })?;
        if hello.protocol != PROTOCOL_VERSION {
            return Err(WorkerFault::Protocol {
                found: hello.protocol,
                expected: PROTOCOL_VERSION,
            });
        }
        if let Some(error) = &hello.import_error {
            return Err(WorkerFault::TritonImport(error.clone()));
        }
        worker.hello = hello;
        Ok(worker)
    }

    /// The handshake.
    pub fn hello(&self) -> &Hello {
        &self.hello
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        match &self.process {
            Process::Spawned(child) => child.id(),
            Process::Forked { pid, .. } => *pid,
        }
    }

    /// Send one request (its `id` is set here) and wait for its reply.
    pub fn request(&mut self, request: &Request, timeout: Duration) -> Result<Reply, WorkerFault> {
        self.request_passing(request, &[], timeout)
    }

    /// Send one request with file descriptors (a zygote's `fork`) and wait for its reply.
    pub(crate) fn request_passing(
        &mut self,
        request: &Request,
        fds: &[BorrowedFd<'_>],
        timeout: Duration,
    ) -> Result<Reply, WorkerFault> {
        self.next_id += 1;
        let id = self.next_id;
        let mut line =
            serde_json::to_string(&Envelope { id, request }).expect("requests serialize");
        line.push('\n');
        let sent = match (&self.control, fds.is_empty()) {
            (Some(socket), false) => send_with_fds(socket, line.as_bytes(), fds),
            (None, false) => Err(std::io::Error::other(
                "only a zygote takes file descriptors",
            )),
            (_, true) => self
                .stdin
                .write_all(line.as_bytes())
                .and_then(|()| self.stdin.flush()),
        };
        if sent.is_err() {
            return Err(self.crashed());
        }
        let answer = self.read_line(timeout)?;
        match serde_json::from_str::<Reply>(&answer) {
            Ok(reply) if reply.id == id => Ok(reply),
            _ => Err(WorkerFault::Garbled {
                line: shorten(&answer),
                stderr: self.stderr(),
            }),
        }
    }

    fn read_line(&mut self, timeout: Duration) -> Result<String, WorkerFault> {
        // Wait in short slices so an interrupt is noticed within a tenth of a second.
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if self.cancel.is_cancelled() {
                self.kill();
                return Err(WorkerFault::Interrupted);
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self
                .lines
                .recv_timeout(left.min(Duration::from_millis(100)))
            {
                Ok(Some(line)) => return Ok(line),
                // A worker that died while the run was being interrupted is an interrupt, not a
                // crash.
                Ok(None) | Err(RecvTimeoutError::Disconnected) if self.cancel.is_cancelled() => {
                    self.kill();
                    return Err(WorkerFault::Interrupted);
                }
                Ok(None) | Err(RecvTimeoutError::Disconnected) => return Err(self.crashed()),
                Err(RecvTimeoutError::Timeout) if left.is_zero() => {
                    self.kill();
                    return Err(WorkerFault::TimedOut {
                        seconds: timeout.as_secs(),
                        stderr: self.stderr(),
                    });
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }

    fn crashed(&mut self) -> WorkerFault {
        // Stdout closed: the process is exiting; give it a moment to be reaped.
        let status = self.wait_exit(Duration::from_secs(1)).unwrap_or_else(|| {
            self.kill();
            WorkerExit::ClosedOutput
        });
        // Let the stderr thread catch the last words.
        std::thread::sleep(Duration::from_millis(50));
        WorkerFault::Crashed {
            status,
            stderr: self.stderr(),
        }
    }

    fn stderr(&self) -> String {
        self.stderr_tail
            .lock()
            .map(|t| t.clone())
            .unwrap_or_default()
    }

    /// How the process ended, waiting up to `wait` for it; `None` while it runs.
    fn wait_exit(&mut self, wait: Duration) -> Option<WorkerExit> {
        match &mut self.process {
            Process::Spawned(child) => {
                let deadline = std::time::Instant::now() + wait;
                loop {
                    if let Ok(Some(status)) = child.try_wait() {
                        return Some(WorkerExit::from(status));
                    }
                    if std::time::Instant::now() >= deadline {
                        return None;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            Process::Forked { pid, parent } => parent.reap(*pid, wait),
        }
    }

    /// Stop the worker and everything it started: SIGTERM to its process group, a grace period
    /// for the worker to exit, then SIGKILL to the group (so no child outlives it), and reap it
    /// (a forked worker is reaped by its zygote).
    pub fn kill(&mut self) {
        use rustix::process::{Pid, Signal, kill_process_group};
        let group = i32::try_from(self.pid()).ok().and_then(Pid::from_raw);
        if let Some(group) = group {
            let running = match &mut self.process {
                Process::Spawned(child) => matches!(child.try_wait(), Ok(None)),
                Process::Forked { .. } => true,
            };
            if running {
                let _ = kill_process_group(group, Signal::TERM);
                match &self.process {
                    Process::Spawned(_) => {
                        let _ = self.wait_exit(KILL_GRACE);
                    }
                    // Not through the zygote: a reap request would hold it, and every fork
                    // behind it, for as long as this worker takes to die.
                    Process::Forked { pid, .. } => wait_ended(*pid, KILL_GRACE),
                }
            }
            // The leader may be gone while its children live on: the group still exists.
            let _ = kill_process_group(group, Signal::KILL);
        }
        // A forked worker is reaped by its zygote, which collects every child that has ended
        // at each request it serves and when it exits.
        if let Process::Spawned(child) = &mut self.process {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Wait up to `wait` for a process that is not our child to end: gone, or a zombie its parent
/// has not reaped yet (state `Z` or `X` in `/proc/PID/stat`).
fn wait_ended(pid: u32, wait: Duration) {
    let deadline = std::time::Instant::now() + wait;
    let path = format!("/proc/{pid}/stat");
    loop {
        let ended = std::fs::read_to_string(&path).map_or(true, |stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_none_or(|state| state == "Z" || state == "X")
        });
        if ended || std::time::Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Write `bytes` on a Unix socket with `fds` attached (SCM_RIGHTS).
fn send_with_fds(socket: &UnixStream, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> std::io::Result<()> {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
    use std::mem::MaybeUninit;
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(std::io::Error::other(
            "too many file descriptors for one message",
        ));
    }
    let sent = sendmsg(
        socket,
        &[std::io::IoSlice::new(bytes)],
        &mut control,
        SendFlags::empty(),
    )?;
    // The descriptors went with the first bytes; the rest of a long line follows plainly.
    let mut rest = socket;
    rest.write_all(&bytes[sent..])?;
    rest.flush()
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

fn drain_stderr(mut stderr: impl Read, tail: &Mutex<String>) {
    let mut buffer = [0_u8; 8192];
    loop {
        match stderr.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let Ok(mut kept) = tail.lock() else { return };
                kept.push_str(&String::from_utf8_lossy(&buffer[..n]));
                if kept.len() > 2 * STDERR_TAIL_BYTES {
                    let mut cut = kept.len() - STDERR_TAIL_BYTES;
                    while !kept.is_char_boundary(cut) {
                        cut += 1;
                    }
                    kept.drain(..cut);
                }
            }
        }
    }
}

/// How long a worker gets to exit after SIGTERM before its process group is killed.
const KILL_GRACE: Duration = Duration::from_millis(500);

/// How a worker process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerExit {
    /// It exited with this code.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
    /// It closed its output and did not exit in time (it was then killed).
    ClosedOutput,
}

impl From<std::process::ExitStatus> for WorkerExit {
    fn from(status: std::process::ExitStatus) -> WorkerExit {
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            if let Some(signal) = status.signal() {
                return WorkerExit::Signal(signal);
            }
        }
        WorkerExit::Code(status.code().unwrap_or(-1))
    }
}

impl std::fmt::Display for WorkerExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkerExit::Code(code) => write!(f, "exit code {code}"),
            WorkerExit::Signal(signal) => {
                let name = match signal {
                    6 => " (SIGABRT)",
                    9 => " (SIGKILL)",
                    11 => " (SIGSEGV)",
                    15 => " (SIGTERM)",
                    _ => "",
                };
                write!(f, "killed by signal {signal}{name}")
            }
            WorkerExit::ClosedOutput => f.write_str("closed its output"),
        }
    }
}

fn shorten(line: &str) -> String {
    let mut end = line.len().min(200);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    if end < line.len() {
        format!("{}... ({} bytes)", &line[..end], line.len())
    } else {
        line.to_owned()
    }
}
