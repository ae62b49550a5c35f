//! tritonparse traces from elsewhere: any NDJSON is unpacked into cache entries (names that are
//! not plain are refused) and indexed, or listed as a problem; never a panic, never a file outside
//! the folder it unpacks into.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("tilefit-fuzz-trace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let into = dir.join("unpacked");
    let _ = std::fs::create_dir_all(&into);
    let trace = dir.join("trace.ndjson");
    if std::fs::write(&trace, data).is_err() {
        return;
    }
    if tilefit_core::input::sources::unpack_trace(&trace, &into).is_ok() {
        let _ = tilefit_core::input::cache_index::scan(&[into.clone()]);
    }
    // Everything it wrote is inside `into`.
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        assert!(name == "unpacked" || name == "trace.ndjson", "{name:?} written beside");
    }
});
