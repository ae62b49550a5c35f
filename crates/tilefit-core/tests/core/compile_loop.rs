//! The shared compile loop (`compile::compile_all`) on real worker processes, with the fault-
//! injection fake worker (no Triton needed): identical jobs compile once, the result cache answers
//! a second run, worker faults are never cached, the slowest job goes first, and an interrupt
//! leaves the run marked incomplete.

use std::path::PathBuf;
use std::time::Duration;

use tilefit_core::cancel::Cancel;
use tilefit_core::compile::{
    self, ErrorKind, Event, Pool, Reporter, Reporting, Settings, WorkerCommand,
};
use tilefit_core::device::{Backend, Target};
use tilefit_core::plan::{Job, KeyContext};
use tilefit_core::vocab::{CompileJob, Request};

fn settings(name: &str) -> Settings {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tilefit-loop-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    Settings {
        jobs: 1,
        use_cache: true,
        job_timeout: Duration::from_secs(30),
        cache_dir: dir,
        worker_script: None,
        binaries: None,
        full_compile: false,
        read_resources: false,
        cancel: Cancel::new(),
        worker_start: tilefit_core::compile::WorkerStart::Fork,
        reporter: Reporting::silent(),
    }
}

/// The events a run reports, kept.
#[derive(Default)]
struct Events(std::sync::Mutex<Vec<Event>>);

impl Reporter for Events {
    fn event(&self, event: Event) {
        self.0.lock().unwrap().push(event);
    }
}

/// `settings` reporting to a fresh [`Events`].
fn reporting(settings: &Settings) -> (Settings, std::sync::Arc<Events>) {
    let events = std::sync::Arc::new(Events::default());
    let settings = Settings {
        reporter: Reporting::to(events.clone()),
        ..settings.clone()
    };
    (settings, events)
}

fn pool(settings: &Settings) -> Pool {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tilefit/tests/fixtures/fake_worker.py");
    let command = WorkerCommand {
        cancel: settings.cancel.clone(),
        ..WorkerCommand::script(
            PathBuf::from("python3"),
            script,
            settings.cache_dir.join("scratch"),
        )
    };
    Pool::new(command, settings.jobs, settings.job_timeout)
}

fn job(fault: &str, block: u64, cost: u64) -> Job {
    let request = Request::Compile {
        job: CompileJob {
            kernel_file: PathBuf::from("kernel.py"),
            function: "k".to_owned(),
            source: tilefit_core::vocab::KernelSource::default(),
            args: std::collections::BTreeMap::new(),
            constexprs: [
                ("FAULT".to_owned(), serde_json::Value::from(fault)),
                ("BLOCK".to_owned(), serde_json::Value::from(block)),
            ]
            .into(),
            options: std::collections::BTreeMap::new(),
            target: Target {
                backend: Backend::Cuda,
                arch: "sm_90".to_owned(),
                warp_size: 32,
            },
            full: false,
            resources: false,
        },
        binary_dir: None,
    };
    let context = KeyContext {
        source: "fixture".into(),
        triton: "0.0-fake".into(),
        python: "3".into(),
        worker: "fake".into(),
        env: std::collections::BTreeMap::new(),
    };
    Job {
        key: tilefit_core::plan::key(&request, &context),
        label: format!("{fault} {block}"),
        cost,
        request,
    }
}

#[test]
fn identical_jobs_compile_once_and_the_cache_answers_the_next_run() {
    let settings = settings("cache");
    let pool = pool(&settings);
    // Jobs 0 and 2 are the same compile (same key); job 1 costs more and runs first.
    let jobs = [job("ok", 16, 1), job("ok", 32, 9), job("ok", 16, 1)];
    assert_eq!(jobs[0].key, jobs[2].key);
    let (reported, events) = reporting(&settings);
    let first = compile::compile_all(&jobs, &pool, &reported);
    let events = std::mem::take(&mut *events.0.lock().unwrap());
    assert_eq!(
        events[0],
        Event::Planned {
            jobs: 3,
            cached: 0,
            to_compile: 3
        }
    );
    let compiled: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Compiled { label, total, .. } => {
                assert_eq!(*total, 2, "the twin is not compiled again");
                Some(label.as_str())
            }
            Event::Planned { .. } => None,
        })
        .collect();
    assert_eq!(compiled, ["ok 32", "ok 16"], "the costliest job first");
    assert!(
        first
            .outcomes
            .iter()
            .all(|(o, cached)| o.shared == Some(4096) && !cached)
    );
    assert!(compile::complete(first.outcomes.iter().map(|(o, _)| o)));
    assert_eq!(first.input_error, None);

    let (reported, events) = reporting(&settings);
    let second = compile::compile_all(&jobs, &pool, &reported);
    let events = std::mem::take(&mut *events.0.lock().unwrap());
    assert_eq!(
        events,
        [Event::Planned {
            jobs: 3,
            cached: 3,
            to_compile: 0
        }]
    );
    assert!(second.outcomes.iter().all(|(_, cached)| *cached));
    assert!(!compile::needs_workers(&jobs, &settings));
}

#[test]
fn worker_faults_are_not_cached_and_an_interrupt_leaves_the_run_incomplete() {
    let settings = settings("faults");
    let pool = pool(&settings);
    let jobs = [job("crash", 1, 1), job("ok", 2, 1)];
    let run = compile::compile_all(&jobs, &pool, &settings);
    let error = run.outcomes[0].0.error.as_ref().unwrap();
    assert_eq!(error.kind, ErrorKind::WorkerFault);
    assert!(error.message.contains("SIGSEGV"), "{}", error.message);
    assert_eq!(run.outcomes[1].0.shared, Some(4096));
    // The crash is retried next time; the good result comes from the cache.
    assert!(compile::needs_workers(&jobs[..1], &settings));
    assert!(!compile::needs_workers(&jobs[1..], &settings));

    let stopped = Settings {
        use_cache: false,
        ..settings.clone()
    };
    stopped.cancel.cancel();
    let run = compile::compile_all(&jobs, &pool, &stopped);
    assert!(run.outcomes.iter().all(|(o, _)| o.is_interrupted()));
    assert!(!compile::complete(run.outcomes.iter().map(|(o, _)| o)));
}
