//! Writing every output file tilefit makes (`--json`, `--html`, `--emit-configs`, `--junit`,
//! `--dump-jobs`, the files below `--emit-spec` and `--emit-files`), without following a link and
//! without blocking: the path may lie in a checkout of a pull request, where `out -> ~/.ssh` or
//! `report.json -> ../victim.txt` would turn a write into an overwrite of something else, and a
//! FIFO at the name would hang the run. A link on the way is an error naming it, except the
//! user's own surroundings (a folder the current directory lies in, a link right below `/`); a
//! name that is not a regular file (a FIFO, a device, a folder) is refused without opening it;
//! each folder the write creates is made one at a time and checked; the file is written beside
//! its name under a temporary name with `O_NOFOLLOW` and renamed over it (so a hard link already
//! there keeps its own bytes). Below the stages, like `escape`: the binary writes what `render`
//! drew through it.

use std::io::Write as _;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a file was not written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The name would leave the folder.
    #[error(
        "refusing to write `{0}`: a written file's name must be a relative path below the output folder"
    )]
    Outside(String),
    /// A link is in the way.
    #[error(
        "refusing to write through `{shown}`: it is a symbolic link, and tilefit never writes an output through a link (it could point anywhere)",
        shown = shown(.0)
    )]
    Link(PathBuf),
    /// Something else in the way is not a folder.
    #[error("cannot write below `{shown}`: it is not a folder", shown = shown(.0))]
    NotFolder(PathBuf),
    /// The name is taken by something that is not a regular file.
    #[error("refusing to write `{shown}`: it is {1}, not a regular file", shown = shown(.0))]
    NotFile(PathBuf, &'static str),
    /// The OS said no.
    #[error("cannot write `{shown}`", shown = shown(.0))]
    Io(PathBuf, #[source] std::io::Error),
}

/// A path as an error shows it: one line, control characters escaped.
fn shown(path: &Path) -> String {
    crate::escape::control(&path.display().to_string()).into_owned()
}

impl crate::hint::Hint for WriteError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            WriteError::Outside(_) => return None,
            WriteError::Link(_) => {
                "name the place the link points to instead, or remove the link".to_owned()
            }
            WriteError::NotFolder(_) => {
                "name a folder, or move the file in the way".to_owned()
            }
            WriteError::NotFile(..) => {
                "name a regular file (tilefit replaces it whole; a FIFO, a device or a folder is never written): to read the output on stdout, pass `-` where the flag takes it"
                    .to_owned()
            }
            WriteError::Io(_, e) if errno(e) == Some(rustix::io::Errno::NAMETOOLONG) => {
                "a name is longer than the file system allows (255 bytes): write below a folder on a file system that takes it, or shorten the name".to_owned()
            }
            WriteError::Io(..) => {
                "check that the folder exists and that you may write to it".to_owned()
            }
        })
    }
}

/// What a name that is not a regular file is, in words.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    let kind = meta.file_type();
    if kind.is_dir() {
        "a folder"
    } else if kind.is_fifo() {
        "a FIFO (a named pipe)"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Whether a link at `at` is the user's own surroundings, not something an output's path could
/// have been given by a checkout: a folder the current directory lies in (`/home -> /usr/home`,
/// a workspace reached through a link), or a link right below `/` (only root makes those:
/// `/tmp -> /private/tmp`).
fn surroundings(at: &Path) -> bool {
    if !at.is_absolute() {
        return false;
    }
    if at.parent() == Some(Path::new("/")) {
        return true;
    }
    let logical = std::env::var_os("PWD").map(PathBuf::from);
    let physical = std::env::current_dir().ok();
    [logical, physical]
        .into_iter()
        .flatten()
        .any(|cwd| cwd.starts_with(at))
}

/// Every existing folder on the way to `path` (and `path` itself when `whole`): none a link but
/// the user's surroundings ([`surroundings`]), each a folder.
fn check_ancestors(path: &Path, whole: bool) -> Result<(), WriteError> {
    let parts: Vec<Component<'_>> = path.components().collect();
    let upto = if whole {
        parts.len()
    } else {
        parts.len().saturating_sub(1)
    };
    let mut at = PathBuf::new();
    for part in &parts[..upto] {
        at.push(part);
        if !matches!(part, Component::Normal(_)) {
            continue;
        }
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                if surroundings(&at) && at.is_dir() {
                    continue;
                }
                return Err(WriteError::Link(at));
            }
            Ok(m) if !m.is_dir() => return Err(WriteError::NotFolder(at)),
            Ok(_) => {}
            // Missing from here on: made by `prepare_dir`, or an error when written.
            Err(_) => return Ok(()),
        }
    }
    Ok(())
}

