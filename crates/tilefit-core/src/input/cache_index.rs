//! Indexing Triton cache directories, in Rust and without Python. A cache holds one folder per
//! compiled artifact; a kernel's folder has its metadata JSON (`NAME.json`: target, options,
//! `shared`, `triton_version`) and its IR (`NAME.ttir`, the target-independent Triton IR after
//! specialization). Folders that are not kernels (driver and launcher builds) are counted and
//! passed over; kernel folders that cannot be replayed (garbled JSON, no IR, unreadable) are
//! listed as skipped with the reason. Nothing from the cache is executed, and only the head (or
//! tail) of each IR file is read here, for the kernel's signature and source location.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::device::Backend;

/// How much of an IR file is read first: recent Triton prints the location table and the
/// function signature in the first few KiB.
const IR_FIRST_PEEK_BYTES: u64 = 8 * 1024;

/// How much of an IR file's head (and tail) is read when the first peek did not find both.
const IR_PEEK_BYTES: u64 = 64 * 1024;

/// Compile options replayed onto every target, whatever its backend.
pub const PORTABLE_OPTIONS: &[&str] = &[
    "num_warps",
    "num_stages",
    "num_ctas",
    "maxnreg",
    "enable_fp_fusion",
];

/// Options replayed only onto targets of the backend that produced the entry.
pub const BACKEND_OPTIONS: &[&str] = &[
    "waves_per_eu",
    "matrix_instr_nonkdim",
    "kpack",
    "launch_pdl",
    "launch_cooperative_grid",
];

/// One kernel argument as the IR declares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrArg {
    /// Parameter name (from the IR's value name or location).
    pub name: String,
    /// MLIR type: `!tt.ptr<bf16>`, `i32`, `f32`.
    #[serde(rename = "type")]
    pub ty: String,
    /// Marked `tt.divisibility = 16`.
    pub divisible_by_16: bool,
}

/// A compiled kernel found in a cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedKernel {
    /// The kernel's name.
    pub name: String,
    /// The cache folder holding it.
    pub entry: PathBuf,
    /// The IR file replay compiles.
    pub ir: PathBuf,
    /// Triton version that produced it, when recorded.
    pub triton_version: Option<String>,
    /// The backend it was compiled for.
    pub backend: Backend,
    /// The arch it was compiled for (`sm_90`, `gfx942`).
    pub arch: String,
    /// Warp size of that target.
    pub warp_size: u32,
    /// `metadata.shared` on that target.
    pub shared: Option<u64>,
    /// The options it was compiled with that replay passes on.
    pub options: BTreeMap<String, Value>,
    /// Triton's own cache key of the compile (`hash`), which groups identical kernels.
    pub hash: String,
    /// `file:line` of the kernel's definition, from the IR's locations.
    pub source: Option<String>,
    /// The IR's arguments.
    pub args: Vec<IrArg>,
}

/// A folder that looked like a kernel but cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// The file or folder.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

/// Everything found in the scanned caches.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CacheIndex {
    /// Distinct kernels (identical entries across caches grouped), in path order.
    pub kernels: Vec<CachedKernel>,
    /// How many entries each kernel stands for (same order as `kernels`).
    pub copies: Vec<usize>,
    /// Kernel entries that cannot be replayed.
    pub skipped: Vec<Skipped>,
    /// Folders that are not kernels (driver and launcher builds).
    pub other_entries: usize,
    /// Folders looked at.
    pub entries_scanned: usize,
}

/// Why a cache directory could not be scanned at all.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the Triton cache `{path}`")]
pub struct ScanError {
    /// The directory.
    pub path: String,
    /// The OS error.
    #[source]
    pub source: std::io::Error,
}

#[derive(Deserialize)]
struct RawTarget {
    backend: String,
    arch: Value,
    warp_size: u32,
}

