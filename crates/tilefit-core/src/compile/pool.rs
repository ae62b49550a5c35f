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

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Duration;

use super::process::{Worker, WorkerCommand, WorkerFault};
use super::{Reply, Request};

/// A pool of compile workers.
pub struct Pool {
    command: WorkerCommand,
    size: usize,
    job_timeout: Duration,
    idle: Mutex<Vec<Worker>>,
}

impl Pool {
    /// A pool of `size` workers (at least one) started with `command`.
    pub fn new(command: WorkerCommand, size: usize, job_timeout: Duration) -> Pool {
        Pool {
            command,
            size: size.max(1),
            job_timeout,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Start one worker now, so a broken toolchain fails the run before any job, and keep it
    /// for the jobs.
    pub fn warm_up(&self) -> Result<super::Hello, WorkerFault> {
        let worker = Worker::spawn(&self.command)?;
        let hello = worker.hello().clone();
        self.idle.lock().expect("pool lock").push(worker);
        Ok(hello)
    }

    /// Send one request on any worker, outside a batch.
    pub fn request(&self, request: &Request) -> Result<Reply, WorkerFault> {
        let mut worker = match self.idle.lock().expect("pool lock").pop() {
            Some(worker) => worker,
            None => Worker::spawn(&self.command)?,
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
                            None => Worker::spawn(&self.command),
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