/// Make `dir` and the folders on the way, one at a time: none may be a link or other than a
/// folder (a link the user made on purpose is theirs to resolve: give its target).
pub fn prepare_dir(dir: &Path) -> Result<(), WriteError> {
    check_ancestors(dir, true)?;
    let mut at = PathBuf::new();
    for part in dir.components() {
        at.push(part);
        if !matches!(part, Component::Normal(_)) {
            continue;
        }
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                if !(surroundings(&at) && at.is_dir()) {
                    return Err(WriteError::Link(at));
                }
            }
            Ok(m) if !m.is_dir() => return Err(WriteError::NotFolder(at)),
            Ok(_) => {}
            Err(_) => create_folder(&at)?,
        }
    }
    Ok(())
}

/// One folder made, and checked to be the folder made (not a link put there in between).
fn create_folder(at: &Path) -> Result<(), WriteError> {
    match std::fs::create_dir(at) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(WriteError::Io(at.to_path_buf(), e)),
    }
    match std::fs::symlink_metadata(at) {
        Ok(m) if m.file_type().is_symlink() => Err(WriteError::Link(at.to_path_buf())),
        Ok(m) if !m.is_dir() => Err(WriteError::NotFolder(at.to_path_buf())),
        Ok(_) => Ok(()),
        Err(e) => Err(WriteError::Io(at.to_path_buf(), e)),
    }
}

/// Write `text` to the file `path` a flag named (`--json FILE`): its folder must exist, and no
/// folder on the way may be a link (but the user's surroundings); the name must be a regular file
/// or free. Replaced whole, never opened.
pub fn write_file(path: &Path, text: &str) -> Result<(), WriteError> {
    if path.file_name().is_none() {
        return Err(WriteError::NotFile(path.to_path_buf(), "a folder"));
    }
    check_ancestors(path, false)?;
    replace(path, text)
}

/// Write `text` to `dir/relative`: `relative` must be plain names only; every folder on the way
/// is created or must be a real folder; the file is replaced whole, never followed.
pub fn write_below(dir: &Path, relative: &str, text: &str) -> Result<PathBuf, WriteError> {
    let path = Path::new(relative);
    let plain =
        !relative.is_empty() && path.components().all(|c| matches!(c, Component::Normal(_)));
    if !plain {
        return Err(WriteError::Outside(
            crate::escape::control(relative).into_owned(),
        ));
    }
    let at = dir.join(path);
    prepare_dir(at.parent().unwrap_or(dir))?;
    replace(&at, text)?;
    Ok(at)
}

/// Append `text` to `path` (`$GITHUB_STEP_SUMMARY`, which the runner made): opened without
/// following a link and without blocking, and refused when it is not a regular file.
pub fn append_file(path: &Path, text: &str) -> Result<(), WriteError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    check_ancestors(path, false)?;
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_symlink() {
            return Err(WriteError::Link(path.to_path_buf()));
        }
        if !meta.is_file() {
            return Err(WriteError::NotFile(path.to_path_buf(), kind_of(&meta)));
        }
    }
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(i32::try_from(flags.bits()).unwrap_or_default())
        .open(path)
        .map_err(|e| refused_open(path, e))?;
    let meta = file
        .metadata()
        .map_err(|e| WriteError::Io(path.to_path_buf(), e))?;
    if !meta.is_file() {
        return Err(WriteError::NotFile(path.to_path_buf(), kind_of(&meta)));
    }
    file.write_all(text.as_bytes())
        .map_err(|e| WriteError::Io(path.to_path_buf(), e))
}