/// Index the given cache directories.
pub fn scan(dirs: &[PathBuf]) -> Result<CacheIndex, ScanError> {
    let mut index = CacheIndex::default();
    let mut found: Vec<CachedKernel> = Vec::new();
    for dir in dirs {
        let entries = std::fs::read_dir(dir).map_err(|source| ScanError {
            path: dir.display().to_string(),
            source,
        })?;
        let mut folders: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        folders.sort();
        index.entries_scanned += folders.len();
        for (kernels, partial) in scan_in_parallel(&folders) {
            found.extend(kernels);
            index.skipped.extend(partial.skipped);
            index.other_entries += partial.other_entries;
        }
    }
    // Identical kernels (same Triton compile hash and version) from several caches are one.
    let mut seen: std::collections::HashMap<(String, Option<String>), usize> =
        std::collections::HashMap::new();
    for kernel in found {
        let key = (kernel.hash.clone(), kernel.triton_version.clone());
        if let Some(&i) = seen.get(&key) {
            index.copies[i] += 1;
        } else {
            seen.insert(key, index.kernels.len());
            index.kernels.push(kernel);
            index.copies.push(1);
        }
    }
    // A stable, readable order: by kernel name, then size on the original target.
    let mut order: Vec<usize> = (0..index.kernels.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&index.kernels[a], &index.kernels[b]);
        (&x.name, x.shared, &x.hash).cmp(&(&y.name, y.shared, &y.hash))
    });
    index.kernels = order.iter().map(|&i| index.kernels[i].clone()).collect();
    index.copies = order.iter().map(|&i| index.copies[i]).collect();
    Ok(index)
}

/// Scan folders on every core; results come back in folder order.
fn scan_in_parallel(folders: &[PathBuf]) -> Vec<(Vec<CachedKernel>, CacheIndex)> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(8);
    let chunk = folders.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = folders
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    let mut kernels = Vec::new();
                    let mut partial = CacheIndex::default();
                    for folder in part {
                        scan_entry(folder, &mut kernels, &mut partial);
                    }
                    (kernels, partial)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a scan thread does not panic"))
            .collect()
    })
}

pub(super) fn has_extension(name: &str, extension: &str) -> bool {
    Path::new(name)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case(extension))
}

fn scan_entry(folder: &Path, found: &mut Vec<CachedKernel>, index: &mut CacheIndex) {
    let Ok(files) = std::fs::read_dir(folder) else {
        index.skipped.push(Skipped {
            path: folder.to_path_buf(),
            reason: "the folder cannot be read".to_owned(),
        });
        return;
    };
    let names: Vec<String> = files
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let metadata: Vec<&String> = names
        .iter()
        .filter(|n| has_extension(n, "json") && !n.starts_with("__grp__"))
        .collect();
    let has_ir = names
        .iter()
        .any(|n| has_extension(n, "ttir") || has_extension(n, "ttgir"));
    if metadata.is_empty() {
        if has_ir {
            index.skipped.push(Skipped {
                path: folder.to_path_buf(),
                reason: "IR without its metadata JSON (a partial entry)".to_owned(),
            });
        } else {
            index.other_entries += 1;
        }
        return;
    }
    for file in metadata {
        match read_kernel(folder, file) {
            Ok(Some(kernel)) => found.push(kernel),
            Ok(None) => index.other_entries += 1,
            Err(reason) => index.skipped.push(Skipped {
                path: folder.join(file),
                reason,
            }),
        }
    }
}

