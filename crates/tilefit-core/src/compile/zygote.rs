//! Fork servers ("zygotes"): workers that cost a `fork` instead of a Python start, a Triton import
//! and the compiler's first-compile initialisation.
//!
//! A root zygote is spawned once per pool: it imports Triton and never compiles a user's kernel.
//! For each arch a zygote is forked from the root and warmed with one small built-in compile for
//! that arch (`Request::Warm`); workers for the arch are forked from it, copy-on-write. A worker
//! still compiles one arch in its life and the warmed state it inherits is its own arch's, so the
//! one-arch-per-process rule of the pool holds (the Triton 3.6.0 gfx950-then-gfx942 failure).
//!
//! A zygote's stdin is a Unix socket: a `fork` request carries the child's stdin, stdout and stderr
//! as file descriptors (SCM_RIGHTS), so the child talks to tilefit over its own pipes exactly like a
//! spawned worker, and the pool treats both alike. The zygote refuses to fork while it runs more
//! than one thread (MLIR and LLVM thread pools would be copied mid-state); the pool then falls back
//! to spawning workers for the rest of the run. It reaps its children and reports how each ended.

use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::pipe::{PipeFlags, pipe_with};

use super::process::{Process, Reaper, Worker, WorkerCommand, WorkerExit, WorkerFault};
use super::protocol::ChildExit;
use crate::device::Target;
use crate::vocab::Request;

/// Why a zygote could not give a worker: the pool falls back to spawning.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum ForkFault {
    /// The zygote process faulted (it died, hung, garbled, or Triton does not import).
    #[error("{0}")]
    Zygote(#[from] WorkerFault),
    /// It refused (threads running) or the system call failed.
    #[error("{0}")]
    Refused(String),
}

/// A running zygote.
pub(crate) struct Zygote {
    worker: Mutex<Worker>,
    command: WorkerCommand,
}

impl Zygote {
    /// Spawn the root zygote.
    pub(crate) fn spawn(command: &WorkerCommand) -> Result<Arc<Zygote>, ForkFault> {
        let (ours, theirs) = UnixStream::pair()
            .map_err(|e| ForkFault::Refused(format!("a socket for the zygote: {e}")))?;
        let worker = Worker::spawn_with(command, Some((ours, theirs, ("TILEFIT_ZYGOTE", "1"))))?;
        Ok(Arc::new(Zygote {
            worker: Mutex::new(worker),
            command: command.clone(),
        }))
    }

    /// The handshake of the root process (its Python and Triton).
    pub(crate) fn hello(&self) -> super::Hello {
        self.worker.lock().expect("zygote lock").hello().clone()
    }

    /// Fork a worker.
    pub(crate) fn fork_worker(self: &Arc<Self>) -> Result<Worker, ForkFault> {
        let (child_stdin, stdin) = pipe()?;
        self.fork(false, child_stdin.as_fd(), |pipes| {
            (Box::new(std::fs::File::from(stdin)), None, pipes)
        })
    }

    /// Fork a zygote for one arch and warm it for `target`.
    pub(crate) fn fork_zygote(
        self: &Arc<Self>,
        target: &Target,
        timeout: Duration,
    ) -> Result<Arc<Zygote>, ForkFault> {
        let (ours, theirs) = UnixStream::pair()
            .map_err(|e| ForkFault::Refused(format!("a socket for the zygote: {e}")))?;
        let writer = ours
            .try_clone()
            .map_err(|e| ForkFault::Refused(format!("cloning the zygote's socket: {e}")))?;
        let worker = self.fork(true, theirs.as_fd(), |pipes| {
            (Box::new(writer), Some(ours), pipes)
        })?;
        let zygote = Arc::new(Zygote {
            worker: Mutex::new(worker),
            command: self.command.clone(),
        });
        let reply = zygote.worker.lock().expect("zygote lock").request(
            &Request::Warm {
                target: target.clone(),
            },
            timeout,
        )?;
        // A warm-up the compiler refuses (an arch this Triton lacks) is no reason not to fork:
        // the jobs will say what is wrong, one cell each.
        let _ = reply;
        Ok(zygote)
    }

    /// Send `fork` with the child's first descriptor (stdin or control socket) and the write
    /// ends of its stdout and stderr pipes, then take over the child.
    fn fork(
        self: &Arc<Self>,
        zygote: bool,
        first: std::os::fd::BorrowedFd<'_>,
        ends: impl FnOnce(Pipes) -> ForkedEnds,
    ) -> Result<Worker, ForkFault> {
        let (stdout, child_stdout) = pipe()?;
        let (stderr, child_stderr) = pipe()?;
        let reply = {
            let mut worker = self.worker.lock().expect("zygote lock");
            worker.request_passing(
                &Request::Fork { zygote },
                &[first, child_stdout.as_fd(), child_stderr.as_fd()],
                self.command.startup_timeout,
            )?
        };
        drop((child_stdout, child_stderr));
        let ("ok", Some(pid)) = (reply.status.as_str(), reply.body.forked_pid) else {
            return Err(ForkFault::Refused(reply.error.map_or_else(
                || "the zygote did not say which process it forked".to_owned(),
                |e| e.message,
            )));
        };
        let (stdin, control, (stdout, stderr)) = ends((stdout, stderr));
        Worker::connect(
            Process::Forked {
                pid,
                parent: Arc::clone(self) as Arc<dyn Reaper>,
            },
            stdin,
            control,
            std::fs::File::from(stdout),
            std::fs::File::from(stderr),
            &self.command.cancel,
            self.command.startup_timeout,
        )
        .map_err(ForkFault::Zygote)
    }
}

/// The read ends of a child's stdout and stderr.
type Pipes = (std::os::fd::OwnedFd, std::os::fd::OwnedFd);

/// What tilefit keeps of a forked child: its stdin writer, a zygote's control socket, its pipes.
type ForkedEnds = (Box<dyn std::io::Write + Send>, Option<UnixStream>, Pipes);

/// How much longer than a reap's own wait its reply may take.
const REAP_SLACK: Duration = Duration::from_secs(5);

/// A pipe, close-on-exec at both ends (no other child started meanwhile inherits them).
fn pipe() -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd), ForkFault> {
    pipe_with(PipeFlags::CLOEXEC).map_err(|e| ForkFault::Refused(format!("a pipe: {e}")))
}

impl Reaper for Zygote {
    /// How a forked child ended, waiting up to `wait`; `None` while it runs or when the zygote
    /// cannot say (it is gone, or busy elsewhere past the wait).
    fn reap(&self, pid: u32, wait: Duration) -> Option<WorkerExit> {
        let mut worker = self.worker.lock().ok()?;
        let wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
        let reply = worker
            .request(&Request::Reap { pid, wait_ms }, wait + REAP_SLACK)
            .ok()?;
        match reply.body.exit? {
            ChildExit { running: true, .. } => None,
            ChildExit {
                signal: Some(signal),
                ..
            } => Some(WorkerExit::Signal(signal)),
            ChildExit { code, .. } => Some(WorkerExit::Code(code.unwrap_or(-1))),
        }
    }
}
