//! A capture's records file, as a killed or hostile emulated run could leave it: read and
//! checked (`input::capture::read`) or refused by field; never a panic. What is read is checked
//! to be safe to turn into file names: every kernel's name is a Python identifier, and its scope
//! file's name stays in its folder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tilefit_core::input::capture::{is_identifier, read};
use tilefit_core::plan::capture::scope_file_name;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("tilefit-fuzz-records-{}.json", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    if let Ok(records) = read(&path) {
        for launch in &records.launches {
            assert!(is_identifier(&launch.kernel.function), "{:?}", launch.kernel.function);
            let scope = scope_file_name(&launch.kernel);
            assert!(!scope.contains('/') && !scope.starts_with('.'), "{scope:?}");
        }
    }
});