/// `Ok(None)` for JSON that is not kernel metadata.
fn read_kernel(folder: &Path, file: &str) -> Result<Option<CachedKernel>, String> {
    let path = folder.join(file);
    let bytes = std::fs::read(&path).map_err(|e| format!("unreadable: {e}"))?;
    let json: Value = serde_json::from_slice(&bytes).map_err(|e| format!("garbled JSON: {e}"))?;
    let Some(object) = json.as_object() else {
        return Ok(None);
    };
    if !object.contains_key("target") && !object.contains_key("shared") {
        return Ok(None);
    }
    let name = object
        .get("name")
        .and_then(Value::as_str)
        .map_or_else(|| file.trim_end_matches(".json").to_owned(), str::to_owned);
    let triton_version = checked_identity(&name, object.get("triton_version"))?;
    let target: RawTarget = object
        .get("target")
        .cloned()
        .and_then(|t| serde_json::from_value(t).ok())
        .ok_or_else(|| "metadata without a readable `target`".to_owned())?;
    let (backend, arch) = match target.backend.as_str() {
        "cuda" => {
            let cc = target
                .arch
                .as_u64()
                .ok_or("a CUDA target whose arch is not a number")?;
            (Backend::Cuda, format!("sm_{cc}"))
        }
        "hip" => {
            let arch = target
                .arch
                .as_str()
                .ok_or("a HIP target whose arch is not a string")?;
            let arch = arch.split(':').next().unwrap_or(arch);
            if !(arch.starts_with("gfx")
                && arch.len() <= 12
                && arch[3..].bytes().all(|b| b.is_ascii_alphanumeric()))
            {
                return Err(format!(
                    "field `target.arch` is {:?}, not an AMD arch (gfxNNN)",
                    crate::escape::control(&truncate(arch, 40))
                ));
            }
            (Backend::Hip, arch.to_owned())
        }
        other => return Err(format!("an unknown backend `{other}`")),
    };
    let ir = folder.join(format!("{name}.ttir"));
    if !ir.is_file() {
        return Err(format!(
            "no `{name}.ttir`: nothing to recompile (a partial entry)"
        ));
    }
    let hash = object
        .get("hash")
        .and_then(Value::as_str)
        .ok_or("metadata without Triton's `hash`")?
        .to_owned();
    if hash.is_empty() || hash.len() > 128 || !hash.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(format!(
            "field `hash` is {:?}, not Triton's hex digest",
            crate::escape::control(&truncate(&hash, 80))
        ));
    }
    // Only files inside the entry's folder are read: a link that leads out is refused.
    if !stays_inside(folder, &ir) {
        return Err(format!(
            "`{name}.ttir` leads outside its cache folder (a link): the entry is not read"
        ));
    }
    let mut options = BTreeMap::new();
    for key in PORTABLE_OPTIONS.iter().chain(BACKEND_OPTIONS) {
        if let Some(value) = object.get(*key).filter(|v| !v.is_null()) {
            options.insert((*key).to_owned(), value.clone());
        }
    }
    let head = peek(&ir, &name).map_err(|e| format!("`{name}.ttir` is unreadable: {e}"))?;
    Ok(Some(CachedKernel {
        args: ir_args(&head, &name),
        source: source_location(&head),
        name,
        entry: folder.to_path_buf(),
        ir,
        triton_version,
        backend,
        arch,
        warp_size: target.warp_size,
        shared: object.get("shared").and_then(Value::as_u64),
        options,
        hash,
    }))
}

/// The name and the recorded Triton version, checked: the name picks the IR file and is printed,
/// so it must be a Python identifier, as every Triton kernel's is; the version names a toolchain
/// folder and a pip requirement, so it must be a release number. Otherwise the entry is skipped,
/// the value shown escaped.
fn checked_identity(name: &str, version: Option<&Value>) -> Result<Option<String>, String> {
    if !is_identifier(name) {
        return Err(format!(
            "field `name` is {:?}, not a kernel name (a Python identifier): the entry is not read",
            crate::escape::control(&truncate(name, 80))
        ));
    }
    match version {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(v)) if is_version(v) => Ok(Some(v.clone())),
        Some(other) => Err(format!(
            "field `triton_version` is {}, not a release number X.Y.Z",
            crate::escape::control(&truncate(&other.to_string(), 80))
        )),
    }
}

/// A Python identifier (ASCII, as Triton's kernel names are in practice).
pub(crate) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && name.len() <= 512
}

/// `3.6.0`, or a build of it (`3.6.0+git1a2b3c`, `3.6.0rc1`): digits and dots first, then only
/// letters, digits, `+`, `-` and `.`; never a path.
pub(crate) fn is_version(text: &str) -> bool {
    static VERSION: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^[0-9]{1,6}\.[0-9]{1,6}\.[0-9]{1,6}([+\-.]?[A-Za-z0-9]+){0,8}$")
            .expect("literal")
    });
    text.len() <= 64 && VERSION.is_match(text)
}

/// The first `max` characters of a value quoted in a message.
fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    text.chars().take(max).collect::<String>() + "..."
}

/// Whether `path`, links resolved, is inside `root`.
pub(crate) fn stays_inside(root: &Path, path: &Path) -> bool {
    match (root.canonicalize(), path.canonicalize()) {
        (Ok(root), Ok(path)) => path.starts_with(root),
        _ => false,
    }
}

