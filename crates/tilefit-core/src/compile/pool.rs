//! N workers pulling jobs from one queue. A worker that faults is dropped (killed) and a fresh one
//! is started for the next job; only the job it was running is reported as failed. Results come
//! back through a callback on the caller's thread, in completion order, so the caller can record
//! each one (cache, progress) as soon as it exists.
//!
//! A worker process compiles for one target arch in its life: Triton keeps per-process compiler
//! state, and with Triton 3.6.0 a gfx942 compile after a gfx950 one in the same process fails
//! ("instruction not supported on this GPU") where a fresh process succeeds. The queue is ordered
//! by arch: each thread starts on an arch of its own (threads spread over the archs), keeps to it
//! while it has jobs, and only then helps another arch with a fresh worker.
//!
//! Workers start in one of two ways ([`WorkerStart`]). Forked (the default on Linux): from a
//! zygote per arch (see `zygote`), in milliseconds. Spawned: a fresh Python each, the fallback
//! where forking is refused or fails, and the path for a test's fault-injection script. The
//! pool never starts more workers than it has jobs.

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Reply;
use super::process::{Worker, WorkerCommand, WorkerFault};
use super::zygote::{ForkFault, Zygote};
use crate::device::Target;
use crate::vocab::Request;

/// How the pool starts a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkerStart {
    /// Fork from a warmed zygote per arch; spawn where that is refused.
    #[default]
    Fork,
    /// Spawn a fresh Python process per worker.
    Spawn,
}

/// How a run's workers started, for the report.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WorkersUsed {
    /// Forked or spawned.
    pub start: WorkerStart,
    /// Why workers were spawned where forking was the default (refused, failed, asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// Workers started (forked and spawned): for jobs, and for a request outside a batch (the
    /// kernel's interface), whose worker the next batch takes for its jobs.
    #[serde(default)]
    pub started: usize,
    /// Seconds until the first worker for jobs answered its handshake: with forking, the arch's
    /// zygote fork and warm-up included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_start_s: Option<f64>,
    /// Median seconds a later worker took to start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub later_start_s: Option<f64>,
    /// The slowest later start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub later_start_max_s: Option<f64>,
    /// The slowest arch zygote's fork and warm-up (paid once per arch, before its first fork).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch_warm_max_s: Option<f64>,
    /// Pools of workers this process started, this one among them: one per run (a probe with
    /// its `--emit-files` rounds, a capture's targets), one per Triton of a version matrix.
    /// Absent from reports saved before it was counted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pools: usize,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Pools of this process that started a worker or a zygote.
static POOLS_STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A pool of compile workers.
pub struct Pool {
    command: WorkerCommand,
    size: usize,
    job_timeout: Duration,
    idle: Mutex<Vec<Worker>>,
    forking: Forking,
    timings: Mutex<StartTimings>,
    /// Whether this pool has started a process (and is counted in [`POOLS_STARTED`]).
    counted: std::sync::atomic::AtomicBool,
}

/// How long workers for jobs took to start.
#[derive(Default)]
struct StartTimings {
    /// From asking to the first job worker's handshake (a zygote's warm-up included).
    first: Option<f64>,
    /// Every other worker's own fork or spawn, in the order they started: later job workers,
    /// and a worker started for a request outside a batch (the kernel's interface), which the
    /// next batch takes for its jobs.
    later: Vec<f64>,
    /// Each arch zygote's fork and warm-up.
    warm: Vec<f64>,
}

/// One arch's zygote, made on first use; its own lock so other archs are not held up.
type ZygoteSlot = Arc<Mutex<Option<Arc<Zygote>>>>;

/// The zygotes of a pool: the root (Triton imported) and one warmed per arch.
struct Forking {
    /// Why forking stopped (refused, failed); `Some` from the start with [`WorkerStart::Spawn`].
    off: Mutex<Option<String>>,
    root: Mutex<Option<Arc<Zygote>>>,
    by_arch: Mutex<HashMap<String, ZygoteSlot>>,
}

impl Pool {
    /// A pool of `size` workers (at least one) started with `command`, forked from zygotes.
    pub fn new(command: WorkerCommand, size: usize, job_timeout: Duration) -> Pool {
        Pool::with_start(command, size, job_timeout, WorkerStart::Fork)
    }

