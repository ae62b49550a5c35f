//! What a shipped NVIDIA kernel binary can run on: the images it holds (SASS for an SM, PTX for
//! a virtual arch) read from a cubin's `e_flags`, a PTX file's `.target`, or each entry header of
//! a fatbin (`nvcc -fatbin`: magic `0xBA55ED50`, then per entry its kind, 1 PTX or 2 ELF, and its
//! SM; the payload, zstd-compressed PTX included, is never decoded). The driver loads SASS built
//! for the device's major at a minor up to the device's, else JIT-compiles PTX for a virtual arch
//! up to the device's; an arch-specific target (`sm_90a`, `sm_100a`, `sm_120a`: what Triton's
//! PTX and torch's AOTInductor `nvcc -gencode` use from sm_90 on) runs on that exact arch only.

use serde::{Deserialize, Serialize};

use super::BinaryError;
use super::elf::{Elf, read as le};

/// `nvcc`'s fatbin magic.
const FATBIN_MAGIC: u32 = 0xBA55_ED50;

/// One image of a binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Image {
    /// SASS (a cubin) or PTX.
    pub kind: ImageKind,
    /// The SM as a number: 80, 90, 120.
    pub sm: u32,
}

/// SASS or PTX.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImageKind {
    /// Machine code for one SM (a cubin).
    Sass,
    /// PTX, JIT-compiled by the driver.
    Ptx,
}

impl Image {
    /// Whether it is an arch-specific target (`sm_90a` and up), which runs on its own SM only.
    fn arch_specific(self) -> bool {
        self.sm >= 90
    }

    /// `sm_80`, `compute_80`, `sm_90a`, `compute_90a`: as `nvcc -gencode` names it.
    pub fn label(self) -> String {
        let prefix = match self.kind {
            ImageKind::Sass => "sm",
            ImageKind::Ptx => "compute",
        };
        let suffix = if self.arch_specific() { "a" } else { "" };
        format!("{prefix}_{}{suffix}", self.sm)
    }

    /// Whether the driver of a device of compute capability `major.minor` loads it.
    pub fn runs_on(self, major: u32, minor: u32) -> bool {
        let device = major * 10 + minor;
        if self.arch_specific() {
            return device == self.sm;
        }
        match self.kind {
            ImageKind::Sass => major == self.sm / 10 && minor >= self.sm % 10,
            ImageKind::Ptx => device >= self.sm,
        }
    }
}

/// Whether a binary holds the kernel `name` (`None`: it cannot tell, its images being
/// compressed): a cubin by its `.text.NAME` section, PTX by its `.entry NAME`, a fatbin by the
/// name's bytes in an uncompressed entry.
pub fn holds_kernel(data: &[u8], name: &str) -> Option<bool> {
    if data.starts_with(&FATBIN_MAGIC.to_le_bytes()) {
        if memchr::memmem::find(data, name.as_bytes()).is_some() {
            return Some(true);
        }
        return if fatbin_compressed(data) {
            None
        } else {
            Some(false)
        };
    }
    if data.starts_with(b"\x7fELF") {
        let elf = Elf::parse(data).ok()?;
        return Some(elf.section(&format!(".text.{name}")).is_some());
    }
    let text = String::from_utf8_lossy(data);
    Some(text.lines().any(|line| {
        line.split_once(".entry").is_some_and(|(_, rest)| {
            rest.trim_start()
                .split(|c: char| c == '(' || c.is_whitespace())
                .next()
                == Some(name)
        })
    }))
}

/// Whether every entry of a fatbin is compressed (nvcc's flags 0x2000 or 0x8000).
fn fatbin_compressed(data: &[u8]) -> bool {
    let header = le::<2>(data, 6, "").map_or(16, |b| usize::from(u16::from_le_bytes(b)));
    let size = le::<8>(data, 8, "").map_or(0, u64::from_le_bytes);
    let end = usize::try_from(size)
        .unwrap_or(usize::MAX)
        .saturating_add(header)
        .min(data.len());
    let mut at = header;
    let mut all = true;
    while at + 48 <= end {
        let (Ok(entry), Ok(payload), Ok(flags)) = (
            le::<4>(data, at + 4, ""),
            le::<8>(data, at + 8, ""),
            le::<8>(data, at + 40, ""),
        ) else {
            break;
        };
        all &= u64::from_le_bytes(flags) & 0xA000 != 0;
        let step = u64::from(u32::from_le_bytes(entry)).saturating_add(u64::from_le_bytes(payload));
        match usize::try_from(step).ok().and_then(|s| at.checked_add(s)) {
            Some(next) if next > at => at = next,
            _ => break,
        }
    }
    all
}

/// The images of a binary, by its first bytes: a fatbin, a cubin, or PTX text.
pub fn images_of(data: &[u8]) -> Result<Vec<Image>, BinaryError> {
    if data.starts_with(&FATBIN_MAGIC.to_le_bytes()) {
        return fatbin(data);
    }
    if data.starts_with(b"\x7fELF") {
        let elf = Elf::parse(data)?;
        if elf.machine != 190 {
            return Err(BinaryError::WrongMachine {
                expected: "a cubin (EM_CUDA)",
                found: elf.machine,
            });
        }
        return Ok(vec![Image {
            kind: ImageKind::Sass,
            sm: super::cubin::sm_of(&elf),
        }]);
    }
    ptx(data)
}

