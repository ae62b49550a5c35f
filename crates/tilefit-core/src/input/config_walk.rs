//! The walk of a config folder's pattern (`configs/*.json`, `configs/triton_*/E=*.json`): the
//! files that match, found without following a symbolic link (a pull request's link can point at
//! a secret or at a loop), each folder walked once, and stopped where an interrupt finds it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cancel::Cancel;

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
    /// A problem of the whole file (or folder) at `path`, not of one entry.
    pub fn whole(path: impl Into<PathBuf>, problem: impl Into<String>) -> FileProblem {
        FileProblem {
            path: path.into(),
            problem: problem.into(),
            entry: None,
        }
    }

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

/// Does `name` match a glob of `*` (any run) and `?` (one character)?
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
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
    let refused = |path: PathBuf| FileProblem::whole(path, LINK_REFUSED);
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
            Some(t) if rest_after.is_empty() && !t.is_dir() => {
                walked.refused.push(FileProblem::whole(
                    path,
                    "is not a regular file (a FIFO, a socket or a device): it is not read",
                ));
            }
            Some(t) if !rest_after.is_empty() && t.is_dir() => {
                walk(&path, rest_after, walked, visited, cancel);
            }
            _ => {}
        }
    }
}
