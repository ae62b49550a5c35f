//! Registers, stack frame, launch bounds and static shared memory of one kernel, read from the
//! cubin ptxas wrote, the way the driver reads them at module load. The layout (docs/reference/
//! devices.md §5, after CuAssembler's `CuNVInfo` and XLA's `cuda_elf_utils`): the SM is in
//! `e_flags`; `.text.K`'s `sh_info` holds K's symbol index (low 24 bits) and, up to sm_89, its
//! register count (high byte); the global `.nv.info` holds `EIATTR_REGCOUNT` and
//! `EIATTR_FRAME_SIZE` records keyed by that symbol index; `.nv.info.K` holds launch bounds and
//! `maxnreg`; `.nv.shared.K` is the static shared memory, with the 1 KiB per-block reservation
//! folded in from sm_90 on.

use super::elf::{Elf, u16_at, u32_at};
use super::{BinaryError, BinaryFormat, KernelResources};

/// `e_machine` of a cubin.
const EM_CUDA: u16 = 190;

// .nv.info record formats (the first byte of a record).
const EIFMT_NVAL: u8 = 1;
const EIFMT_BVAL: u8 = 2;
const EIFMT_HVAL: u8 = 3;
const EIFMT_SVAL: u8 = 4;

// .nv.info attributes (the second byte).
const EIATTR_MAX_THREADS: u8 = 0x05;
const EIATTR_REQNTID: u8 = 0x10;
const EIATTR_FRAME_SIZE: u8 = 0x11;
const EIATTR_MAXREG_COUNT: u8 = 0x1b;
const EIATTR_REGCOUNT: u8 = 0x2f;

/// What `.nv.shared.K` holds on sm_90 and later beyond the kernel's own static shared memory:
/// the per-block reservation, which the driver subtracts (measured: §5.2).
const SHARED_RESERVATION_IN_SECTION: u64 = 1024;

/// One `.nv.info` record.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Record<'a> {
    attribute: u8,
    /// The 2-byte value of BVAL/HVAL records.
    short: Option<u16>,
    /// The payload of SVAL records.
    payload: &'a [u8],
}

fn records(bytes: &[u8]) -> Result<Vec<Record<'_>>, BinaryError> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at + 4 <= bytes.len() {
        let format = bytes[at];
        let attribute = bytes[at + 1];
        match format {
            EIFMT_NVAL => {
                out.push(Record {
                    attribute,
                    short: None,
                    payload: &[],
                });
                at += 4;
            }
            EIFMT_BVAL | EIFMT_HVAL => {
                out.push(Record {
                    attribute,
                    short: Some(u16_at(bytes, at + 2, "an .nv.info record")?),
                    payload: &[],
                });
                at += 4;
            }
            EIFMT_SVAL => {
                let len = usize::from(u16_at(bytes, at + 2, "an .nv.info record")?);
                let payload = bytes
                    .get(at + 4..at + 4 + len)
                    .ok_or(BinaryError::Truncated("an .nv.info record"))?;
                out.push(Record {
                    attribute,
                    short: None,
                    payload,
                });
                at += 4 + len;
            }
            other => {
                return Err(BinaryError::Malformed(format!(
                    "an .nv.info record of unknown format {other:#x} at byte {at}"
                )));
            }
        }
    }
    Ok(out)
}