    /// A pool whose workers start as `start` says.
    pub fn with_start(
        command: WorkerCommand,
        size: usize,
        job_timeout: Duration,
        start: WorkerStart,
    ) -> Pool {
        let off = match start {
            WorkerStart::Spawn => Some("spawning was asked for".to_owned()),
            WorkerStart::Fork if cfg!(not(target_os = "linux")) => {
                Some("forking workers is only used on Linux".to_owned())
            }
            WorkerStart::Fork => None,
        };
        Pool {
            command,
            size: size.max(1),
            job_timeout,
            idle: Mutex::new(Vec::new()),
            forking: Forking {
                off: Mutex::new(off),
                root: Mutex::new(None),
                by_arch: Mutex::new(HashMap::new()),
            },
            timings: Mutex::new(StartTimings::default()),
            counted: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// How workers start now, and why forking is off when it is.
    pub fn start_mode(&self) -> WorkersUsed {
        let fallback = self.forking.off.lock().expect("pool lock").clone();
        let timings = self.timings.lock().expect("pool lock");
        let mut later = timings.later.clone();
        later.sort_by(f64::total_cmp);
        WorkersUsed {
            start: if fallback.is_some() {
                WorkerStart::Spawn
            } else {
                WorkerStart::Fork
            },
            fallback,
            started: later.len() + usize::from(timings.first.is_some()),
            first_start_s: timings.first,
            later_start_s: later.get(later.len() / 2).copied(),
            later_start_max_s: later.last().copied(),
            arch_warm_max_s: timings.warm.iter().copied().max_by(f64::total_cmp),
            pools: POOLS_STARTED.load(std::sync::atomic::Ordering::SeqCst),
        }
    }

    /// Start one worker now, so a broken toolchain fails the run before any job, and keep it
    /// for the jobs (with forking: the root zygote, whose handshake proves the import).
    pub fn warm_up(&self) -> Result<super::Hello, WorkerFault> {
        self.count_start();
        if self.forking_on() {
            match self.root() {
                Ok(root) => return Ok(root.hello()),
                Err(ForkFault::Zygote(fault @ WorkerFault::TritonImport(_))) => return Err(fault),
                Err(fault) => self.forking_off(&fault),
            }
        }
        let worker = Worker::spawn(&self.command)?;
        let hello = worker.hello().clone();
        self.idle.lock().expect("pool lock").push(worker);
        Ok(hello)
    }

    /// A fresh worker for `target` (any arch when `None`): forked where forking is on. How long
    /// the fork or spawn itself took (not the wait for an arch's zygote to warm) is kept for the
    /// report, and the first worker's whole wait.
    pub fn start_worker(&self, target: Option<&Target>) -> Result<Worker, WorkerFault> {
        let started = Instant::now();
        let (worker, own) = self.start_worker_timed(target);
        if worker.is_ok() {
            let mut timings = self.timings.lock().expect("pool lock");
            if timings.first.is_none() {
                timings.first = Some(started.elapsed().as_secs_f64());
            } else {
                timings.later.push(own);
            }
        }
        worker
    }

    /// A worker for a request outside a batch; counted as a later start, since the next batch
    /// takes it for its jobs.
    fn start_request_worker(&self, target: Option<&Target>) -> Result<Worker, WorkerFault> {
        let (worker, own) = self.start_worker_timed(target);
        if worker.is_ok() {
            self.timings.lock().expect("pool lock").later.push(own);
        }
        worker
    }

    /// The worker, and the seconds its own fork or spawn took.
    fn start_worker_timed(&self, target: Option<&Target>) -> (Result<Worker, WorkerFault>, f64) {
        self.count_start();
        if self.forking_on() {
            let forked = match target {
                Some(target) => self.arch_zygote(target),
                None => self.root(),
            }
            .and_then(|zygote| {
                let started = Instant::now();
                zygote
                    .fork_worker()
                    .map(|worker| (worker, started.elapsed().as_secs_f64()))
            });
            match forked {
                Ok((worker, seconds)) => return (Ok(worker), seconds),
                Err(ForkFault::Zygote(fault @ WorkerFault::TritonImport(_))) => {
                    return (Err(fault), 0.0);
                }
                Err(fault) => self.forking_off(&fault),
            }
        }
        let started = Instant::now();
        let worker = Worker::spawn(&self.command);
        (worker, started.elapsed().as_secs_f64())
    }

    /// Count this pool among the process's pools, once, when it first starts a process.
    fn count_start(&self) {
        use std::sync::atomic::Ordering;
        if !self.counted.swap(true, Ordering::SeqCst) {
            POOLS_STARTED.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn forking_on(&self) -> bool {
        self.forking.off.lock().expect("pool lock").is_none()
    }

    fn forking_off(&self, fault: &ForkFault) {
        let mut off = self.forking.off.lock().expect("pool lock");
        if off.is_none() {
            *off = Some(fault.to_string());
        }
    }

    fn root(&self) -> Result<Arc<Zygote>, ForkFault> {
        let mut root = self.forking.root.lock().expect("pool lock");
        if let Some(zygote) = &*root {
            return Ok(Arc::clone(zygote));
        }
        let zygote = Zygote::spawn(&self.command)?;
        *root = Some(Arc::clone(&zygote));
        Ok(zygote)
    }

    /// The warmed zygote of an arch, forked from the root on first use. Threads asking for
    /// other archs meanwhile are not held up.
    fn arch_zygote(&self, target: &Target) -> Result<Arc<Zygote>, ForkFault> {
        let slot = Arc::clone(
            self.forking
                .by_arch
                .lock()
                .expect("pool lock")
                .entry(target.arch.clone())
                .or_default(),
        );
        let mut slot = slot.lock().expect("pool lock");
        if let Some(zygote) = &*slot {
            return Ok(Arc::clone(zygote));
        }
        let started = Instant::now();
        let zygote = self.root()?.fork_zygote(target, self.job_timeout)?;
        let seconds = started.elapsed().as_secs_f64();
        self.timings.lock().expect("pool lock").warm.push(seconds);
        *slot = Some(Arc::clone(&zygote));
        Ok(zygote)
    }

    /// Send one request on any worker, outside a batch.
    pub fn request(&self, request: &Request) -> Result<Reply, WorkerFault> {
        let mut worker = match self.idle.lock().expect("pool lock").pop() {
            Some(worker) => worker,
            None => self.start_request_worker(request.target())?,
        };
        let reply = worker.request(request, self.job_timeout)?;
        self.idle.lock().expect("pool lock").push(worker);
        Ok(reply)
    }

    /// Run every request; `on_done(index, result)` is called once per request on this thread.
    pub fn run(
        &self,
        requests: Vec<Request>,
        mut on_done: impl FnMut(usize, Result<Reply, WorkerFault>),
    ) {
        let total = requests.len();
        let queue = ArchQueues::new(requests);
        let (sender, receiver) = mpsc::channel();
        std::thread::scope(|scope| {
            for thread in 0..self.size.min(total) {
                let sender = sender.clone();
                let queue = &queue;
                scope.spawn(move || {
                    let mut worker: Option<Worker> = self.idle.lock().expect("pool lock").pop();
                    let mut worker_arch: Option<String> = None;
                    while let Some((index, request)) = queue.next(thread, worker_arch.as_deref()) {
                        if self.command.cancel.is_cancelled() {
                            // Interrupted: the job is not run; the caller sees it missing.
                            break;
                        }
                        let arch = request.arch().map(str::to_owned);
                        if worker_arch.is_some() && worker_arch != arch {
                            // A fresh process for a new arch (see the module docs).
                            worker = None;
                        }
                        worker_arch = arch;
                        let result = match worker.take() {
                            Some(w) => Ok(w),
                            None => self.start_worker(request.target()),
                        }
                        .and_then(|mut w| {
                            let reply = w.request(&request, self.job_timeout);
                            if reply.is_ok() {
                                worker = Some(w);
                            }
                            reply
                        });
                        if sender.send((index, result)).is_err() {
                            break;
                        }
                    }
                    // Only a worker that never compiled goes back for reuse.
                    if let (Some(w), None) = (worker, &worker_arch) {
                        self.idle.lock().expect("pool lock").push(w);
                    }
                });
            }
            drop(sender);
            for (index, result) in receiver {
                on_done(index, result);
            }
        });
    }
}

/// Jobs grouped by arch, in order within each group. A thread takes from the arch its worker
/// already compiles for; a thread without one starts on the arch its number points at; a thread
/// whose arch ran out takes from the arch with the most jobs left.
struct ArchQueues {
    groups: Mutex<Vec<ArchGroup>>,
}

/// One arch's jobs: (index in the batch, request).
type ArchGroup = (Option<String>, VecDeque<(usize, Request)>);

impl ArchQueues {
    fn new(requests: Vec<Request>) -> ArchQueues {
        let mut groups: Vec<ArchGroup> = Vec::new();
        for (index, request) in requests.into_iter().enumerate() {
            let arch = request.arch().map(str::to_owned);
            match groups.iter_mut().find(|(a, _)| *a == arch) {
                Some((_, queue)) => queue.push_back((index, request)),
                None => groups.push((arch, VecDeque::from([(index, request)]))),
            }
        }
        ArchQueues {
            groups: Mutex::new(groups),
        }
    }

    fn next(&self, thread: usize, current: Option<&str>) -> Option<(usize, Request)> {
        let mut groups = self.groups.lock().expect("queue lock");
        if groups.is_empty() {
            return None;
        }
        let preferred = match current {
            Some(arch) => groups.iter().position(|(a, _)| a.as_deref() == Some(arch)),
            None => Some(thread % groups.len()),
        };
        let chosen = preferred.filter(|&i| !groups[i].1.is_empty()).or_else(|| {
            (0..groups.len())
                .filter(|&i| !groups[i].1.is_empty())
                .max_by_key(|&i| groups[i].1.len())
        })?;
        groups[chosen].1.pop_front()
    }
}