/// Every entry of a fatbin (a file may hold several fatbins back to back).
fn fatbin(data: &[u8]) -> Result<Vec<Image>, BinaryError> {
    let mut images = Vec::new();
    let mut start = 0usize;
    while start < data.len() && data[start..].starts_with(&FATBIN_MAGIC.to_le_bytes()) {
        let header = usize::from(u16::from_le_bytes(le(
            data,
            start + 6,
            "the fatbin header",
        )?));
        let size = u64::from_le_bytes(le(data, start + 8, "the fatbin header")?);
        let end = usize::try_from(size)
            .ok()
            .and_then(|size| (start + header).checked_add(size))
            .filter(|&end| end <= data.len())
            .ok_or(BinaryError::Truncated("a fatbin's entries"))?;
        let mut at = start + header;
        while at < end {
            let kind = u16::from_le_bytes(le(data, at, "a fatbin entry")?);
            let entry_header = u32::from_le_bytes(le(data, at + 4, "a fatbin entry")?);
            let payload = u64::from_le_bytes(le(data, at + 8, "a fatbin entry")?);
            let sm = u32::from_le_bytes(le(data, at + 28, "a fatbin entry")?);
            let kind = match kind {
                1 => ImageKind::Ptx,
                2 => ImageKind::Sass,
                other => {
                    return Err(BinaryError::Malformed(format!(
                        "a fatbin entry of kind {other} (1 is PTX, 2 an ELF)"
                    )));
                }
            };
            images.push(Image { kind, sm });
            let next = u64::from(entry_header)
                .checked_add(payload)
                .and_then(|step| usize::try_from(step).ok())
                .and_then(|step| at.checked_add(step))
                .filter(|&next| next > at && next <= end)
                .ok_or(BinaryError::Truncated("a fatbin entry's payload"))?;
            at = next;
        }
        // The next fatbin starts 8-byte aligned after this one.
        start = end.next_multiple_of(8);
    }
    if images.is_empty() {
        return Err(BinaryError::Malformed(
            "a fatbin with no entries".to_owned(),
        ));
    }
    Ok(images)
}

/// A PTX file's `.target sm_XY[a]`.
fn ptx(data: &[u8]) -> Result<Vec<Image>, BinaryError> {
    let text = String::from_utf8_lossy(data);
    let target = text
        .lines()
        .map(str::trim)
        .find_map(|line| line.strip_prefix(".target"))
        .ok_or_else(|| {
            BinaryError::Malformed("neither a fatbin, a cubin nor PTX with `.target`".to_owned())
        })?;
    let arch = target
        .split([',', ' ', '\t'])
        .find(|word| !word.is_empty())
        .unwrap_or_default();
    let sm = arch
        .strip_prefix("sm_")
        .map(|digits| digits.trim_end_matches(['a', 'f']))
        .and_then(|digits| digits.parse().ok())
        .ok_or_else(|| BinaryError::Malformed(format!("PTX `.target {arch}`")))?;
    Ok(vec![Image {
        kind: ImageKind::Ptx,
        sm,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: u16, sm: u32, payload: &[u8]) -> Vec<u8> {
        let mut e = Vec::new();
        e.extend(kind.to_le_bytes());
        e.extend(0x0101u16.to_le_bytes());
        e.extend(64u32.to_le_bytes());
        e.extend((payload.len() as u64).to_le_bytes());
        e.extend([0u8; 12]);
        e.extend(sm.to_le_bytes());
        e.resize(64, 0);
        e.extend(payload);
        e
    }

    fn fatbin_of(entries: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = entries.concat();
        let mut f = Vec::new();
        f.extend(FATBIN_MAGIC.to_le_bytes());
        f.extend(1u16.to_le_bytes());
        f.extend(16u16.to_le_bytes());
        f.extend((body.len() as u64).to_le_bytes());
        f.extend(body);
        f
    }

    #[test]
    fn a_fatbin_s_entries_are_its_images_and_say_where_they_run() {
        let data = fatbin_of(&[entry(2, 80, b"elf"), entry(1, 80, b"ptx")]);
        let images = images_of(&data).unwrap();
        let labels: Vec<String> = images.iter().map(|i| i.label()).collect();
        assert_eq!(labels, ["sm_80", "compute_80"]);
        // SASS sm_80: the 8.x parts; PTX compute_80: every later arch.
        assert!(images[0].runs_on(8, 6) && !images[0].runs_on(9, 0));
        assert!(images[1].runs_on(12, 0) && !images[1].runs_on(7, 5));
        let hopper = Image {
            kind: ImageKind::Ptx,
            sm: 90,
        };
        assert_eq!(hopper.label(), "compute_90a");
        assert!(hopper.runs_on(9, 0) && !hopper.runs_on(10, 0));
    }

    #[test]
    fn ptx_reads_its_target_and_garbage_is_refused() {
        let ptx = b"//\n.version 8.7\n.target sm_120a\n.address_size 64\n";
        assert_eq!(
            images_of(ptx).unwrap(),
            [Image {
                kind: ImageKind::Ptx,
                sm: 120
            }]
        );
        assert!(images_of(b"hello").is_err());
        let mut cut = fatbin_of(&[entry(2, 80, b"elf")]);
        cut.truncate(40);
        assert!(matches!(images_of(&cut), Err(BinaryError::Truncated(_))));
        let odd = fatbin_of(&[entry(7, 80, b"x")]);
        assert!(matches!(images_of(&odd), Err(BinaryError::Malformed(_))));
    }
}
