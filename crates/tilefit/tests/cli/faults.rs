//! Fault injection with a fake worker (the only place a fake stands in for Triton): a worker that
//! crashes, hangs, garbles its reply, dies mid-line or floods stderr fails only its own job; the
//! worker is replaced and every other result is reported. A toolchain whose Triton does not import
//! stops the run before any job, with the import error.

use super::{fixture, scratch, tilefit_with};

#[test]
fn worker_faults_fail_only_their_job() {
    let cache = scratch("faults");
    let worker = std::path::PathBuf::from(fixture("fake_worker.py"));
    let python = super::python();
    let run = tilefit_with(
        &[
            "probe",
            &fixture("faults.toml"),
            "--python",
            python.to_str().unwrap(),
            "--timeout",
            "3",
            "--jobs",
            "2",
            "--json",
            "-",
        ],
        None,
        &[
            ("TILEFIT_CACHE_DIR", &cache),
            ("TILEFIT_WORKER_SCRIPT", &worker),
        ],
    );
    assert_eq!(
        run.code, 2,
        "worker faults make the run exit 2: {}",
        run.stderr
    );
    assert!(run.stderr.contains("4 of 8 jobs failed"), "{}", run.stderr);
    let report: serde_json::Value =
        serde_json::from_str(&run.stdout).expect("the report is still printed");
    let by_fault = |fault: &str| -> Vec<&serde_json::Value> {
        report["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["config"]["FAULT"] == fault)
            .collect()
    };
    for ok in by_fault("ok") {
        assert_eq!(ok["status"], "ok");
        assert_eq!(ok["shared_bytes"], 4096);
        assert_eq!(ok["verdicts"][0]["verdict"], "fits");
    }
    let message = |fault: &str| {
        by_fault(fault)[0]["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(by_fault("crash")[0]["status"], "failed");
    assert!(
        message("crash").contains("killed by signal 11 (SIGSEGV)"),
        "{}",
        message("crash")
    );
    assert!(
        message("hang").contains("did not answer within 3 s"),
        "{}",
        message("hang")
    );
    assert!(
        message("garbage").contains("not a protocol message: this is not json"),
        "{}",
        message("garbage")
    );
    assert!(
        by_fault("half")[0]["status"] == "failed",
        "{}",
        message("half")
    );
    // Megabytes of stderr neither block the worker nor fail the job.
    assert_eq!(by_fault("flood")[0]["status"], "ok");
    assert_eq!(report["stats"]["failed"], 4);
    // The faulted cells read FAILED in the table.
}

#[test]
fn the_table_marks_failed_cells() {
    let cache = scratch("faults-table");
    let worker = std::path::PathBuf::from(fixture("fake_worker.py"));
    let python = super::python();
    let run = tilefit_with(
        &[
            "probe",
            &fixture("faults.toml"),
            "--python",
            python.to_str().unwrap(),
            "--timeout",
            "2",
        ],
        None,
        &[
            ("TILEFIT_CACHE_DIR", &cache),
            ("TILEFIT_WORKER_SCRIPT", &worker),
        ],
    );
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stdout.matches(" FAILED").count(),
        5,
        "four cells and the footer: {}",
        run.stdout
    );
    assert!(run.stdout.contains("FAULT=flood"));
}

#[test]
fn a_triton_that_does_not_import_stops_the_run() {
    let cache = scratch("no-triton");
    let worker = std::path::PathBuf::from(fixture("fake_worker.py"));
    let python = super::python();
    let run = tilefit_with(
        &[
            "probe",
            &fixture("faults.toml"),
            "--python",
            python.to_str().unwrap(),
        ],
        None,
        &[
            ("TILEFIT_CACHE_DIR", &cache),
            ("TILEFIT_WORKER_SCRIPT", &worker),
            ("FAKE_WORKER_NO_TRITON", std::path::Path::new("1")),
        ],
    );
    assert_eq!(run.code, 2);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.contains("the compile worker could not start"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("triton does not import: ImportError: libtriton.so"),
        "{}",
        run.stderr
    );
}
