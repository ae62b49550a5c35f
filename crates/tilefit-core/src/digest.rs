//! Digests for cache keys: SHA-256 of bytes, and of a kernel's source with the Python files
//! beside it (what it can import by relative name).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// A digest of the kernel's source: the file and every `.py` file beside it (what it can import
/// by relative name), so editing a helper module invalidates cached results too.
pub fn kernel_digest(kernel_file: &Path) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let main = std::fs::read(kernel_file)?;
    hasher.update(b"kernel\0");
    hasher.update(&main);
    if let Some(dir) = kernel_file.parent() {
        let mut siblings: Vec<PathBuf> = std::fs::read_dir(dir)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "py") && p != kernel_file)
            .collect();
        siblings.sort();
        for sibling in siblings {
            hasher.update(sibling.file_name().unwrap_or_default().as_encoded_bytes());
            hasher.update(b"\0");
            hasher.update(std::fs::read(&sibling)?);
        }
    }
    Ok(hex(&hasher.finalize()))
}

/// Hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// SHA-256 of a text, in hex.
pub fn sha256(text: &[u8]) -> String {
    hex(&Sha256::digest(text))
}
