//! Per-device kernel config files, as vLLM and SGLang ship them for their fused MoE kernel: one
//! JSON file per device, shape and variant, named like
//! `E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8,block_shape=[128,128].json`,
//! mapping a batch size to a config (`{"BLOCK_SIZE_M": 64, ..., "num_warps": 4}`).
//!
//! What is read here, the way the engines write it:
//! - the name's parts: the device (underscores as spaces, as `get_device_name().replace(" ", "_")`
//!   writes it), the shape (`E=`, `N=`), and the variant parts (`dtype=`, `block_shape=[..]`,
//!   `per_channel_quant=True`, SGLang's `_down` suffix) that select a kernel variant;
//! - the contents: batch-size entries, and metadata such as `"triton_version": "3.5.0"`, which is
//!   not an entry;
//! - the folder: recursive globs (`configs/**/*.json`) and SGLang's `triton_3_4_0/` folders, whose
//!   name records the Triton the files were tuned with.
//!
//! A file that is not valid JSON, or an entry that is not a config, is one listed problem; the
//! other files and entries are still read. Nothing here compiles or judges.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cancel::Cancel;
use crate::device::{DeviceTable, LookupError};
use crate::input::json_text;

pub use super::config_names::{NameParts, NameSegments, device_name_of, parse_name};
pub use super::config_walk::{ConfigFilesError, FileProblem, Walked, matching};

/// One config file, read.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its name as reports show it: the path below the pattern's fixed folder
    /// (`triton_3_4_0/E=8,...json`), or the file name.
    pub name: String,
    /// The `device_name=` part of the name, underscores read as spaces.
    pub device_name: Option<String>,
    /// The device that name resolves to (the table's canonical name), or why none.
    pub device: Result<String, String>,
    /// The name is a known GPU of a backend tilefit does not compile for (an Intel XPU): the
    /// file maps to a device, but is not judged.
    pub unsupported: Option<String>,
    /// The variant parts of the name, in the order written (`dtype=fp8_w8a8`,
    /// `block_shape=[128,128]`, `down`); empty for the plain kernel.
    pub variant_parts: Vec<String>,
    /// The Triton version the file was tuned with, from its `triton_version` key or its
    /// `triton_X_Y_Z` folder.
    pub tuned_with: Option<String>,
    /// Keys that are metadata, not entries (`triton_version`), with their values.
    pub metadata: Vec<(String, Value)>,
    /// Key (a batch size, as written) -> config, in numeric order.
    pub entries: Vec<(String, BTreeMap<String, Value>)>,
    /// Top-level keys written more than once: the engine's `json.load` keeps the last copy, and
    /// so does this reader (and the patcher rewrites that copy).
    pub repeated_keys: Vec<String>,
}

impl ConfigFile {
    /// The variant as one label: `dtype=fp8_w8a8,block_shape=[128,128]`, or empty.
    pub fn variant(&self) -> String {
        self.variant_parts.join(",")
    }
}

/// The largest config file read: the engines' files are kilobytes; a larger one is refused
/// unread (a pull request's gigabyte "config" must not take the runner's memory).
pub const MAX_FILE_BYTES: u64 = 8 << 20;

/// The longest top-level key read: a batch size is a number; a longer key is left out (and never
/// carried into a report or a summary).
pub const MAX_KEY_BYTES: usize = 64;

/// Whether a key from a file is refused: longer than [`MAX_KEY_BYTES`] or holding a control
/// character (no report or summary may carry it).
fn refused_key(key: &str) -> bool {
    key.len() > MAX_KEY_BYTES || key.chars().any(crate::escape::is_unsafe)
}

/// The compile options an entry may set, with the largest value compiled: beyond it a value is
/// no config any engine tunes (Triton pipelines usefully at a handful of stages, a block has at
/// most 1,024 threads), and compiling it would only spend the runner's memory and time.
pub const OPTION_BOUNDS: [(&str, u64); 3] =
    [("num_stages", 16), ("num_warps", 64), ("num_ctas", 16)];

