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

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cancel::Cancel;
use crate::device::{DeviceTable, LookupError};
use crate::input::json_text;

pub use super::config_names::{NameParts, NameSegments, device_name_of, parse_name};

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

/// A file, or one entry of a file, that matched but could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileProblem {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: String,
    /// The entry (batch size) when only that entry was left out, not the whole file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
}

impl FileProblem {
    /// The file's name (the path's last part), as lines and findings name it.
    pub fn file_name(&self) -> String {
        self.path.file_name().map_or_else(
            || self.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    }
}

/// Why the files could not be listed at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigFilesError {
    /// The folder of the pattern cannot be read.
    #[error("cannot read the folder `{folder}`: {reason}")]
    Folder {
        /// The folder.
        folder: String,
        /// The OS error.
        reason: String,
    },
    /// Nothing matches.
    #[error("`{0}` matches no file")]
    NoMatch(String),
    /// The run was interrupted before the walk found any file.
    #[error("interrupted while reading the config folder `{0}`: nothing was judged")]
    Interrupted(String),
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

/// Does `name` match a glob of `*` (any run) and `?` (one character)?
fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni, mut star, mut mark) = (0usize, 0usize, None::<usize>, 0usize);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

fn has_wildcard(part: &str) -> bool {
    part.contains(['*', '?'])
}

/// What a walk of a config folder found: the files that match, and the entries it refused (a
/// symbolic link is never followed: a pull request's link can point at a secret or at a loop).
#[derive(Debug, Default)]
pub struct Walked {
    /// Matching regular files, in path order.
    pub files: Vec<PathBuf>,
    /// Links (to files or folders) that matched or lay on the way, each with why it was refused.
    pub refused: Vec<FileProblem>,
    /// The run was interrupted mid-walk: the files are those found until then.
    pub interrupted: bool,
}

/// What a refused link says: never where it points (that may be a secret's path).
const LINK_REFUSED: &str = "a symbolic link: config folders are read without following links (a link can point outside the folder, at a secret, or back at itself); put the file itself in the folder";

/// The files a pattern names, in path order: a path whose parts may hold `*` and `?`, with `**`
/// for any depth of folders (`configs/**/*.json`, `configs/triton_*/*.json`), or a folder (every
/// `.json` file below it, at any depth). Returns the folder reports name files relative to. Below
/// that folder no symbolic link is followed, no folder is walked twice, and the walk stops as
/// soon as `cancel` is raised.
pub fn matching(pattern: &Path, cancel: &Cancel) -> Result<(PathBuf, Walked), ConfigFilesError> {
    let pattern = if pattern.is_dir() {
        pattern.join("**").join("*.json")
    } else {
        pattern.to_path_buf()
    };
    let parts: Vec<String> = pattern
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let fixed = parts.iter().take_while(|p| !has_wildcard(p)).count();
    // The last part is the file name: a pattern without wildcards names one file.
    let fixed = fixed.min(parts.len().saturating_sub(1));
    let root: PathBuf = parts[..fixed].iter().collect();
    let root = if root.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        root
    };
    if std::fs::symlink_metadata(&root).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(ConfigFilesError::Folder {
            folder: root.display().to_string(),
            reason: "it is a symbolic link, and a config folder is read without following links (a link can point anywhere); name the folder itself".to_owned(),
        });
    }
    std::fs::read_dir(&root).map_err(|e| ConfigFilesError::Folder {
        folder: root.display().to_string(),
        reason: e.to_string(),
    })?;
    let mut walked = Walked::default();
    let mut visited = std::collections::HashSet::new();
    walk(&root, &parts[fixed..], &mut walked, &mut visited, cancel);
    walked.interrupted = cancel.is_cancelled();
    walked.files.sort();
    walked.files.dedup();
    walked.refused.sort_by(|a, b| a.path.cmp(&b.path));
    walked.refused.dedup();
    if walked.interrupted && walked.files.is_empty() {
        return Err(ConfigFilesError::Interrupted(root.display().to_string()));
    }
    if walked.files.is_empty() && walked.refused.is_empty() {
        return Err(ConfigFilesError::NoMatch(pattern.display().to_string()));
    }
    Ok((root, walked))
}

/// A folder's identity (device and inode): the walk enters each once.
fn identity(folder: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(folder).ok().map(|m| (m.dev(), m.ino()))
}

/// Collect the files under `folder` that match the remaining pattern parts; refuse links.
fn walk(
    folder: &Path,
    rest: &[String],
    walked: &mut Walked,
    visited: &mut std::collections::HashSet<((u64, u64), usize)>,
    cancel: &Cancel,
) {
    let Some((first, rest_after)) = rest.split_first() else {
        return;
    };
    if cancel.is_cancelled() {
        return;
    }
    // A folder is walked once per remaining pattern (a bind mount or a hard-linked folder
    // cannot make the walk go round).
    if let Some(id) = identity(folder)
        && !visited.insert((id, rest.len()))
    {
        return;
    }
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    // The entry's own type: a link is a link, never what it points at.
    let kind = |entry: &std::fs::DirEntry| entry.file_type().ok();
    let refused = |path: PathBuf| FileProblem {
        path,
        problem: LINK_REFUSED.to_owned(),
        entry: None,
    };
    if first == "**" {
        // Zero folders, then each sub-folder with `**` still in front.
        walk(folder, rest_after, walked, visited, cancel);
        for entry in &entries {
            match kind(entry) {
                Some(t) if t.is_symlink() => {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    let last = rest.last().map_or("", String::as_str);
                    // A link that would be walked into, or that names a file the pattern
                    // wants: say it was refused.
                    if std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir())
                        || glob_match(last, &name)
                    {
                        walked.refused.push(refused(entry.path()));
                    }
                }
                Some(t) if t.is_dir() => walk(&entry.path(), rest, walked, visited, cancel),
                _ => {}
            }
        }
        return;
    }
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !glob_match(first, &name) {
            continue;
        }
        let path = entry.path();
        match kind(&entry) {
            Some(t) if t.is_symlink() => walked.refused.push(refused(path)),
            Some(t) if rest_after.is_empty() && t.is_file() => walked.files.push(path),
            Some(t) if rest_after.is_empty() && !t.is_dir() => walked.refused.push(FileProblem {
                path,
                problem: "is not a regular file (a FIFO, a socket or a device): it is not read"
                    .to_owned(),
                entry: None,
            }),
            Some(t) if !rest_after.is_empty() && t.is_dir() => {
                walk(&path, rest_after, walked, visited, cancel);
            }
            _ => {}
        }
    }
}

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
    let problem = |problem: String| FileProblem {
        path: path.to_path_buf(),
        problem,
        entry: None,
    };
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
    let json = json_text::python_loads(&text).map_err(|why| {
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
    let repeated_keys = json_text::top_level_members(&text)
        .map(|m| json_text::repeated_keys(&m))
        .unwrap_or_default();
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
    let relative = path.strip_prefix(root).unwrap_or(path);
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
            problems.push(FileProblem {
                path: path.clone(),
                problem: "its name holds a control character (a newline, an escape, a bidirectional override), which no engine's config file name has; rename it".to_owned(),
                entry: None,
            });
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
        problems.push(FileProblem {
            path: root.clone(),
            problem: "the run was interrupted while this folder was read: files after those listed were not read".to_owned(),
            entry: None,
        });
        if files.is_empty() {
            return Err(ConfigFilesError::Interrupted(root.display().to_string()));
        }
    }
    Ok((files, problems))
}

#[cfg(test)]
mod tests {
    use super::*;

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
