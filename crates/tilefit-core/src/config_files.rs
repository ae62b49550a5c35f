//! Per-device kernel config files, in the shape vLLM and SGLang ship for their fused MoE kernel:
//! one JSON file per device and shape, named like
//! `E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json`, mapping a batch size to a config
//! (`{"BLOCK_SIZE_M": 64, ..., "num_warps": 4, "num_stages": 3}`). Each file is mapped to the
//! device its name says, the way the engines do it (the device name with spaces as underscores);
//! a name tilefit cannot resolve is reported, because an engine silently falls back to default
//! configs there. A file that is not valid JSON, or not in that shape, is reported and skipped;
//! the other files are still read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::device::{DeviceTable, LookupError};

/// One config file, read.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its file name.
    pub name: String,
    /// The `device_name=` part of the name, underscores read as spaces.
    pub device_name: Option<String>,
    /// The device that name resolves to (the table's canonical name), or why none.
    pub device: Result<String, String>,
    /// Key (a batch size, as written) -> config, in file order.
    pub entries: Vec<(String, BTreeMap<String, Value>)>,
}

/// A file that matched but could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileProblem {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: String,
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
}

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

/// The files a pattern names: a path whose last part may hold `*` and `?`, or a folder (all its
/// `.json` files), in name order.
pub fn matching(pattern: &Path) -> Result<Vec<PathBuf>, ConfigFilesError> {
    let (folder, glob) = if pattern.is_dir() {
        (pattern.to_path_buf(), "*.json".to_owned())
    } else {
        (
            pattern
                .parent()
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
            pattern
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        )
    };
    let entries = std::fs::read_dir(&folder).map_err(|e| ConfigFilesError::Folder {
        folder: folder.display().to_string(),
        reason: e.to_string(),
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_file())
        .filter(|e| glob_match(&glob, &e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(ConfigFilesError::NoMatch(pattern.display().to_string()));
    }
    Ok(files)
}

/// The device name a file name carries: `device_name=NVIDIA_H100_80GB_HBM3` ->
/// `NVIDIA H100 80GB HBM3` (vLLM writes `get_device_name().replace(" ", "_")`).
pub fn device_name_of(file_name: &str) -> Option<String> {
    let stem = file_name.strip_suffix(".json").unwrap_or(file_name);
    stem.split(',')
        .find_map(|part| part.strip_prefix("device_name="))
        .map(|name| name.replace('_', " ").trim().to_owned())
        .filter(|name| !name.is_empty())
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

/// Read one file: its entries, or what is wrong with it.
fn read_one(path: &Path, table: &DeviceTable) -> Result<ConfigFile, FileProblem> {
    let problem = |problem: String| FileProblem {
        path: path.to_path_buf(),
        problem,
    };
    let text =
        std::fs::read_to_string(path).map_err(|e| problem(format!("cannot be read: {e}")))?;
    let json: Value =
        serde_json::from_str(&text).map_err(|e| problem(format!("is not valid JSON: {e}")))?;
    let Value::Object(map) = json else {
        return Err(problem(
            "is not a JSON object of `\"batch size\": {config}` entries".to_owned(),
        ));
    };
    let mut entries = Vec::new();
    for (key, config) in map {
        let Value::Object(config) = config else {
            return Err(problem(format!(
                "maps `{key}` to `{config}`, not to a config object"
            )));
        };
        if let Some((name, value)) = config
            .iter()
            .find(|(_, v)| !(v.is_number() || v.is_boolean() || v.is_string()))
        {
            return Err(problem(format!(
                "`{key}`.`{name}` is `{value}`: config values are numbers, booleans or strings"
            )));
        }
        entries.push((key, config.into_iter().collect()));
    }
    if entries.is_empty() {
        return Err(problem("holds no configs".to_owned()));
    }
    // Batch sizes in numeric order (JSON objects come back sorted as text).
    entries.sort_by_key(|(key, _)| (key.parse::<u64>().unwrap_or(u64::MAX), key.clone()));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let device_name = device_name_of(&name);
    let device = match &device_name {
        None => Err("the file name has no `device_name=` part, so no device loads it".to_owned()),
        Some(device_name) => table
            .resolve(device_name)
            .map(|r| r.display_name().to_owned())
            .map_err(|e| unresolved(device_name, &e)),
    };
    Ok(ConfigFile {
        path: path.to_path_buf(),
        name,
        device_name,
        device,
        entries,
    })
}

/// Read every file the pattern matches: the usable ones, and the problems of the others.
pub fn read(
    pattern: &Path,
    table: &DeviceTable,
) -> Result<(Vec<ConfigFile>, Vec<FileProblem>), ConfigFilesError> {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    for path in matching(pattern)? {
        match read_one(&path, table) {
            Ok(file) => files.push(file),
            Err(problem) => problems.push(problem),
        }
    }
    Ok((files, problems))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
