//! The contract between the halves, on the Rust side. What one half hands the other is kept as
//! fixtures in `python/unit/`, which the Python half's own tests (run without the binary) make or
//! read: the emulated devices the Rust half writes for a capture (`devices/`, which the Python
//! tests run under), and the records a capture's process writes (`contract/records.json`, which
//! `test_contract.py` checks the Python half still writes). Here each device fixture must be what
//! this Rust writes now, and the records must be read whole: every value the Python half writes is
//! kept by `input::capture` (or listed in [`WRITTEN_NOT_READ`] with why), and nothing else. A
//! change on one side alone breaks a test: here when Rust changes, there when Python does.
//! `TILEFIT_WRITE_CONTRACT=1` writes the fixtures afresh (both sides' tests, then a review).

use std::path::{Path, PathBuf};

use tilefit_core::device::emulated::EmulatedDevice;
use tilefit_core::device::{DeviceTable, TargetDevice};

use super::layering::root;

/// The devices whose emulated form the Python tests run under: a CUDA product, an AMD product and
/// a CUDA arch named alone (answered as a product of its arch).
const DEVICES: &[&str] = &["h100", "rtx-pro-6000", "mi300x", "sm_120"];

fn fixtures() -> PathBuf {
    root().join("python/unit/devices")
}

/// The device file `tilefit capture` writes for `name` (`run::capture::target`'s
/// `serde_json::to_string` of the emulated device), pretty-printed for review.
fn device_json(name: &str) -> String {
    let table = DeviceTable::builtin().unwrap();
    let targets = TargetDevice::resolve(table, &[name.to_owned()]).unwrap();
    let device = EmulatedDevice::of(table, &targets[0]).unwrap();
    serde_json::to_string_pretty(&device).unwrap() + "\n"
}

fn check(path: &Path, now: &str) {
    if std::env::var_os("TILEFIT_WRITE_CONTRACT").is_some() {
        std::fs::write(path, now).unwrap();
        return;
    }
    let kept = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        kept == now,
        "{} is not what the Rust half writes now: run `TILEFIT_WRITE_CONTRACT=1 cargo test -p \
         tilefit-core --test core contract`, then the Python half's tests (python/unit)\n\
         kept:\n{kept}\nnow:\n{now}",
        path.display()
    );
}

#[test]
fn the_emulated_devices_the_python_tests_use_are_what_capture_writes() {
    for name in DEVICES {
        let path = fixtures().join(format!("{name}.json"));
        check(&path, &device_json(name));
        // What the Python half reads is the compact form capture writes: the same value.
        let compact: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let table = DeviceTable::builtin().unwrap();
        let targets = TargetDevice::resolve(table, &[(*name).to_owned()]).unwrap();
        let device = EmulatedDevice::of(table, &targets[0]).unwrap();
        assert_eq!(compact, serde_json::to_value(&device).unwrap(), "{name}");
    }
    // No fixture is left over from a device taken off the list.
    let mut kept: Vec<String> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    kept.sort();
    let mut listed: Vec<String> = DEVICES.iter().map(|d| format!("{d}.json")).collect();
    listed.sort();
    assert_eq!(kept, listed);
}

/// What the Python half writes in its records and the Rust half does not read, each with why.
const WRITTEN_NOT_READ: &[(&str, &str)] = &[(
    "device",
    "the emulated device as the process got it: the Rust half wrote it, and knows it",
)];

/// Every `path = value` leaf of a JSON value (a null, an empty list or map is no value: the
/// reader's `Option` and empty defaults skip them).
fn leaves(value: &serde_json::Value, path: String, out: &mut Vec<(String, serde_json::Value)>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, inner) in map {
                leaves(inner, format!("{path}.{key}"), out);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                leaves(inner, format!("{path}[{i}]"), out);
            }
        }
        // No value: a null, an empty list or map (the reader's `Option` and empty defaults).
        serde_json::Value::Null => {}
        other => out.push((path, other.clone())),
    }
}

