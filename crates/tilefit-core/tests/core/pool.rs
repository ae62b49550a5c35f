//! The worker pool with real processes (the fault-injection fake worker, which needs no Triton):
//! a worker compiles for one arch in its life, and jobs are scheduled arch by arch.

use std::path::PathBuf;
use std::time::Duration;

use tilefit_core::compile::{Pool, WorkerCommand};
use tilefit_core::device::{Backend, Target};
use tilefit_core::vocab::CompileJob;
use tilefit_core::vocab::Request;

fn fake_worker() -> WorkerCommand {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tilefit/tests/fixtures/fake_worker.py");
    let scratch = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tilefit-pool-test-{}", std::process::id()));
    WorkerCommand::script(PathBuf::from("python3"), script, scratch)
}

fn request(arch: &str) -> Request {
    Request::Compile {
        job: CompileJob {
            kernel_file: PathBuf::from("kernel.py"),
            function: "k".to_owned(),
            source: tilefit_core::vocab::KernelSource::default(),
            args: std::collections::BTreeMap::new(),
            constexprs: [("FAULT".to_owned(), serde_json::Value::from("ok"))].into(),
            options: std::collections::BTreeMap::new(),
            target: Target {
                backend: Backend::Cuda,
                arch: arch.to_owned(),
                warp_size: 32,
            },
            full: false,
            resources: false,
        },
        binary_dir: None,
    }
}

#[test]
fn each_worker_process_compiles_for_one_arch() {
    let pool = Pool::new(fake_worker(), 1, Duration::from_secs(30));
    pool.warm_up().expect("the fake worker starts");
    let archs = ["sm_90", "sm_120", "sm_90", "sm_120", "sm_90", "sm_120"];
    let mut pids: Vec<(String, u64)> = Vec::new();
    let mut order: Vec<usize> = Vec::new();
    pool.run(
        archs.iter().map(|a| request(a)).collect(),
        |index, reply| {
            let reply = reply.expect("the fake worker answers");
            order.push(index);
            pids.push((archs[index].to_owned(), u64::from(reply.body.pid.unwrap())));
        },
    );
    let taken: Vec<&str> = order.iter().map(|&i| archs[i]).collect();
    assert!(
        taken[..3].iter().all(|a| *a == taken[0]) && taken[3..].iter().all(|a| *a == taken[3]),
        "one worker takes the jobs arch by arch: {taken:?}"
    );
    let pid_of = |arch: &str| -> Vec<u64> {
        pids.iter()
            .filter(|(a, _)| a == arch)
            .map(|(_, p)| *p)
            .collect()
    };
    let (sm90, sm120) = (pid_of("sm_90"), pid_of("sm_120"));
    assert!(
        sm90.iter().all(|p| *p == sm90[0]),
        "one process for all sm_90 jobs: {sm90:?}"
    );
    assert!(
        sm120.iter().all(|p| *p == sm120[0]),
        "one process for all sm_120 jobs: {sm120:?}"
    );
    assert_ne!(sm90[0], sm120[0], "a fresh process for the second arch");
}
