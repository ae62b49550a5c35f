//! Probe specs: any text either parses into a spec or is a `SpecError`; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        // The spec path's folder holds the examples' kernel files, so `file = "mla_decode.py"`
        // can resolve and the fuzzer reaches the checks past the kernel file.
        let path = std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/mla_decode/fuzz.toml"
        ));
        if let Ok(spec) = tilefit_core::input::spec::parse(text, path) {
            let configs = spec.configs();
            let _ = configs.len();
        }
    }
});
