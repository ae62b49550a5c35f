//! tilefit's own folders: the cache (`TILEFIT_CACHE_DIR`, `$XDG_CACHE_HOME/tilefit`,
//! `~/.cache/tilefit`, or a per-user folder in the temp dir when `HOME` is unset) and the scratch
//! folders below it. Each is made private (0700) by tilefit, and one that is there already must be
//! a real folder (never a link), owned by this user and writable by no one else: another user who
//! made it first (the temp dir is shared) could plant a toolchain tilefit would run, or a link its
//! clean-up would follow. A scratch folder holds a marker naming the process that made it, and the
//! sweep of killed runs' folders removes only folders with that marker, never through a link.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};

/// The file in each scratch folder that says tilefit made it: the maker's process id.
pub const MARKER: &str = ".tilefit-scratch";

/// Why one of tilefit's folders cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FolderError {
    /// A symbolic link where tilefit's folder should be.
    #[error("`{0}` is a symbolic link: tilefit keeps its files only in a folder it made")]
    Link(PathBuf),
    /// Not a folder.
    #[error("`{0}` is not a folder")]
    NotFolder(PathBuf),
    /// Another user owns it.
    #[error("`{path}` belongs to another user (uid {owner}, this user is uid {me})")]
    Foreign {
        /// The folder.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// This process's user.
        me: u32,
    },
    /// Others may write into it.
    #[error("`{path}` is writable by other users (mode {mode:o})")]
    Shared {
        /// The folder.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The OS said no.
    #[error("`{0}` cannot be made: {1}")]
    Io(PathBuf, String),
}

impl FolderError {
    /// What to do about it.
    pub fn hint(&self) -> String {
        match self {
            FolderError::Link(path) => format!(
                "remove the link `{}`, or point `TILEFIT_CACHE_DIR` at the real folder",
                path.display()
            ),
            FolderError::NotFolder(_) => {
                "point `TILEFIT_CACHE_DIR` at a folder, or unset it to use `~/.cache/tilefit`"
                    .to_owned()
            }
            FolderError::Foreign { .. } => {
                "someone else made this folder (in a shared temp dir, before you): point `TILEFIT_CACHE_DIR` (or `HOME`) at a folder of your own".to_owned()
            }
            FolderError::Shared { path, .. } => format!(
                "`chmod go-w {}`, or point `TILEFIT_CACHE_DIR` at a folder of your own",
                path.display()
            ),
            FolderError::Io(..) => {
                "point `TILEFIT_CACHE_DIR` at a writable folder, or unset it to use `~/.cache/tilefit`"
                    .to_owned()
            }
        }
    }
}

/// This process's effective user.
fn me() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// tilefit's cache directory as configured: `TILEFIT_CACHE_DIR` (made absolute against the
/// working folder, so a script that changes its own folder still finds it), else
/// `$XDG_CACHE_HOME/tilefit`, else `~/.cache/tilefit`, else (no `HOME`) a folder of this user's
/// in the temp dir, `tilefit-cache-UID`.
pub fn configured() -> PathBuf {
    let dir = if let Some(dir) = std::env::var_os("TILEFIT_CACHE_DIR").filter(|d| !d.is_empty()) {
        PathBuf::from(dir)
    } else if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        PathBuf::from(dir).join("tilefit")
    } else if let Some(home) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        PathBuf::from(home).join(".cache").join("tilefit")
    } else {
        std::env::temp_dir().join(format!("tilefit-cache-{}", me()))
    };
    std::path::absolute(&dir).unwrap_or(dir)
}

/// `path` as a private folder of this user's: made (0700, its parents as the umask says) when
/// missing; when there, a real folder (not a link), owned by this user and writable by no one
/// else.
pub fn private(path: &Path) -> Result<(), FolderError> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| FolderError::Io(parent.to_path_buf(), e.to_string()))?;
            }
            match std::fs::DirBuilder::new().mode(0o700).create(path) {
                Ok(()) => {}
                // Made at the same moment by another process: checked below like any other.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(FolderError::Io(path.to_path_buf(), e.to_string())),
            }
        }
        Err(e) => return Err(FolderError::Io(path.to_path_buf(), e.to_string())),
    }
    check(path)
}

/// Whether the folder at `path` (never followed) may be tilefit's.
fn check(path: &Path) -> Result<(), FolderError> {
    let meta = std::fs::symlink_metadata(path)
        .map_err(|e| FolderError::Io(path.to_path_buf(), e.to_string()))?;
    if meta.file_type().is_symlink() {
        return Err(FolderError::Link(path.to_path_buf()));
    }
    if !meta.is_dir() {
        return Err(FolderError::NotFolder(path.to_path_buf()));
    }
    if meta.uid() != me() {
        return Err(FolderError::Foreign {
            path: path.to_path_buf(),
            owner: meta.uid(),
            me: me(),
        });
    }
    if meta.mode() & 0o022 != 0 {
        return Err(FolderError::Shared {
            path: path.to_path_buf(),
            mode: meta.mode() & 0o7777,
        });
    }
    Ok(())
}

