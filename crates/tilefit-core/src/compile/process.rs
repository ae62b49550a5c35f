//! One worker process: spawn, handshake, one request at a time with a timeout, and the faults
//! a child can have (it dies, hangs, or writes something that is not a protocol line). Stdout is
//! read on a thread into a channel so a timeout can be enforced; stderr is drained on another
//! thread into a bounded tail that is attached to faults, so a flood of stderr never blocks the
//! child and never fills memory.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::protocol::Envelope;
use super::{Hello, PROTOCOL_VERSION, Reply, Request};

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
}

impl WorkerCommand {
    /// Run the embedded worker script with `python -I -B -u -c SCRIPT`.
    pub fn embedded(python: PathBuf, triton_cache: PathBuf) -> WorkerCommand {
        WorkerCommand {
            program: python,
            args: vec![
                "-I".into(),
                "-B".into(),
                "-u".into(),
                "-c".into(),
                super::WORKER_SCRIPT.into(),
            ],
            env: vec![("TRITON_CACHE_DIR".into(), triton_cache.into_os_string())],
            startup_timeout: Duration::from_secs(120),
            cancel: crate::cancel::Cancel::new(),
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
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Option<String>>,
    stderr_tail: Arc<Mutex<String>>,
    hello: Hello,
    next_id: u64,
}

impl Worker {
    /// Start a worker and read its handshake.
    pub fn spawn(command: &WorkerCommand) -> Result<Worker, WorkerFault> {
        let mut process = Command::new(&command.program);
        process
            .args(&command.args)
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own process group: whatever it starts (ptxas, a kernel's subprocess) is stopped
        // with it, and a Ctrl-C at the terminal reaches tilefit alone, which stops the workers.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut process, 0);
        let mut child = process
            .spawn()
            .map_err(|e| WorkerFault::Spawn(format!("`{}`: {e}", command.program.display())))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");

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
            cancel: command.cancel.clone(),
            child,
            stdin,
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
        let line = worker.read_line(command.startup_timeout)?;
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

    /// Send one request (its `id` is set here) and wait for its reply.
    pub fn request(&mut self, request: &Request, timeout: Duration) -> Result<Reply, WorkerFault> {
        self.next_id += 1;
        let id = self.next_id;
        let mut line =
            serde_json::to_string(&Envelope { id, request }).expect("requests serialize");
        line.push('\n');
        if self
            .stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .is_err()
        {
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
        let mut status = None;
        for _ in 0..50 {
            if let Ok(Some(s)) = self.child.try_wait() {
                status = Some(s);
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let status = status.map_or_else(
            || {
                self.kill();
                WorkerExit::ClosedOutput
            },
            WorkerExit::from,
        );
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

    /// Stop the worker and everything it started: SIGTERM to its process group, a grace period
    /// for the worker to exit, then SIGKILL to the group (so no child outlives it), and reap it.
    pub fn kill(&mut self) {
        #[cfg(unix)]
        {
            use rustix::process::{Pid, Signal, kill_process_group};
            let group = i32::try_from(self.child.id()).ok().and_then(Pid::from_raw);
            if let Some(group) = group {
                if matches!(self.child.try_wait(), Ok(None)) {
                    let _ = kill_process_group(group, Signal::TERM);
                    let deadline = std::time::Instant::now() + KILL_GRACE;
                    while matches!(self.child.try_wait(), Ok(None))
                        && std::time::Instant::now() < deadline
                    {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
                // The leader may be gone while its children live on: the group still exists.
                let _ = kill_process_group(group, Signal::KILL);
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
