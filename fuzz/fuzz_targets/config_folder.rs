//! Engines' config folders from elsewhere: any file name and JSON body is read as a config file or
//! listed as a problem; never a panic. The input is split at the first NUL into the file's name
//! (path separators dropped) and its body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tilefit_core::device::DeviceTable;

fuzz_target!(|data: &[u8]| {
    let (name, body) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (&b"E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json"[..], data),
    };
    let name: String = String::from_utf8_lossy(name)
        .chars()
        .filter(|c| *c != '/' && *c != '\0')
        .take(200)
        .collect();
    if name.is_empty() || name == "." || name == ".." {
        return;
    }
    let dir = std::env::temp_dir().join(format!("tilefit-fuzz-configs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::create_dir_all(&dir);
    let file = dir.join(format!("{name}.json"));
    if std::fs::write(&file, body).is_err() {
        return;
    }
    let table = DeviceTable::builtin().expect("the built-in table loads");
    let _ = tilefit_core::input::config_files::read(
        &dir.join("*.json"),
        table,
        &tilefit_core::cancel::Cancel::new(),
    );
});