/// The cache folder, checked: it and its `scratch` folder private and this user's.
pub fn usable_cache() -> Result<PathBuf, FolderError> {
    let dir = configured();
    private(&dir)?;
    private(&dir.join("scratch"))?;
    Ok(dir)
}

/// Make the scratch folder `path` (private, a new folder: one already there is refused) with its
/// marker.
pub fn make_scratch(path: &Path) -> Result<(), FolderError> {
    if let Some(root) = path.parent() {
        private(root)?;
    }
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(path)
        .map_err(|e| FolderError::Io(path.to_path_buf(), e.to_string()))?;
    let mut marker = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path.join(MARKER))
        .map_err(|e| FolderError::Io(path.to_path_buf(), e.to_string()))?;
    writeln!(marker, "{}", std::process::id())
        .map_err(|e| FolderError::Io(path.to_path_buf(), e.to_string()))
}

/// The process a scratch folder's marker names, read without following a link.
fn maker(folder: &Path) -> Option<u32> {
    let marker = folder.join(MARKER);
    let meta = std::fs::symlink_metadata(&marker).ok()?;
    if !meta.is_file() || meta.len() > 32 {
        return None;
    }
    std::fs::read_to_string(marker).ok()?.trim().parse().ok()
}

/// Remove the scratch folders under `root` that are older than `age` and whose maker is gone (a
/// killed run's): only real folders with tilefit's marker, never through a link (`root` itself
/// included), never a folder of a live process.
pub fn sweep_stale(root: &Path, age: std::time::Duration) {
    if check(root).is_err() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != me() {
            continue;
        }
        let Some(pid) = maker(&path) else { continue };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_some_and(|e| e >= age);
        let gone = pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists();
        if old && gone {
            // `remove_dir_all` removes links inside as links, never what they point at.
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn root(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("tilefit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        root
    }

    #[test]
    fn only_marked_old_folders_of_gone_processes_are_swept_and_never_through_a_link() {
        let base = root("sweep");
        let scratch = base.join("scratch");
        private(&scratch).unwrap();
        // A process id no process has (above the kernel's pid_max).
        let gone = scratch.join("emit-files-4194999-1");
        std::fs::create_dir(&gone).unwrap();
        std::fs::write(gone.join(MARKER), "4194999\n").unwrap();
        let mine = scratch.join("probe-x");
        make_scratch(&mine).unwrap();
        // Named like tilefit's, but not made by it (no marker): somebody's backup.
        let foreign = scratch.join("backup-2023-12");
        std::fs::create_dir(&foreign).unwrap();
        // A link to a marked folder elsewhere: the link is not followed.
        let elsewhere = base.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::write(elsewhere.join(MARKER), "4194999\n").unwrap();
        std::os::unix::fs::symlink(&elsewhere, scratch.join("data-20240101-1")).unwrap();
        sweep_stale(&scratch, std::time::Duration::from_secs(3600));
        assert!(gone.exists(), "a fresh folder is kept");
        sweep_stale(&scratch, std::time::Duration::ZERO);
        let kept = (gone.exists(), mine.exists(), foreign.exists());
        let through_link = elsewhere.join(MARKER).exists();
        // A scratch root that is itself a link is not swept at all.
        let linked = base.join("linked-scratch");
        std::os::unix::fs::symlink(&elsewhere, &linked).unwrap();
        sweep_stale(&linked, std::time::Duration::ZERO);
        let linked_kept = elsewhere.exists();
        let _ = std::fs::remove_dir_all(&base);
        assert_eq!(
            kept,
            (false, true, true),
            "swept: only the marked folder of a gone process"
        );
        assert!(
            through_link && linked_kept,
            "nothing removed through a link"
        );
    }

    #[test]
    fn a_folder_that_is_a_link_a_file_or_open_to_others_is_refused_with_its_path() {
        let base = root("private");
        let made = base.join("a").join("cache");
        private(&made).unwrap();
        let bits = std::fs::metadata(&made).unwrap().permissions().mode() & 0o777;
        assert_eq!(bits, 0o700, "made private");
        let link = base.join("link");
        std::os::unix::fs::symlink(&made, &link).unwrap();
        assert_eq!(private(&link), Err(FolderError::Link(link.clone())));
        let file = base.join("file");
        std::fs::write(&file, "").unwrap();
        assert_eq!(private(&file), Err(FolderError::NotFolder(file.clone())));
        let open = base.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let refused = private(&open);
        let _ = std::fs::remove_dir_all(&base);
        assert!(
            matches!(&refused, Err(FolderError::Shared { path, mode: 0o777 }) if *path == open),
            "{refused:?}"
        );
    }

    #[test]
    fn a_folder_of_another_user_is_refused() {
        // Another user's folder: as root, one handed to `nobody`; as anyone else, `/` (root's).
        let base = root("foreign");
        let theirs = if me() == 0 {
            let theirs = base.join("planted");
            std::fs::create_dir(&theirs).unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
            theirs
        } else {
            PathBuf::from("/")
        };
        let refused = private(&theirs);
        let _ = std::fs::remove_dir_all(&base);
        assert!(
            matches!(&refused, Err(FolderError::Foreign { path, me: m, .. }) if *path == theirs && *m == me()),
            "{refused:?}"
        );
    }
}
