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

/// Every `path = value` leaf of a JSON value (a null is no value: the reader's `Option` skips it).
fn leaves(value: &serde_json::Value, path: String, out: &mut Vec<(String, serde_json::Value)>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, inner) in map {
                leaves(inner, format!("{path}.{key}"), out);
            }
        }
        serde_json::Value::Array(items) if !items.is_empty() => {
            for (i, inner) in items.iter().enumerate() {
                leaves(inner, format!("{path}[{i}]"), out);
            }
        }
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
