//! The one compile loop probe, replay and verify share: [`Settings`] built once from the command
//! line, one cache-key scheme ([`key`]), one private Triton scratch folder per pool ([`Scratch`]),
//! and [`compile_all`]: take what the result cache has, compile each distinct job once (slowest
//! first) on the worker pool, cache what the compiler decided, and report progress as events.
//! An interrupt leaves the jobs it kept from running marked interrupted; [`complete`] is the one
//! rule for whether a run finished.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::cache::{Lookup, ResultCache};
use super::outcome::CompileOutcome;
use super::pool::{Pool, WorkerStart, WorkersUsed};
use super::process::WorkerCommand;
use super::protocol::worker_package_digest;
use super::reporter::{Event, Reporting};
use super::toolchain::Toolchain;
use crate::digest::sha256;
use crate::plan::Job;
use crate::vocab::Request;

/// How a run compiles: built once from the command line, the same for probe, replay and verify.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Worker processes.
    pub jobs: usize,
    /// Read and write the result cache.
    pub use_cache: bool,
    /// Per-job timeout.
    pub job_timeout: Duration,
    /// tilefit's cache directory.
    pub cache_dir: PathBuf,
    /// A worker script to run instead of the embedded one (fault injection).
    pub worker_script: Option<PathBuf>,
    /// Keep each compiled binary in this folder (`tilefit verify`); the cache is not used then.
    pub binaries: Option<PathBuf>,
    /// Compile through the binary instead of stopping after shared-memory allocation.
    pub full_compile: bool,
    /// Read registers, local memory, spills and launch bounds from each binary
    /// (`--resources full`); implies the whole compile.
    pub read_resources: bool,
    /// Raised on SIGINT/SIGTERM: the run stops and reports what finished, marked incomplete.
    pub cancel: crate::cancel::Cancel,
    /// How workers start (forked from a zygote per arch, or spawned). A fault-injection worker
    /// script is always spawned.
    pub worker_start: WorkerStart,
    /// Where the run's progress, notes and script output go.
    pub reporter: Reporting,
}

impl Settings {
    /// Whether results come from and go to the result cache (never when binaries are kept:
    /// cached outcomes carry none).
    pub fn caches(&self) -> bool {
        self.use_cache && self.binaries.is_none()
    }

    /// Whether compiles run to the binary.
    pub fn full(&self) -> bool {
        self.full_compile || self.read_resources || self.binaries.is_some()
    }

    /// The digest of the worker that compiles: the embedded script or the fault-injection one.
    pub fn worker_digest(&self) -> std::io::Result<String> {
        Ok(match &self.worker_script {
            Some(script) => sha256(&std::fs::read(script)?),
            None => worker_package_digest(),
        })
    }
}

/// A private `TRITON_CACHE_DIR` for a pool's workers, removed when dropped, so Triton's own cache
/// can neither hide a compile nor fill the user's.
pub struct Scratch {
    path: PathBuf,
    /// Left in place when dropped: its owner removes it later.
    kept: bool,
}

impl Scratch {
    /// The scratch of a run with `settings`: where binaries are kept (`verify`), Triton's cache
    /// beside them, kept, so the launches that follow find every compiled kernel there (a JIT
    /// launch of the same specialization is a cache hit instead of a second compile); else a fresh
    /// folder under tilefit's cache, removed when dropped.
    pub fn for_run(settings: &Settings, label: &str) -> Scratch {
        match &settings.binaries {
            Some(binaries) => Scratch {
                path: binaries.join("triton-cache"),
                kept: true,
            },
            None => Scratch::new(&settings.cache_dir, label),
        }
    }

    /// A fresh folder under tilefit's cache, unique to this process and `label`, made private with
    /// tilefit's marker. The first in a process sweeps what killed runs left: marked folders older
    /// than [`STALE_SCRATCH`] whose process is gone.
    pub fn new(cache_dir: &Path, label: &str) -> Scratch {
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| super::folders::sweep_stale(&cache_dir.join("scratch"), STALE_SCRATCH));
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = cache_dir
            .join("scratch")
            .join(format!("{label}-{}-{nanos}", std::process::id()));
        // Private, with tilefit's marker (what the sweep looks for). Where it cannot be made, the
        // user of the path meets the error first, naming it.
        let _ = super::folders::make_scratch(&path);
        if let Ok(mut live) = LIVE_SCRATCH.lock() {
            live.push(path.clone());
        }
        Scratch { path, kept: false }
    }

    /// Remove every scratch folder of this process that is not kept, now: for an exit that runs
    /// no destructor (a second Ctrl-C), once the processes that used them are ended. Best
    /// effort: a process of the run still writing there can keep a folder, which the sweep of
    /// killed runs' folders takes a day later.
    pub fn remove_all_now() {
        let live = LIVE_SCRATCH
            .lock()
            .map(|mut live| std::mem::take(&mut *live))
            .unwrap_or_default();
        for path in live {
            // A process of the run that got its SIGKILL may still be finishing a write as the
            // folder goes (a folder then refuses to go, not empty): tried again a few times.
            for _ in 0..20 {
                if std::fs::remove_dir_all(&path).is_ok() || !path.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(25));
            }
        }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The scratch folders of this process not yet removed.