#[test]
fn the_records_the_python_half_writes_are_read_whole() {
    let path = root().join("python/unit/contract/records.json");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let records = tilefit_core::input::capture::of_value(written.clone(), &path).unwrap();
    // The records are whole, judged, and hold each kind of entry the fixture was made for.
    assert!(records.complete);
    assert_eq!(records.launches.len(), 3);
    assert!(records.launches.iter().all(|l| l.unsupported.is_none()));
    assert!(!records.checks.is_empty() && !records.assumptions.is_empty());

    let read = serde_json::to_value(&records).unwrap();
    let mut kept = Vec::new();
    leaves(&read, String::new(), &mut kept);
    let mut sent = Vec::new();
    leaves(&written, String::new(), &mut sent);
    let ignored = |leaf: &str| {
        WRITTEN_NOT_READ
            .iter()
            .any(|(field, _)| leaf.strip_prefix('.').unwrap_or(leaf).starts_with(field))
    };
    let lost: Vec<_> = sent
        .iter()
        .filter(|(leaf, _)| !ignored(leaf))
        .filter(|leaf| !kept.contains(leaf))
        .collect();
    assert!(
        lost.is_empty(),
        "fields the Python half writes that the Rust half drops or reads otherwise (add them to \
         input::capture, or to WRITTEN_NOT_READ with why): {lost:#?}"
    );
    let invented: Vec<_> = kept.iter().filter(|leaf| !sent.contains(leaf)).collect();
    assert!(
        invented.is_empty(),
        "values the Rust half holds that the Python half did not write: {invented:#?}"
    );
}

/// The requests of the worker protocol the Python half answers in its own tests
/// (`python/unit/test_worker_contract.py`): a kernel inspected, a config compiled for an arch.
/// `<repo>` stands for the repository's root.
fn worker_requests() -> Vec<tilefit_core::vocab::Request> {
    use tilefit_core::device::{Backend, Target};
    use tilefit_core::vocab::{CompileJob, JobArg, KernelSource, Request};
    let kernel_file = PathBuf::from("<repo>/python/unit/contract/kernel.py");
    let pointer = JobArg {
        ty: "*fp16".to_owned(),
        value: None,
        aligned: true,
        descriptor: None,
    };
    let job = CompileJob {
        kernel_file: kernel_file.clone(),
        function: "scale".to_owned(),
        source: KernelSource::default(),
        args: [
            ("x_ptr".to_owned(), pointer.clone()),
            ("out_ptr".to_owned(), pointer),
            (
                "n".to_owned(),
                JobArg {
                    ty: "i32".to_owned(),
                    value: Some(serde_json::json!(1000)),
                    aligned: false,
                    descriptor: None,
                },
            ),
        ]
        .into(),
        constexprs: [("BLOCK".to_owned(), serde_json::json!(128))].into(),
        options: [
            ("num_warps".to_owned(), serde_json::json!(4)),
            ("num_stages".to_owned(), serde_json::json!(2)),
        ]
        .into(),
        target: Target {
            backend: Backend::Cuda,
            arch: "sm_90".to_owned(),
            warp_size: 32,
        },
        full: false,
        resources: false,
    };
    vec![
        Request::Inspect {
            kernel_file,
            function: "scale".to_owned(),
            source: KernelSource::default(),
        },
        Request::Compile {
            job,
            binary_dir: None,
        },
    ]
}

/// What the worker sends in a reply and the Rust half does not read, each with why.
const SENT_NOT_READ: &[(&str, &str)] = &[
    (
        ".type",
        "the line's kind (`reply`): the first line is the handshake, every other one a reply",
    ),
    (
        ".autotuned",
        "the same as `autotune_configs` being present, which the Rust half reads",
    ),
    (
        ".annotation",
        "a parameter's annotation as written: the worker decides `constexpr` from it, which the \
         Rust half reads",
    ),
];

#[test]
fn the_worker_s_replies_to_the_rust_half_s_requests_are_read_whole() {
    let folder = root().join("python/unit/contract");
    let requests: Vec<serde_json::Value> = worker_requests()
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect();
    check(
        &folder.join("requests.json"),
        &(serde_json::to_string_pretty(&requests).unwrap() + "\n"),
    );
    let path = folder.join("replies.json");
    let written: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(written.len(), requests.len());
    let mut lost = Vec::new();
    for (i, sent) in written.iter().enumerate() {
        let reply: tilefit_core::compile::Reply =
            serde_json::from_value(sent.clone()).unwrap_or_else(|e| panic!("reply {i}: {e}"));
        assert_eq!(reply.status, "ok", "reply {i}: {sent}");
        let read = serde_json::to_value(&reply).unwrap();
        let (mut kept, mut given) = (Vec::new(), Vec::new());
        leaves(&read, String::new(), &mut kept);
        leaves(sent, format!("[{i}]"), &mut given);
        let kept: Vec<_> = kept
            .into_iter()
            .map(|(p, v)| (format!("[{i}]{p}"), v))
            .collect();
        let ignored = |leaf: &str| SENT_NOT_READ.iter().any(|(end, _)| leaf.ends_with(end));
        lost.extend(
            given
                .into_iter()
                .filter(|(leaf, _)| !ignored(leaf))
                .filter(|leaf| !kept.contains(leaf)),
        );
    }
    assert!(
        lost.is_empty(),
        "fields the worker sends that protocol::Reply drops (read them there, or list them in \
         SENT_NOT_READ with why): {lost:#?}"
    );
}
