//! Just enough ELF64 (little-endian) to find sections by name and read their bytes: what the cubin
//! and AMDGPU code-object readers share. Every offset and size is checked against the file, so a
//! truncated or hostile binary gives a [`BinaryError`], never a panic or an out-of-bounds read.

use super::BinaryError;

const ELF_MAGIC: &[u8; 4] = b"\x7fELF";
const ELFCLASS64: u8 = 2;
const ELFDATA2LSB: u8 = 1;
const ELF_HEADER_LEN: usize = 64;
const SECTION_HEADER_LEN: usize = 64;

/// `sh_type` of sections that occupy no file space (`.nv.shared.*`).
pub const SHT_NOBITS: u32 = 8;
/// `sh_type` of note sections.
pub const SHT_NOTE: u32 = 7;

/// One section header, with its name resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// `.text.matmul_kernel`.
    pub name: String,
    /// `sh_type`.
    pub kind: u32,
    /// `sh_offset`.
    pub offset: u64,
    /// `sh_size`.
    pub size: u64,
    /// `sh_info`: on a cubin's `.text.K`, the kernel's symbol index (low 24 bits) and, on older
    /// archs, its register count (high 8 bits).
    pub info: u32,
}

/// A parsed ELF64 image borrowing the file's bytes.
#[derive(Debug)]
pub struct Elf<'a> {
    data: &'a [u8],
    /// `e_ident[EI_ABIVERSION]`.
    pub abi_version: u8,
    /// `e_machine`: 190 for CUDA, 224 for AMDGPU.
    pub machine: u16,
    /// `e_flags`: the SM on a cubin, the GPU on an AMDGPU code object.
    pub flags: u32,
    /// Section headers in file order.
    pub sections: Vec<Section>,
}

/// `N` bytes of `data` at `at`, or `Truncated(what)`.
pub(super) fn read<const N: usize>(
    data: &[u8],
    at: usize,
    what: &'static str,
) -> Result<[u8; N], BinaryError> {
    at.checked_add(N)
        .and_then(|end| data.get(at..end))
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or(BinaryError::Truncated(what))
}

pub(super) fn u16_at(data: &[u8], at: usize, what: &'static str) -> Result<u16, BinaryError> {
    read::<2>(data, at, what).map(u16::from_le_bytes)
}

pub(super) fn u32_at(data: &[u8], at: usize, what: &'static str) -> Result<u32, BinaryError> {
    read::<4>(data, at, what).map(u32::from_le_bytes)
}

fn u64_at(data: &[u8], at: usize, what: &'static str) -> Result<u64, BinaryError> {
    read::<8>(data, at, what).map(u64::from_le_bytes)
}

fn usize_of(value: u64, what: &'static str) -> Result<usize, BinaryError> {
    usize::try_from(value).map_err(|_| BinaryError::Truncated(what))
}

impl<'a> Elf<'a> {
    /// Parse the header and the section table.
    pub fn parse(data: &'a [u8]) -> Result<Elf<'a>, BinaryError> {
        if data.len() < ELF_HEADER_LEN || &data[..4] != ELF_MAGIC {
            return Err(BinaryError::NotElf);
        }
        if data[4] != ELFCLASS64 || data[5] != ELFDATA2LSB {
            return Err(BinaryError::Malformed(
                "not a 64-bit little-endian ELF file".to_owned(),
            ));
        }
        let abi_version = data[8];
        let machine = u16_at(data, 18, "the ELF header")?;
        let flags = u32_at(data, 48, "the ELF header")?;
        let table = usize_of(u64_at(data, 40, "the ELF header")?, "the section table")?;
        let entry_len = usize::from(u16_at(data, 58, "the ELF header")?);
        let count = usize::from(u16_at(data, 60, "the ELF header")?);
        let names_index = usize::from(u16_at(data, 62, "the ELF header")?);
        if count > 0 && entry_len < SECTION_HEADER_LEN {
            return Err(BinaryError::Malformed(format!(
                "section headers of {entry_len} bytes (64 expected)"
            )));
        }
        let mut raw = Vec::with_capacity(count.min(4096));
        for index in 0..count {
            let at = index
                .checked_mul(entry_len)
                .and_then(|o| o.checked_add(table))
                .ok_or(BinaryError::Truncated("the section table"))?;
            raw.push((
                u32_at(data, at, "a section header")?,
                u32_at(data, at + 4, "a section header")?,
                u64_at(data, at + 24, "a section header")?,
                u64_at(data, at + 32, "a section header")?,
                u32_at(data, at + 44, "a section header")?,
            ));
        }
        let names: &[u8] = match raw.get(names_index) {
            Some(&(_, _, offset, size, _)) => slice(data, offset, size, "the section names")?,
            None if count == 0 => &[],
            None => return Err(BinaryError::Truncated("the section names")),
        };
        let sections = raw
            .into_iter()
            .map(|(name, kind, offset, size, info)| {
                let start = usize_of(u64::from(name), "a section name")?;
                let bytes = names
                    .get(start..)
                    .ok_or(BinaryError::Truncated("a section name"))?;
                let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
                Ok(Section {
                    name: String::from_utf8_lossy(&bytes[..end]).into_owned(),
                    kind,
                    offset,
                    size,
                    info,
                })
            })
            .collect::<Result<Vec<_>, BinaryError>>()?;
        Ok(Elf {
            data,
            abi_version,
            machine,
            flags,
            sections,
        })
    }

    /// The first section with this name.
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// A section's bytes in the file; empty for NOBITS sections, which occupy none.
    pub fn bytes(&self, section: &Section) -> Result<&'a [u8], BinaryError> {
        if section.kind == SHT_NOBITS {
            return Ok(&[]);
        }
        slice(
            self.data,
            section.offset,
            section.size,
            "a section's contents",
        )
    }
}

fn slice<'a>(
    data: &'a [u8],
    offset: u64,
    size: u64,
    what: &'static str,
) -> Result<&'a [u8], BinaryError> {
    let start = usize_of(offset, what)?;
    let end = start
        .checked_add(usize_of(size, what)?)
        .ok_or(BinaryError::Truncated(what))?;
    data.get(start..end).ok_or(BinaryError::Truncated(what))
}
