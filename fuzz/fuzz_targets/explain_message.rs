//! `tilefit explain`: any message is explained or refused; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let message = String::from_utf8_lossy(data);
    let table = tilefit_core::device::DeviceTable::builtin().expect("the embedded table loads");
    let _ = tilefit_core::explain::explain(&message, table);
    let _ = table.resolve(&message);
});
