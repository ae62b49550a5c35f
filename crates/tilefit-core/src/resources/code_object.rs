//! Registers, scratch and LDS of one kernel, read from the AMDGPU code object (hsaco) Triton's HIP
//! backend links: the `NT_AMDGPU_METADATA` note (owner `AMDGPU`, type 32) holds MessagePack with
//! one map per kernel under `amdhsa.kernels` (LLVM AMDGPUUsage, code object V3+ metadata):
//! `.vgpr_count`, `.agpr_count`, `.sgpr_count`, their spill counts, `.private_segment_fixed_size`
//! (scratch per work-item), `.group_segment_fixed_size` (static LDS) and
//! `.max_flat_workgroup_size`.

use super::elf::{Elf, SHT_NOTE, u32_at};
use super::msgpack::{self, Value};
use super::{AmdRegisters, BinaryError, BinaryFormat, KernelResources};

/// `e_machine` of an AMDGPU code object.
const EM_AMDGPU: u16 = 224;
/// Note type of the MessagePack metadata.
const NT_AMDGPU_METADATA: u32 = 32;

/// The metadata note's MessagePack, from the first note section that has one.
fn metadata_note<'a>(elf: &Elf<'a>) -> Result<&'a [u8], BinaryError> {
    for section in elf.sections.iter().filter(|s| s.kind == SHT_NOTE) {
        let bytes = elf.bytes(section)?;
        let mut at = 0usize;
        while at + 12 <= bytes.len() {
            let name_len = u32_at(bytes, at, "a note")? as usize;
            let desc_len = u32_at(bytes, at + 4, "a note")? as usize;
            let kind = u32_at(bytes, at + 8, "a note")?;
            let name_start = at + 12;
            let desc_start = name_start
                .checked_add(name_len.next_multiple_of(4))
                .ok_or(BinaryError::Truncated("a note"))?;
            let desc_end = desc_start
                .checked_add(desc_len)
                .ok_or(BinaryError::Truncated("a note"))?;
            let name = bytes
                .get(name_start..name_start + name_len)
                .ok_or(BinaryError::Truncated("a note"))?;
            let desc = bytes
                .get(desc_start..desc_end)
                .ok_or(BinaryError::Truncated("a note"))?;
            if kind == NT_AMDGPU_METADATA && name.starts_with(b"AMDGPU") {
                return Ok(desc);
            }
            at = desc_start + desc_len.next_multiple_of(4);
        }
    }
    Err(BinaryError::Malformed(
        "no NT_AMDGPU_METADATA note in the code object".to_owned(),
    ))
}

fn count(kernel: &Value, key: &str) -> Option<u32> {
    kernel
        .get(key)
        .and_then(Value::as_u64)
        .and_then(|v| u32::try_from(v).ok())
}

/// `amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-` -> `gfx942`.
fn arch_of(target: &str) -> String {
    let processor = target.rsplit("--").next().unwrap_or(target);
    processor.split(':').next().unwrap_or(processor).to_owned()
}

/// Read `kernel`'s resources (or the only kernel's, when `kernel` is `None`).
pub fn read(data: &[u8], kernel: Option<&str>) -> Result<KernelResources, BinaryError> {
    let elf = Elf::parse(data)?;
    if elf.machine != EM_AMDGPU {
        return Err(BinaryError::WrongMachine {
            expected: "an AMDGPU code object (EM_AMDGPU, 224)",
            found: elf.machine,
        });
    }
    let metadata = msgpack::decode(metadata_note(&elf)?)?;
    let Some(Value::Array(kernels)) = metadata.get("amdhsa.kernels") else {
        return Err(BinaryError::Malformed(
            "the metadata has no amdhsa.kernels list".to_owned(),
        ));
    };
    let names: Vec<String> = kernels
        .iter()
        .filter_map(|k| k.get(".name").and_then(Value::as_str).map(str::to_owned))
        .collect();
    let chosen = match kernel {
        Some(name) => kernels
            .iter()
            .find(|k| k.get(".name").and_then(Value::as_str) == Some(name)),
        None if kernels.len() == 1 => kernels.first(),
        None => None,
    }
    .ok_or_else(|| BinaryError::NoKernel {
        wanted: kernel.unwrap_or("the only kernel").to_owned(),
        found: names.clone(),
    })?;
    let field = |key: &'static str| {
        count(chosen, key)
            .ok_or_else(|| BinaryError::Malformed(format!("the kernel's metadata has no `{key}`")))
    };
    let name = chosen
        .get(".name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Ok(KernelResources {
        binary_format: BinaryFormat::AmdgpuCodeObject,
        binary_arch: metadata
            .get("amdhsa.target")
            .and_then(Value::as_str)
            .map(arch_of)
            .unwrap_or_default(),
        binary_symbol: name,
        registers_per_thread: field(".vgpr_count")?,
        local_bytes_per_thread: u64::from(field(".private_segment_fixed_size")?),
        spill_bytes: None,
        spill_load_bytes: None,
        static_shared_bytes: u64::from(field(".group_segment_fixed_size")?),
        launch_bound_threads: count(chosen, ".max_flat_workgroup_size"),
        max_registers: None,
        amd: Some(AmdRegisters {
            sgprs: field(".sgpr_count")?,
            agprs: count(chosen, ".agpr_count").unwrap_or(0),
            vgpr_spills: count(chosen, ".vgpr_spill_count").unwrap_or(0),
            sgpr_spills: count(chosen, ".sgpr_spill_count").unwrap_or(0),
            wavefront_size: count(chosen, ".wavefront_size"),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_strings_name_the_processor() {
        assert_eq!(arch_of("amdgcn-amd-amdhsa--gfx942"), "gfx942");
        assert_eq!(
            arch_of("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"),
            "gfx90a"
        );
    }
}
