//! Where compiled kernels already are, besides a plain Triton cache: `torch.compile`'s Inductor
//! cache (its `triton/<device>/` folders are Triton caches) and tritonparse's NDJSON traces (each
//! `compilation` event carries the kernel's metadata and its IR files). Traces are unpacked into a
//! cache-shaped folder, so the one scanner (`cache_index`) reads every source the same way. Nothing
//! here compiles, imports or executes anything from the inputs.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::cache_index::{Skipped, has_extension};

/// The Inductor cache folder `torch.compile` uses: `TORCHINDUCTOR_CACHE_DIR`, or
/// `<tmp>/torchinductor_<user>` (`torch._inductor.runtime.cache_dir_utils.default_cache_dir`).
pub fn inductor_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TORCHINDUCTOR_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let user = std::env::var_os("USER")
        .or_else(|| std::env::var_os("LOGNAME"))
        .filter(|u| !u.is_empty())?;
    let tmp = std::env::var_os("TMPDIR")
        .filter(|t| !t.is_empty())
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    let mut name = std::ffi::OsString::from("torchinductor_");
    name.push(user);
    Some(tmp.join(name))
}

/// The Triton caches a folder stands for: an Inductor cache (`<dir>/triton/<device>/`), an
/// Inductor `triton/` folder (`<dir>/<device>/`), or the folder itself (a plain Triton cache).
pub fn triton_caches_in(dir: &Path) -> Vec<PathBuf> {
    let device_folders = |triton: &Path| -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(triton) else {
            return Vec::new();
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| {
                e.path().is_dir()
                    && e.file_name()
                        .to_string_lossy()
                        .chars()
                        .all(|c| c.is_ascii_digit())
            })
            .map(|e| e.path())
            .collect();
        found.sort();
        found
    };
    let inside = device_folders(&dir.join("triton"));
    if !inside.is_empty() {
        return inside;
    }
    if dir.file_name().is_some_and(|n| n == "triton") {
        let devices = device_folders(dir);
        if !devices.is_empty() {
            return devices;
        }
    }
    vec![dir.to_path_buf()]
}

/// Is this path a tritonparse trace (`*.ndjson`)?
pub fn is_trace(path: &Path) -> bool {
    path.is_file()
        && path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().ends_with(".ndjson"))
}

/// Why a trace could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The trace or the folder to unpack it into cannot be read or written.
    #[error("cannot read or unpack the trace `{path}`")]
    Io {
        /// The path.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A trace written compressed (gzip or zstd frames).
    #[error("the trace `{path}` is compressed (gzip or zstd)")]
    Compressed {
        /// The path.
        path: String,
    },
}

/// What unpacking a trace found.
#[derive(Debug, Default)]
pub struct Unpacked {
    /// Compilation events unpacked into cache entries.
    pub kernels: usize,
    /// Lines that are not compilation events (launches, other events).
    pub other_events: usize,
    /// Compilation events that cannot be replayed, and why.
    pub skipped: Vec<Skipped>,
}

