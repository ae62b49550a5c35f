//! The on-disk result cache: one JSON file per job key under a versioned folder
//! (`results-v1/ab/abcdef....json`). Writes go to a temporary file renamed into place, so a reader
//! never sees half an entry and two tilefit processes can share the folder. Every entry carries a
//! checksum of its payload; an entry that fails it (truncated, garbage) is deleted and reported as
//! a miss, so the job is recomputed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::digest::sha256;

/// Bumped when the entry format or the meaning of a payload changes.
pub const CACHE_FORMAT: &str = "results-v1";

/// What a lookup found.
#[derive(Debug, PartialEq)]
pub enum Lookup<T> {
    /// A valid entry.
    Hit(T),
    /// No entry.
    Miss,
    /// An entry that failed its checksum or did not parse; it has been removed.
    Corrupt,
}

/// The result cache.
#[derive(Debug, Clone)]
pub struct ResultCache {
    root: PathBuf,
}

#[derive(serde::Deserialize, Serialize)]
struct Entry {
    key: String,
    sha256: String,
    payload: String,
}

impl ResultCache {
    /// The cache under tilefit's cache directory.
    pub fn new(cache_dir: &Path) -> ResultCache {
        ResultCache {
            root: cache_dir.join(CACHE_FORMAT),
        }
    }

    fn path(&self, key: &str) -> PathBuf {
        self.root
            .join(&key[..2.min(key.len())])
            .join(format!("{key}.json"))
    }

    /// Read an entry.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Lookup<T> {
        let path = self.path(key);
        let Ok(bytes) = std::fs::read(&path) else {
            return Lookup::Miss;
        };
        let valid = serde_json::from_slice::<Entry>(&bytes)
            .ok()
            .filter(|e| e.key == key && sha256(e.payload.as_bytes()) == e.sha256)
            .and_then(|e| serde_json::from_str::<T>(&e.payload).ok());
        if let Some(value) = valid {
            Lookup::Hit(value)
        } else {
            let _ = std::fs::remove_file(&path);
            Lookup::Corrupt
        }
    }

    /// Write an entry atomically.
    pub fn put<T: Serialize>(&self, key: &str, value: &T) -> std::io::Result<()> {
        static SEQUENCE: AtomicU64 = AtomicU64::new(0);
        let path = self.path(key);
        let dir = path.parent().expect("entries live in a subfolder");
        std::fs::create_dir_all(dir)?;
        let payload = serde_json::to_string(value)?;
        let entry = Entry {
            key: key.to_owned(),
            sha256: sha256(payload.as_bytes()),
            payload,
        };
        let temporary = dir.join(format!(
            ".{key}.{}.{}.tmp",
            std::process::id(),
            SEQUENCE.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&temporary, serde_json::to_vec(&entry)?)?;
        std::fs::rename(&temporary, &path).inspect_err(|_| {
            let _ = std::fs::remove_file(&temporary);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "tilefit-cache-test-{}-{}",
            std::process::id(),
            line!()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn round_trip_miss_and_corruption() {
        let dir = scratch();
        let cache = ResultCache::new(&dir);
        let key = sha256(b"job");
        assert_eq!(cache.get::<u32>(&key), Lookup::Miss);
        cache.put(&key, &42_u32).unwrap();
        assert_eq!(cache.get::<u32>(&key), Lookup::Hit(42));

        // Truncate the entry: detected, removed, and a miss afterwards.
        let path = cache.path(&key);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        assert_eq!(cache.get::<u32>(&key), Lookup::Corrupt);
        assert!(!path.exists());
        assert_eq!(cache.get::<u32>(&key), Lookup::Miss);

        // A well-formed entry whose payload was edited fails its checksum.
        cache.put(&key, &42_u32).unwrap();
        let edited = std::fs::read_to_string(&path)
            .unwrap()
            .replace("\"42\"", "\"43\"");
        std::fs::write(&path, edited).unwrap();
        assert_eq!(cache.get::<u32>(&key), Lookup::Corrupt);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