/// `triton_3_4_0` -> `3.4.0`: SGLang's folder per tuning Triton.
fn version_of_folder(folder: &str) -> Option<String> {
    let version = folder.strip_prefix("triton_")?;
    let parts: Vec<&str> = version.split('_').collect();
    (parts.len() >= 2
        && parts
            .iter()
            .all(|p| p.chars().all(|c| c.is_ascii_digit()) && !p.is_empty()))
    .then(|| parts.join("."))
}

/// Why a device name did not resolve, with the table's closest names.
fn unresolved(name: &str, error: &LookupError) -> String {
    match error {
        LookupError::Unknown { suggestions, .. } if !suggestions.is_empty() => format!(
            "`{name}` is not in tilefit's device table (closest: {}); an engine looking for this file on that device falls back to its default configs",
            suggestions.join(", ")
        ),
        _ => format!(
            "`{name}` is not in tilefit's device table; an engine looking for this file on that device falls back to its default configs"
        ),
    }
}

/// The JSON type of a value, in words (a message names the type, never the value: the file is
/// a pull request's, and its values are not ours to print).
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a JSON array",
        Value::Object(_) => "a JSON object",
    }
}

/// Why an entry cannot be compiled as it is, naming the key, the type and the rule (never the
/// value), or `None` when it can.
fn entry_problem(config: &serde_json::Map<String, Value>) -> Option<String> {
    for (name, value) in config {
        if refused_key(name) {
            return Some(format!(
                "one of its keys is longer than {MAX_KEY_BYTES} bytes or holds a control character, and config keys are parameter names"
            ));
        }
        if let Some(word) = json_text::non_finite(value) {
            return Some(format!(
                "`{name}` is {word}, which the engine's `json.load` reads but no kernel launches with; config values are finite numbers, booleans or strings"
            ));
        }
        if value.is_array() || value.is_object() {
            return Some(format!(
                "`{name}` is {}, and config values are numbers, booleans or strings",
                json_type(value)
            ));
        }
    }
    for (name, value) in config {
        // A number no kernel argument holds (Python's json.load reads 10**29 as an int; Triton
        // refuses it at launch).
        let whole = value.is_i64() || value.is_u64();
        if value.is_number() && !whole && value.as_f64().is_some_and(|v| v.abs() >= 9.2e18) {
            return Some(format!(
                "`{name}` is a number too large for a kernel argument (a 64-bit integer)"
            ));
        }
    }
    for (option, most) in OPTION_BOUNDS {
        let Some(value) = config.get(option) else {
            continue;
        };
        let Some(stages) = value.as_u64() else {
            return Some(format!(
                "`{option}` is {}, and it is a whole number from 0 to {most}",
                if value.is_number() {
                    "a negative or fractional number"
                } else {
                    json_type(value)
                }
            ));
        };
        if stages > most {
            return Some(format!(
                "`{option}` is a number above {most}, the most tilefit compiles (no engine tunes more; compiling it would only spend the runner's memory and time); set it from 1 to {most}"
            ));
        }
    }
    None
}

/// The device a file's name maps to (the table's canonical name) or why none, and whether it
/// is a GPU of a backend tilefit does not compile for.
fn device_of(parts: &NameParts, table: &DeviceTable) -> (Result<String, String>, Option<String>) {
    let mut unsupported = None;
    let device = match &parts.device_name {
        _ if parts.device_name_parts > 1 => Err(format!(
            "the file name has {} `device_name=` parts, and the engine names a device's file with one: no device loads it",
            parts.device_name_parts
        )),
        None if parts.device_name_parts == 1 => {
            Err("the file name's `device_name=` is empty, so no device loads it".to_owned())
        }
        None => Err("the file name has no `device_name=` part, so no device loads it".to_owned()),
        Some(device_name) => match table.resolve(device_name) {
            Ok(resolved) => Ok(resolved.display_name().to_owned()),
            Err(error @ LookupError::Unsupported { .. }) => {
                unsupported = Some(error.to_string());
                Err(error.to_string())
            }
            Err(error) => Err(unresolved(device_name, &error)),
        },
    };
    (device, unsupported)
}

