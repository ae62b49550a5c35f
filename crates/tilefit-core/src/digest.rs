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

/// HMAC-SHA-256 of `message` under `key` (RFC 2104), in hex: how a capture's records show they
/// are what its recorder wrote (the key never reaches the script's environment).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> String {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    let outer = Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize();
    hex(&outer)
}

/// A fresh random key, in hex, from the OS.
pub fn random_key() -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(hex(&bytes))
}

#[cfg(test)]
mod hmac_tests {
    #[test]
    fn hmac_matches_rfc_4231() {
        // RFC 4231, test case 2.
        assert_eq!(
            super::hmac_sha256(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
