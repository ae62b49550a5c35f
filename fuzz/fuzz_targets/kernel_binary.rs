//! Compiled kernels: any bytes read as a cubin and as an AMDGPU code object (ELF sections,
//! .nv.info records, notes, MessagePack metadata) give resources or a `BinaryError`; never a
//! panic. The first byte picks the kernel name asked for (none, or a wrong one).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tilefit_core::resources::{self, BinaryFormat};

fuzz_target!(|data: &[u8]| {
    let kernel = match data.first() {
        Some(b) if b % 2 == 1 => Some("matmul_kernel"),
        _ => None,
    };
    for format in [BinaryFormat::Cubin, BinaryFormat::AmdgpuCodeObject] {
        let _ = resources::read(format, data, kernel, None);
    }
    let _ = resources::msgpack::decode(data);
});