/// An open that `O_NOFOLLOW` refused (`ELOOP`) is a link; `ENXIO` is a FIFO no one reads.
fn refused_open(path: &Path, e: std::io::Error) -> WriteError {
    match errno(&e) {
        Some(rustix::io::Errno::LOOP) => WriteError::Link(path.to_path_buf()),
        Some(rustix::io::Errno::NXIO) => {
            WriteError::NotFile(path.to_path_buf(), "a FIFO (a named pipe)")
        }
        _ => WriteError::Io(path.to_path_buf(), e),
    }
}

/// The OS's error number of an error, as rustix names it.
fn errno(e: &std::io::Error) -> Option<rustix::io::Errno> {
    e.raw_os_error().map(rustix::io::Errno::from_raw_os_error)
}

/// Put `text` at `at`: refused when the name is a link or not a regular file; written beside it
/// under a temporary name and renamed over it, so a hard link already there (to a file outside)
/// keeps its content, and a reader never sees half a file.
fn replace(at: &Path, text: &str) -> Result<(), WriteError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    static COUNT: AtomicU64 = AtomicU64::new(0);
    if let Ok(meta) = std::fs::symlink_metadata(at) {
        if meta.file_type().is_symlink() {
            return Err(WriteError::Link(at.to_path_buf()));
        }
        if !meta.is_file() {
            return Err(WriteError::NotFile(at.to_path_buf(), kind_of(&meta)));
        }
    }
    // A short name of its own: the temporary name must fit wherever the final one does.
    let temporary = at.with_file_name(format!(
        ".tilefit-{}-{}.tmp",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    ));
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(i32::try_from(flags.bits()).unwrap_or_default())
        .open(&temporary)
        .map_err(|e| WriteError::Io(at.to_path_buf(), e))?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&temporary, at));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(WriteError::Io(at.to_path_buf(), e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_in_the_output_folder_are_never_written_through() {
        let dir = std::env::temp_dir().join(format!("tilefit-write-{}", std::process::id()));
        let out = dir.join("out");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(dir.join("victim.txt"), "keep").unwrap();
        std::os::unix::fs::symlink("../victim.txt", out.join("SUMMARY.md")).unwrap();
        std::os::unix::fs::symlink("..", out.join("up")).unwrap();
        let summary = write_below(&out, "SUMMARY.md", "x");
        let through = write_below(&out, "up/victim.txt", "x");
        let outside = write_below(&out, "../victim.txt", "x");
        let fine = write_below(&out, "triton_3_6_0/E=8.json", "{}");
        // A hard link to a file outside: the name gets a new file, the outside file its bytes.
        std::fs::write(dir.join("hard.txt"), "keep").unwrap();
        std::fs::hard_link(dir.join("hard.txt"), out.join("E=9.json")).unwrap();
        let hard = write_below(&out, "E=9.json", "{}");
        let hard_kept = std::fs::read_to_string(dir.join("hard.txt")).unwrap();
        let hard_new = std::fs::read_to_string(out.join("E=9.json")).unwrap();
        let victim = std::fs::read_to_string(dir.join("victim.txt")).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(matches!(summary, Err(WriteError::Link(_))), "{summary:?}");
        assert!(matches!(through, Err(WriteError::Link(_))), "{through:?}");
        assert!(
            matches!(outside, Err(WriteError::Outside(_))),
            "{outside:?}"
        );
        assert!(fine.is_ok(), "{fine:?}");
        assert_eq!(victim, "keep");
        assert!(hard.is_ok(), "{hard:?}");
        assert_eq!((hard_kept.as_str(), hard_new.as_str()), ("keep", "{}"));
    }
}