/// Read one file: its entries and metadata, or what is wrong with it; entries that are not
/// configs are problems of their own, and the file's other entries are kept. The text is read
/// as the engine's loader reads it (Python's `json.load`: `NaN` and `Infinity` taken, the last of
/// repeated keys kept, a byte-order mark refused).
fn read_one(
    path: &Path,
    root: &Path,
    table: &DeviceTable,
    problems: &mut Vec<FileProblem>,
) -> Result<ConfigFile, FileProblem> {
    let problem = |problem: String| FileProblem::whole(path, problem);
    let size = std::fs::symlink_metadata(path)
        .map_err(|e| problem(format!("cannot be read: {e}")))?
        .len();
    if size > MAX_FILE_BYTES {
        return Err(problem(format!(
            "is {} bytes, over the {} bytes a config file is read up to (the engines' files are kilobytes); it was not read",
            crate::units::format_count(size),
            crate::units::format_count(MAX_FILE_BYTES)
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| problem(format!("cannot be read: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|_| {
        problem(
            "is not UTF-8 text, which the engine's `json.load` reads: no device loads it; save it as UTF-8"
                .to_owned(),
        )
    })?;
    let relative = path.strip_prefix(root).unwrap_or(path);
    from_text(path, relative, &text, table, problems)
}

/// A config file from its text: `path` is where it is (or would be), `relative` its path below
/// the pattern's fixed folder (its name in reports; a `triton_X_Y_Z` folder in it is the Triton
/// it was tuned with). The files `--emit-files` wrote are read back through here, as the
/// engine would read them.
pub fn from_text(
    path: &Path,
    relative: &Path,
    text: &str,
    table: &DeviceTable,
    problems: &mut Vec<FileProblem>,
) -> Result<ConfigFile, FileProblem> {
    let problem = |problem: String| FileProblem::whole(path, problem);
    let json = json_text::python_loads(text).map_err(|why| {
        problem(if text.starts_with('\u{feff}') {
            format!("{why}: the engine cannot load it either, so no device gets these configs; save it without the mark")
        } else {
            format!("{why}: tilefit cannot read it (the engine's `json.load` may still read it), so it is not judged; fix the file")
        })
    })?;
    let Value::Object(map) = json else {
        return Err(problem(
            "is not a JSON object of `\"batch size\": {config}` entries".to_owned(),
        ));
    };
    let repeated_keys = json_text::top_level_members(text)
        .map(|m| json_text::repeated_keys(&m))
        .unwrap_or_default();
    from_members(path, relative, map, repeated_keys, table, problems)
}

/// A config file made in memory (`--emit-files`' entries and candidates), named `relative` (its
/// name says its device as a read file's does): the same value a file of these entries would
/// read as, with each entry given the same checks, without writing or parsing any text.
pub fn from_entries(
    relative: &Path,
    entries: &[(String, BTreeMap<String, Value>)],
    table: &DeviceTable,
    problems: &mut Vec<FileProblem>,
) -> Result<ConfigFile, FileProblem> {
    let members = entries.iter().map(|(key, entry)| {
        let object = entry.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        (key.clone(), Value::Object(object))
    });
    from_members(relative, relative, members, Vec::new(), table, problems)
}

/// A config file of its top-level members: the entries checked (one left out is a problem of
/// its own), the rest kept as the file's metadata, its device and Triton read from its name.
fn from_members(
    path: &Path,
    relative: &Path,
    map: impl IntoIterator<Item = (String, Value)>,
    repeated_keys: Vec<String>,
    table: &DeviceTable,
    problems: &mut Vec<FileProblem>,
) -> Result<ConfigFile, FileProblem> {
    let problem = |problem: String| FileProblem::whole(path, problem);
    let mut entries = Vec::new();
    let mut metadata = Vec::new();
    for (key, config) in map {
        if refused_key(&key) {
            let shown: String = crate::escape::control(&key).chars().take(40).collect();
            problems.push(FileProblem {
                entry: Some(shown.clone()),
                ..problem(format!(
                    "entry `{shown}` is left out: its key holds a control character or is longer than {MAX_KEY_BYTES} bytes, and a batch size is a number"
                ))
            });
            continue;
        }
        let Value::Object(config) = config else {
            // `"triton_version": "3.5.0"` and the like describe the file; they are not entries.
            metadata.push((key, config));
            continue;
        };
        if let Some(why) = entry_problem(&config) {
            problems.push(FileProblem {
                entry: Some(key.clone()),
                ..problem(format!("entry `{key}` is left out: {why}"))
            });
            continue;
        }
        entries.push((key, config.into_iter().collect()));
    }
    if entries.is_empty() {
        return Err(problem("holds no configs".to_owned()));
    }
    // Batch sizes in numeric order (JSON objects come back sorted as text).
    entries.sort_by_key(|(key, _)| (key.parse::<u64>().unwrap_or(u64::MAX), key.clone()));
    let name = relative.display().to_string();
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let parts = parse_name(&file_name);
    let tuned_with = metadata
        .iter()
        .find(|(k, _)| k == "triton_version")
        .and_then(|(_, v)| v.as_str().map(str::to_owned))
        .or_else(|| {
            relative
                .parent()
                .into_iter()
                .flat_map(Path::components)
                .filter_map(|c| version_of_folder(&c.as_os_str().to_string_lossy()))
                .next_back()
        });
    let (device, unsupported) = device_of(&parts, table);
    Ok(ConfigFile {
        path: path.to_path_buf(),
        name,
        device_name: parts.device_name,
        device,
        unsupported,
        variant_parts: parts.variant,
        tuned_with,
        metadata,
        entries,
        repeated_keys,
    })
}

/// Read every file the pattern matches: the usable ones, and the problems of the others (and of
/// entries left out of usable ones).
///
/// Interrupted (`cancel` raised), it stops where it is: the files read so far, and a problem
/// saying the rest was not read.
pub fn read(
    pattern: &Path,
    table: &DeviceTable,
    cancel: &Cancel,
) -> Result<(Vec<ConfigFile>, Vec<FileProblem>), ConfigFilesError> {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    let (root, walked) = matching(pattern, cancel)?;
    problems.extend(walked.refused);
    let walked_problems = problems.len();
    let mut interrupted = walked.interrupted;
    for path in walked.files {
        // Once interrupted, no more files are read; the first is (a report of nothing is of
        // no use, and one file is read at once).
        if cancel.is_cancelled() && !(files.is_empty() && problems.len() == walked_problems) {
            interrupted = true;
            break;
        }
        // A name no engine writes, and no report may carry: one line, no escapes.
        let relative = path.strip_prefix(&root).unwrap_or(&path).to_string_lossy();
        if relative.chars().any(crate::escape::is_unsafe) {
            problems.push(FileProblem::whole(
                path.clone(),
                "its name holds a control character (a newline, an escape, a bidirectional override), which no engine's config file name has; rename it",
            ));
            continue;
        }
        match read_one(&path, &root, table, &mut problems) {
            Ok(file) => files.push(file),
            Err(problem) => problems.push(problem),
        }
    }
    // What a report carries is one line: a name from the folder (a link's, a FIFO's) escaped.
    for problem in &mut problems {
        let shown = problem.path.to_string_lossy();
        if shown.chars().any(crate::escape::is_unsafe) {
            problem.path = PathBuf::from(crate::escape::control(&shown).into_owned());
        }
    }
    if interrupted {
        problems.push(FileProblem::whole(
            root.clone(),
            "the run was interrupted while this folder was read: files after those listed were not read",
        ));
        if files.is_empty() {
            return Err(ConfigFilesError::Interrupted(root.display().to_string()));
        }
    }
    Ok((files, problems))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::config_walk::glob_match;

    #[test]
    fn links_are_refused_and_a_loop_of_them_ends_at_once() {
        let dir = std::env::temp_dir().join(format!("tilefit-links-{}", std::process::id()));
        let configs = dir.join("configs");
        std::fs::create_dir_all(configs.join("triton_3_5_1")).unwrap();
        std::fs::write(dir.join("secret.json"), r#"{"auth": "FAKE-TOKEN-1234"}"#).unwrap();
        std::fs::write(
            configs.join("E=8,N=1,device_name=NVIDIA_H100_80GB_HBM3.json"),
            "{}",
        )
        .unwrap();
        let link = |target: &str, name: &str| {
            std::os::unix::fs::symlink(target, configs.join(name)).unwrap();
        };
        link(
            "../secret.json",
            "E=8,N=2,device_name=NVIDIA_H100_80GB_HBM3.json",
        );
        link(".", "loop-a");
        link(".", "loop-b");
        std::os::unix::fs::symlink("..", configs.join("triton_3_5_1").join("up")).unwrap();
        let started = std::time::Instant::now();
        let (_, walked) = matching(&configs.join("**").join("*.json"), &Cancel::new()).unwrap();
        let took = started.elapsed();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(took < std::time::Duration::from_secs(1), "{took:?}");
        assert_eq!(walked.files.len(), 1, "{:?}", walked.files);
        let refused: Vec<String> = walked
            .refused
            .iter()
            .map(|p| p.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            refused,
            [
                "E=8,N=2,device_name=NVIDIA_H100_80GB_HBM3.json",
                "loop-a",
                "loop-b",
                "up"
            ]
        );
        for problem in &walked.refused {
            assert!(problem.problem.contains("symbolic link"), "{problem:?}");
            assert!(
                !problem.problem.contains("secret.json") && !problem.problem.contains("FAKE-TOKEN")
            );
        }
    }

    #[test]
    fn globs_and_device_names() {
        assert!(glob_match(
            "*.json",
            "E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json"
        ));
        assert!(glob_match("E=8,*", "E=8,N=1.json"));
        assert!(!glob_match("*.json", "notes.txt"));
        assert!(glob_match("a?c", "abc"));
        assert_eq!(
            device_name_of("E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json").as_deref(),
            Some("NVIDIA H100 80GB HBM3")
        );
        assert_eq!(
            device_name_of("E=16,N=1024,device_name=NVIDIA_GeForce_RTX_4090,dtype=fp8_w8a8.json")
                .as_deref(),
            Some("NVIDIA GeForce RTX 4090")
        );
        assert_eq!(device_name_of("E=8,N=14336.json"), None);
    }

    #[test]
    fn names_split_into_device_shape_and_variant() {
        let name = parse_name(
            "E=256,N=256,device_name=NVIDIA_H20-3e,dtype=fp8_w8a8,block_shape=[128, 128]_down.json",
        );
        assert_eq!(name.device_name.as_deref(), Some("NVIDIA H20-3e"));
        assert_eq!(
            name.shape,
            [("E".into(), "256".into()), ("N".into(), "256".into())]
        );
        assert_eq!(
            name.variant,
            ["dtype=fp8_w8a8", "block_shape=[128,128]", "down"]
        );
        let plain = parse_name("E=8,N=7168,device_name=NVIDIA_H200_down.json");
        assert_eq!(plain.device_name.as_deref(), Some("NVIDIA H200"));
        assert_eq!(plain.variant, ["down"]);
        assert_eq!(
            parse_name("E=64,N=896,device_name=Intel(R)_Arc(TM)_Pro_B60_Graphics.json")
                .device_name
                .as_deref(),
            Some("Intel(R) Arc(TM) Pro B60 Graphics")
        );
        assert_eq!(version_of_folder("triton_3_4_0").as_deref(), Some("3.4.0"));
        assert_eq!(version_of_folder("triton_utils"), None);
    }
}
