//! Shipped AOTInductor packages from elsewhere: any wrapper text and any binary beside it is read
//! into kernels or listed problems, never a panic. The input is split at the first NUL into the
//! wrapper `.cpp` and the binary its calls may load (`c0.cubin`); each half also goes straight to
//! its own parser.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (wrapper, binary) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let _ = tilefit_core::resources::images::images_of(binary);
    let _ = tilefit_core::input::aoti_wrapper::calls(&String::from_utf8_lossy(wrapper));
    let dir = std::env::temp_dir().join(format!("tilefit-fuzz-aoti-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("c0.wrapper.cpp"), wrapper);
    let _ = std::fs::write(dir.join("c0.cubin"), binary);
    let _ = tilefit_core::input::aoti::read(&dir);
});