/// Enough of an IR file to hold its location table and the kernel's signature: the first 8 KiB
/// when they are there (recent Triton), else the first and last 64 KiB (older versions print the
/// location table after the module).
fn peek(path: &Path, name: &str) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut head = Vec::new();
    (&mut file)
        .take(IR_FIRST_PEEK_BYTES)
        .read_to_end(&mut head)?;
    let text = String::from_utf8_lossy(&head);
    let marker = format!("@{name}(");
    let complete = text.contains("#loc = loc(")
        && text
            .find(&marker)
            .is_some_and(|i| text[i..].contains(") attributes") || text[i..].contains(") {"));
    if complete || head.len() < usize::try_from(IR_FIRST_PEEK_BYTES).unwrap_or(usize::MAX) {
        return Ok(text.into_owned());
    }
    let length = file.metadata()?.len();
    (&mut file)
        .take(IR_PEEK_BYTES - IR_FIRST_PEEK_BYTES)
        .read_to_end(&mut head)?;
    if length > 2 * IR_PEEK_BYTES {
        file.seek(SeekFrom::End(-i64::try_from(IR_PEEK_BYTES).unwrap_or(0)))?;
        file.read_to_end(&mut head)?;
    } else if length > IR_PEEK_BYTES {
        file.read_to_end(&mut head)?;
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

static FUNC_LOC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(?m)^#loc\s*=\s*loc\("([^"]+)":(\d+):\d+\)"#).expect("literal"));
static ARG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"%(\w+)\s*:\s*([^{,)]+?)\s*(\{[^}]*\})?\s*loc\((?:"([^"]+)")?"#).expect("literal")
});

/// `mla_decode.py:15`: the kernel definition's file (base name) and line.
fn source_location(ir: &str) -> Option<String> {
    let captures = FUNC_LOC.captures(ir)?;
    let file = Path::new(&captures[1])
        .file_name()?
        .to_string_lossy()
        .into_owned();
    Some(crate::escape::control(&format!("{file}:{}", &captures[2])).into_owned())
}

/// The arguments of `tt.func public @NAME(...)`.
fn ir_args(ir: &str, name: &str) -> Vec<IrArg> {
    let marker = format!("@{name}(");
    let Some(start) = ir.find(&marker).map(|i| i + marker.len()) else {
        return Vec::new();
    };
    let rest = &ir[start..];
    let end = rest
        .find(") attributes")
        .or_else(|| rest.find(") {"))
        .unwrap_or(rest.len());
    ARG.captures_iter(&rest[..end])
        .map(|c| IrArg {
            name: c
                .get(4)
                .map_or_else(|| c[1].to_owned(), |m| m.as_str().to_owned()),
            ty: c[2].trim().to_owned(),
            divisible_by_16: c
                .get(3)
                .is_some_and(|a| a.as_str().contains("tt.divisibility = 16")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FUNC: &str = r#"#loc = loc("/src/mla_decode.py":15:0)
module {
  tt.func public @k(%Q: !tt.ptr<bf16> {tt.divisibility = 16 : i32} loc("Q"(#loc)), %s: f32 loc("s"(#loc)), %arg2: i32 loc("stride"(#loc))) attributes {noinline = false} {
"#;

    #[test]
    fn names_and_versions_from_a_cache_are_checked() {
        assert!(is_identifier("_fwd_kernel"));
        for bad in [
            "",
            "../../outside/x",
            "k\n::warning::x",
            "1k",
            "k.ttir",
            "k/x",
        ] {
            assert!(!is_identifier(bad), "{bad}");
        }
        for good in ["3.6.0", "3.6.0+git1a2b3c", "3.7.0rc1", "3.5.1.post1"] {
            assert!(is_version(good), "{good}");
        }
        for bad in ["../../../../x", "3.6", "3.6.0/../x", "3.6.0 ; rm", ""] {
            assert!(!is_version(bad), "{bad}");
        }
    }

    #[test]
    fn signature_and_location_from_ir() {
        assert_eq!(source_location(FUNC).as_deref(), Some("mla_decode.py:15"));
        let args = ir_args(FUNC, "k");
        assert_eq!(args.len(), 3);
        assert_eq!(
            args[0],
            IrArg {
                name: "Q".into(),
                ty: "!tt.ptr<bf16>".into(),
                divisible_by_16: true
            }
        );
        assert_eq!(
            args[1],
            IrArg {
                name: "s".into(),
                ty: "f32".into(),
                divisible_by_16: false
            }
        );
        assert_eq!(
            args[2].name, "stride",
            "the location's name wins over %argN"
        );
    }
}