static LIVE_SCRATCH: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// How old a scratch folder of a process that is gone must be before it is swept.
pub const STALE_SCRATCH: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        if let Ok(mut live) = LIVE_SCRATCH.lock() {
            live.retain(|p| *p != self.path);
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The workers of a run: the embedded worker (or the fault-injection script) of `toolchain`, with
/// a private Triton cache, stopped by the run's cancel flag.
pub fn pool_for(toolchain: &Toolchain, settings: &Settings, scratch: &Scratch) -> Pool {
    let command = match &settings.worker_script {
        Some(script) => WorkerCommand::script(
            toolchain.python.clone(),
            script.clone(),
            scratch.path().to_path_buf(),
        ),
        None => WorkerCommand::embedded(toolchain.python.clone(), scratch.path().to_path_buf()),
    };
    let command = WorkerCommand {
        cancel: settings.cancel.clone(),
        ..command
    };
    let start = if settings.worker_script.is_some() {
        WorkerStart::Spawn
    } else {
        settings.worker_start
    };
    Pool::with_start(command, settings.jobs, settings.job_timeout, start)
}

/// What [`compile_all`] came to.
#[derive(Debug)]
pub struct Compiled {
    /// One outcome per job, in job order, and whether it came from the cache. Jobs an interrupt
    /// kept from running are marked interrupted.
    pub outcomes: Vec<(CompileOutcome, bool)>,
    /// Cache entries found broken and recomputed.
    pub recomputed: usize,
    /// The first input error a worker reported (Triton refused a name or a type, the kernel
    /// does not import).
    pub input_error: Option<String>,
    /// Wall time.
    pub seconds: f64,
    /// How the workers started (`None` when nothing was compiled).
    pub workers: Option<WorkersUsed>,
}

/// Compile every job: cache hits first, then each distinct key once on `pool`, slowest first;
/// outcomes are cached as they arrive (only what the compiler decided). Progress goes to the
/// settings' reporter.
pub fn compile_all(jobs: &[Job], pool: &Pool, settings: &Settings) -> Compiled {
    let started = Instant::now();
    let cache = ResultCache::new(&settings.cache_dir);
    let mut outcomes: Vec<Option<(CompileOutcome, bool)>> = vec![None; jobs.len()];
    let mut recomputed = 0;
    if settings.caches() {
        for (slot, job) in outcomes.iter_mut().zip(jobs) {
            match cache.get::<CompileOutcome>(&job.key) {
                Lookup::Hit(outcome) => *slot = Some((outcome, true)),
                Lookup::Corrupt => recomputed += 1,
                Lookup::Miss => {}
            }
        }
    }
    let pending: Vec<usize> = (0..jobs.len()).filter(|&i| outcomes[i].is_none()).collect();
    settings.reporter.event(Event::Planned {
        jobs: jobs.len(),
        cached: jobs.len() - pending.len(),
        to_compile: pending.len(),
    });
    // Identical jobs (same key) compile once.
    let mut twins: Vec<(usize, usize)> = Vec::new();
    let mut unique: Vec<usize> = Vec::new();
    let mut first_of: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for &slot in &pending {
        if let Some(&original) = first_of.get(jobs[slot].key.as_str()) {
            twins.push((slot, original));
        } else {
            first_of.insert(&jobs[slot].key, slot);
            unique.push(slot);
        }
    }
    unique.sort_by_key(|&slot| std::cmp::Reverse(jobs[slot].cost));
    let mut input_error: Option<String> = None;
    if !unique.is_empty() {
        let requests = unique
            .iter()
            .map(|&slot| with_binary_dir(&jobs[slot].request, settings.binaries.as_deref()))
            .collect();
        let mut done = 0;
        pool.run(requests, |position, result| {
            let slot = unique[position];
            let outcome = match &result {
                Ok(reply) => CompileOutcome::from_reply(reply),
                Err(fault) => CompileOutcome::from_fault(fault),
            };
            if let Some(error) = &outcome.error
                && error.kind.is_input_error()
            {
                input_error.get_or_insert_with(|| error.message.clone());
            }
            if settings.caches() && outcome.cacheable() {
                // A cache that cannot be written only costs the next run time.
                let _ = cache.put(&jobs[slot].key, &outcome);
            }
            done += 1;
            settings.reporter.event(Event::Compiled {
                done,
                total: unique.len(),
                label: jobs[slot].label.clone(),
            });
            outcomes[slot] = Some((outcome, false));
        });
    }
    for (slot, original) in twins {
        let twin = outcomes[original].clone();
        outcomes[slot] = twin;
    }
    Compiled {
        outcomes: outcomes
            .into_iter()
            .map(|o| o.unwrap_or_else(|| (CompileOutcome::interrupted(), false)))
            .collect(),
        recomputed,
        input_error,
        seconds: started.elapsed().as_secs_f64(),
        workers: (!unique.is_empty()).then(|| pool.start_mode()),
    }
}

/// Whether any job needs a worker: a pool need not start when the cache has every result.
pub fn needs_workers(jobs: &[Job], settings: &Settings) -> bool {
    if !settings.caches() {
        return !jobs.is_empty();
    }
    let cache = ResultCache::new(&settings.cache_dir);
    jobs.iter()
        .any(|job| !matches!(cache.get::<CompileOutcome>(&job.key), Lookup::Hit(_)))
}

/// The request with the folder binaries are kept in, when they are.
fn with_binary_dir(request: &Request, dir: Option<&Path>) -> Request {
    let mut request = request.clone();
    if let Some(dir) = dir {
        match &mut request {
            Request::Compile { binary_dir, .. } | Request::CompileIr { binary_dir, .. } => {
                *binary_dir = Some(dir.to_path_buf());
            }
            Request::Inspect { .. }
            | Request::Launch { .. }
            | Request::Warm { .. }
            | Request::Fork { .. }
            | Request::Reap { .. } => {}
        }
    }
    request
}

/// The one rule for a finished run: no job was kept from running by an interrupt.
pub fn complete<'a>(outcomes: impl IntoIterator<Item = &'a CompileOutcome>) -> bool {
    outcomes.into_iter().all(|o| !o.is_interrupted())
}
