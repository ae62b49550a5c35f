//! Triton cache entries from elsewhere: any metadata JSON and IR head is indexed or skipped with a
//! reason; never a panic. The input is split at the first NUL into the JSON and the IR.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (json, ir) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let dir = std::env::temp_dir().join(format!("tilefit-fuzz-cache-{}", std::process::id()));
    let entry = dir.join("ENTRY");
    let _ = std::fs::create_dir_all(&entry);
    let _ = std::fs::write(entry.join("k.json"), json);
    let _ = std::fs::write(entry.join("k.ttir"), ir);
    let _ = tilefit_core::input::cache_index::scan(&[dir.clone()]);
});