/// Unpack a tritonparse trace's compilation events into cache-shaped entries under `into`
/// (`<into>/<hash>/<name>.json` and its IR files), for the scanner. A line that is not JSON, or a
/// compilation without metadata or Triton IR, is one skipped entry; the rest are unpacked.
pub fn unpack_trace(trace: &Path, into: &Path) -> Result<Unpacked, TraceError> {
    let io = |source| TraceError::Io {
        path: trace.display().to_string(),
        source,
    };
    let mut head = [0u8; 4];
    let read = {
        use std::io::Read as _;
        std::fs::File::open(trace)
            .and_then(|mut f| f.read(&mut head))
            .map_err(io)?
    };
    if read >= 2 && (head[..2] == [0x1f, 0x8b] || (read == 4 && head == [0x28, 0xb5, 0x2f, 0xfd])) {
        return Err(TraceError::Compressed {
            path: trace.display().to_string(),
        });
    }
    let file = std::fs::File::open(trace).map_err(io)?;
    let mut unpacked = Unpacked::default();
    for (number, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(io)?;
        if line.trim().is_empty() {
            continue;
        }
        let at = |reason: String| Skipped {
            path: PathBuf::from(format!("{}:{}", trace.display(), number + 1)),
            reason,
        };
        let event: Value = match serde_json::from_str(&line) {
            Ok(event) => event,
            Err(e) => {
                unpacked
                    .skipped
                    .push(at(format!("the line is not JSON: {e}")));
                continue;
            }
        };
        if event.get("event_type").and_then(Value::as_str) != Some("compilation") {
            unpacked.other_events += 1;
            continue;
        }
        let payload = event.get("payload").unwrap_or(&Value::Null);
        let Some(metadata) = payload.get("metadata").filter(|m| m.is_object()) else {
            unpacked
                .skipped
                .push(at("a compilation event without metadata".to_owned()));
            continue;
        };
        let files = payload
            .get("file_content")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let ir: Vec<(&String, &str)> = files
            .iter()
            .filter(|(name, _)| has_extension(name, "ttir") || has_extension(name, "ttgir"))
            .filter_map(|(name, text)| text.as_str().map(|t| (name, t)))
            .collect();
        if ir.is_empty() {
            unpacked.skipped.push(at(
                "a compilation event without Triton IR (the trace was made with file contents turned off)"
                    .to_owned(),
            ));
            continue;
        }
        let name = metadata
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("kernel");
        let hash = metadata
            .get("hash")
            .and_then(Value::as_str)
            .map_or_else(|| format!("line{}", number + 1), str::to_owned);
        // File names come from the trace: keep only a plain name, never a path.
        let safe = |n: &str| {
            Path::new(n)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .filter(|f| !f.is_empty() && f != "." && f != "..")
        };
        let (Some(folder_name), Some(stem)) = (safe(&hash), safe(name)) else {
            unpacked
                .skipped
                .push(at("the event's hash or name is not a plain name".to_owned()));
            continue;
        };
        let folder = into.join(folder_name);
        std::fs::create_dir_all(&folder).map_err(io)?;
        let metadata_text = serde_json::to_string(metadata).unwrap_or_default();
        std::fs::write(folder.join(format!("{stem}.json")), metadata_text).map_err(io)?;
        for (file_name, text) in ir {
            if let Some(file_name) = safe(file_name) {
                std::fs::write(folder.join(file_name), text).map_err(io)?;
            }
        }
        unpacked.kernels += 1;
    }
    Ok(unpacked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inductor_cache_stands_for_its_device_folders() {
        let root = std::env::temp_dir().join(format!("tilefit-inductor-{}", std::process::id()));
        std::fs::create_dir_all(root.join("triton/0/abc")).unwrap();
        std::fs::create_dir_all(root.join("triton/1")).unwrap();
        std::fs::create_dir_all(root.join("fxgraph")).unwrap();
        assert_eq!(
            triton_caches_in(&root),
            [root.join("triton/0"), root.join("triton/1")]
        );
        assert_eq!(
            triton_caches_in(&root.join("triton")),
            [root.join("triton/0"), root.join("triton/1")]
        );
        assert_eq!(
            triton_caches_in(&root.join("triton/0")),
            [root.join("triton/0")]
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_trace_unpacks_into_cache_entries_and_lists_what_it_cannot_use() {
        let dir = std::env::temp_dir().join(format!("tilefit-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let trace = dir.join("dedicated_log_triton_trace.ndjson");
        let lines = [
            serde_json::json!({"event_type": "compilation", "payload": {
                "metadata": {"name": "add_kernel", "hash": "abc123", "shared": 0},
                "file_content": {"add_kernel.ttir": "module {}", "add_kernel.ptx": "//"},
                "file_path": {}}}),
            serde_json::json!({"event_type": "launch", "payload": {}}),
            serde_json::json!({"event_type": "compilation", "payload": {
                "metadata": {"name": "k", "hash": "def"}, "file_content": {}}}),
            serde_json::json!({"event_type": "compilation", "payload": {
                "metadata": {"name": "../evil", "hash": "../x"},
                "file_content": {"a.ttir": "module {}"}}}),
        ];
        let mut text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
        text.push_str("not json\n");
        std::fs::write(&trace, text).unwrap();
        let into = dir.join("unpacked");
        let unpacked = unpack_trace(&trace, &into).unwrap();
        assert_eq!(unpacked.kernels, 2);
        assert_eq!(unpacked.other_events, 1);
        assert_eq!(unpacked.skipped.len(), 2, "{:?}", unpacked.skipped);
        assert!(unpacked.skipped[0].reason.contains("without Triton IR"));
        assert!(unpacked.skipped[1].reason.contains("not JSON"));
        assert!(into.join("abc123/add_kernel.json").is_file());
        assert!(into.join("abc123/add_kernel.ttir").is_file());
        assert!(!into.join("abc123/add_kernel.ptx").exists());
        // Names from the trace never leave the folder.
        assert!(into.join("x/evil.json").is_file());
        assert!(!dir.join("evil.json").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