/// The value of a global `[symbol index, value]` record for `symbol`.
fn keyed(records: &[Record<'_>], attribute: u8, symbol: u32) -> Result<Option<u32>, BinaryError> {
    for record in records.iter().filter(|r| r.attribute == attribute) {
        if record.payload.len() >= 8 && u32_at(record.payload, 0, "an .nv.info record")? == symbol {
            return Ok(Some(u32_at(record.payload, 4, "an .nv.info record")?));
        }
    }
    Ok(None)
}

/// x * y * z of a 3-word launch-bound record.
fn threads_of(record: &Record<'_>) -> Result<u32, BinaryError> {
    let mut product = 1u32;
    for i in 0..3 {
        let dim = u32_at(record.payload, i * 4, "a launch-bound record")?;
        product = product.saturating_mul(dim.max(1));
    }
    Ok(product)
}

/// The SM a cubin was built for, from `e_flags` (ABI v7: low byte; ABI v8: second byte).
pub fn sm_of(elf: &Elf<'_>) -> u32 {
    if elf.abi_version >= 8 {
        (elf.flags >> 8) & 0xff
    } else {
        elf.flags & 0xff
    }
}

/// Read `kernel`'s resources (or the only kernel's, when `kernel` is `None`).
pub fn read(data: &[u8], kernel: Option<&str>) -> Result<KernelResources, BinaryError> {
    let elf = Elf::parse(data)?;
    if elf.machine != EM_CUDA {
        return Err(BinaryError::WrongMachine {
            expected: "a cubin (EM_CUDA, 190)",
            found: elf.machine,
        });
    }
    let kernels: Vec<&str> = elf
        .sections
        .iter()
        .filter_map(|s| s.name.strip_prefix(".text."))
        .collect();
    let name = match kernel {
        Some(name) if kernels.contains(&name) => name,
        None if kernels.len() == 1 => kernels[0],
        _ => {
            return Err(BinaryError::NoKernel {
                wanted: kernel.unwrap_or("the only kernel").to_owned(),
                found: kernels.iter().map(|k| (*k).to_owned()).collect(),
            });
        }
    };
    let text = elf.section(&format!(".text.{name}")).expect("listed above");
    let symbol = text.info & 0x00ff_ffff;
    let register_high_byte = text.info >> 24;
    let global = match elf.section(".nv.info") {
        Some(section) => records(elf.bytes(section)?)?,
        None => Vec::new(),
    };
    let own = match elf.section(&format!(".nv.info.{name}")) {
        Some(section) => records(elf.bytes(section)?)?,
        None => Vec::new(),
    };
    let registers = match keyed(&global, EIATTR_REGCOUNT, symbol)? {
        Some(count) => count,
        None if register_high_byte > 0 => register_high_byte,
        None => {
            return Err(BinaryError::Malformed(format!(
                "no register count for `{name}` (no EIATTR_REGCOUNT, and sh_info's high byte is 0)"
            )));
        }
    };
    let frame = keyed(&global, EIATTR_FRAME_SIZE, symbol)?.unwrap_or(0);
    let launch_bound = own
        .iter()
        .find(|r| r.attribute == EIATTR_MAX_THREADS)
        .or_else(|| own.iter().find(|r| r.attribute == EIATTR_REQNTID))
        .map(threads_of)
        .transpose()?;
    let max_registers = own
        .iter()
        .find(|r| r.attribute == EIATTR_MAXREG_COUNT)
        .and_then(|r| r.short)
        .map(u32::from);
    let sm = sm_of(&elf);
    let shared_section = elf
        .section(&format!(".nv.shared.{name}"))
        .map_or(0, |s| s.size);
    let static_shared = if sm >= 90 {
        shared_section.saturating_sub(SHARED_RESERVATION_IN_SECTION)
    } else {
        shared_section
    };
    Ok(KernelResources {
        binary_format: BinaryFormat::Cubin,
        binary_arch: format!("sm_{sm}"),
        binary_symbol: name.to_owned(),
        registers_per_thread: registers,
        local_bytes_per_thread: u64::from(frame),
        spill_bytes: None,
        spill_load_bytes: None,
        static_shared_bytes: static_shared,
        launch_bound_threads: launch_bound,
        max_registers,
        amd: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_of_every_format() {
        let bytes = [
            0x01, 0x2a, 0, 0, // NVAL
            0x03, 0x1b, 0xff, 0x00, // HVAL maxnreg 255
            0x04, 0x2f, 0x08, 0x00, 9, 0, 0, 0, 80, 0, 0, 0, // SVAL regcount sym 9 = 80
        ];
        let parsed = records(&bytes).unwrap();
        assert_eq!(parsed.len(), 3);
        assert_eq!(parsed[1].short, Some(255));
        assert_eq!(keyed(&parsed, EIATTR_REGCOUNT, 9).unwrap(), Some(80));
        assert_eq!(keyed(&parsed, EIATTR_REGCOUNT, 8).unwrap(), None);
    }

    #[test]
    fn a_record_running_past_the_section_is_an_error() {
        let bytes = [0x04, 0x2f, 0x40, 0x00, 9, 0, 0, 0];
        assert!(matches!(records(&bytes), Err(BinaryError::Truncated(_))));
        assert!(matches!(
            records(&[0x07, 0x2f, 0, 0]),
            Err(BinaryError::Malformed(_))
        ));
    }

    #[test]
    fn not_a_cubin() {
        assert!(matches!(read(b"hello", None), Err(BinaryError::NotElf)));
        assert!(matches!(read(&[0u8; 100], None), Err(BinaryError::NotElf)));
    }
}
