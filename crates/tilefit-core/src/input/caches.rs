//! The Triton caches a replay reads: what the user named (a cache folder, an Inductor cache whose
//! `triton/` folders are caches, a tritonparse trace unpacked into a cache-shaped folder), or when
//! nothing is named `TRITON_CACHE_DIR`, `~/.triton/cache` and Inductor's cache. Indexed once; a
//! missing or kernel-less cache is an error that says where tilefit looked.

use std::path::{Path, PathBuf};

use super::cache_index::{self, CacheIndex, Skipped};
use super::sources;

/// Why there is nothing to replay.
#[derive(Debug, thiserror::Error)]
pub enum CachesError {
    /// A trace could not be read.
    #[error("reading the trace `{path}`")]
    ReadTrace {
        /// The trace.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A trace is not tritonparse's plain NDJSON.
    #[error(transparent)]
    Trace(#[from] sources::TraceError),
    /// A named path is neither a folder nor a trace.
    #[error("the Triton cache `{0}` is not a directory")]
    NotADirectory(String),
    /// Nothing named, and no default cache exists.
    #[error(
        "no Triton cache found (`TRITON_CACHE_DIR` is unset or empty, and neither `~/.triton/cache` nor an Inductor cache with a `triton/` folder exists)"
    )]
    NoneFound,
    /// A cache folder could not be scanned.
    #[error(transparent)]
    Scan(#[from] cache_index::ScanError),
    /// The caches hold no kernel tilefit can replay.
    #[error("no replayable kernels in {0}")]
    NoKernels(String),
}

impl crate::hint::Hint for CachesError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            CachesError::ReadTrace { .. } | CachesError::Scan(_) => "check the path and its permissions",
            CachesError::Trace(_) => "a tritonparse trace is the plain NDJSON `tritonparse.structured_logging` writes: trace with TRITON_TRACE_COMPRESSION=none, or decompress it first",
            CachesError::NotADirectory(_) => "pass a Triton cache directory, an Inductor cache (its `triton/` folders are read), or a tritonparse trace (`.ndjson`)",
            CachesError::NoneFound => "pass the cache directory: `tilefit replay path/to/triton-cache`",
            CachesError::NoKernels(_) => "a Triton cache holds one folder per kernel with NAME.json and NAME.ttir; run the workload with TRITON_CACHE_DIR set to a fresh folder",
        }.to_owned())
    }
}

/// The caches to read when none is named: `TRITON_CACHE_DIR`, `~/.triton/cache`, and the
/// `triton/` folders of `torch.compile`'s Inductor cache (`TORCHINDUCTOR_CACHE_DIR`, or
/// `/tmp/torchinductor_<user>`).
pub fn default_caches() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::var_os("TRITON_CACHE_DIR").filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(dir));
    }
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join(".triton").join("cache"));
    }
    if let Some(inductor) = sources::inductor_cache_dir().filter(|d| d.join("triton").is_dir()) {
        dirs.extend(sources::triton_caches_in(&inductor));
    }
    let mut unique: Vec<PathBuf> = Vec::new();
    for dir in dirs.into_iter().filter(|d| d.is_dir()) {
        if !unique.contains(&dir) {
            unique.push(dir);
        }
    }
    unique
}

/// What the user named, as Triton caches: a trace is unpacked into a cache-shaped folder under
/// `cache_dir/traces` (keyed by the trace's path and contents), an Inductor cache stands for its
/// `triton/<device>` folders.
fn caches_of(
    args: &[PathBuf],
    cache_dir: &Path,
) -> Result<(Vec<PathBuf>, Vec<Skipped>), CachesError> {
    let mut caches = Vec::new();
    let mut skipped = Vec::new();
    for path in args {
        if sources::is_trace(path) {
            let bytes = std::fs::read(path).map_err(|source| CachesError::ReadTrace {
                path: path.display().to_string(),
                source,
            })?;
            let key =
                crate::digest::sha256(&[path.display().to_string().as_bytes(), &bytes].concat());
            let into = cache_dir.join("traces").join(&key[..16]);
            let _ = std::fs::remove_dir_all(&into);
            let unpacked = sources::unpack_trace(path, &into)?;
            skipped.extend(unpacked.skipped);
            if unpacked.kernels > 0 {
                caches.push(into);
            }
        } else if path.is_dir() {
            caches.extend(sources::triton_caches_in(path));
        } else {
            return Err(CachesError::NotADirectory(path.display().to_string()));
        }
    }
    Ok((caches, skipped))
}

/// The caches to read (`dirs`, else the defaults) and what they hold.
pub fn index(
    dirs: &[PathBuf],
    cache_dir: &Path,
) -> Result<(Vec<PathBuf>, CacheIndex), CachesError> {
    let (caches, trace_skipped) = if dirs.is_empty() {
        (default_caches(), Vec::new())
    } else {
        caches_of(dirs, cache_dir)?
    };
    if caches.is_empty() && trace_skipped.is_empty() {
        return Err(CachesError::NoneFound);
    }
    let mut index = cache_index::scan(&caches)?;
    index.skipped.extend(trace_skipped);
    if index.kernels.is_empty() {
        let skipped = index
            .skipped
            .iter()
            .take(3)
            .map(|s| format!("`{}`: {}", s.path.display(), s.reason))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(CachesError::NoKernels(format!(
            "{} ({} entries scanned, {} skipped{}{})",
            caches
                .iter()
                .map(|c| format!("`{}`", c.display()))
                .collect::<Vec<_>>()
                .join(", "),
            index.entries_scanned,
            index.skipped.len(),
            if skipped.is_empty() { "" } else { ": " },
            skipped
        )));
    }
    Ok((caches, index))
}
