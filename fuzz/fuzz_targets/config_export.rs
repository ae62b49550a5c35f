//! `--emit-configs` exports from elsewhere (`--shipped`, and what the Python package's `load`
//! reads): any JSON is refused or read, and one that is read is written again as Python whose
//! every value is a literal; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tilefit_core::fix::ConfigExport;

fuzz_target!(|data: &[u8]| {
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let _ = tilefit_core::input::untrusted::check_strings(&json);
    if let Ok(export) = serde_json::from_value::<ConfigExport>(json) {
        if let Some(python) = export.python() {
            // Every line is code of tilefit's own or a value inside a literal: no line of the
            // generated module starts with anything a value could have put there.
            for line in python.lines() {
                assert!(!line.contains('\r'), "{line:?}");
            }
        }
    }
});
