//! Writing files below a folder the user named, without following a link: the folder may be a
//! checkout of a pull request, where `out/SUMMARY.md -> ../victim.txt` would turn a write into an
//! overwrite of something else. Each folder below the named one is created or checked on the way
//! (a link is an error naming it), and the file is written beside its name with `O_NOFOLLOW` and
//! renamed over it (so a hard link already there keeps its own bytes). Below the stages,
//! like `escape`: the binary writes what `render` drew through it.

use std::io::Write as _;
use std::path::{Component, Path, PathBuf};

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
        "refusing to write through `{0}`: it is a symbolic link, and tilefit never writes through a link in an output folder (it could point anywhere); remove it"
    )]
    Link(PathBuf),
    /// Something else in the way is not a folder.
    #[error("cannot write below `{0}`: it is not a folder")]
    NotFolder(PathBuf),
    /// The OS said no.
    #[error("cannot write `{0}`")]
    Io(PathBuf, #[source] std::io::Error),
}

/// Whether `path` is a link (never following it).
fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Check the output folder itself: created when missing; a link is refused (a link the user
/// made on purpose is theirs to resolve: give its target).
pub fn prepare_dir(dir: &Path) -> Result<(), WriteError> {
    if is_link(dir) {
        return Err(WriteError::Link(dir.to_path_buf()));
    }
    std::fs::create_dir_all(dir).map_err(|e| WriteError::Io(dir.to_path_buf(), e))?;
    if !dir.is_dir() {
        return Err(WriteError::NotFolder(dir.to_path_buf()));
    }
    Ok(())
}

/// Write `text` to `dir/relative`: `relative` must be plain names only; every folder on the way
/// is created or must be a real folder; the file is created or truncated, never followed.
pub fn write_below(dir: &Path, relative: &str, text: &str) -> Result<PathBuf, WriteError> {
    let path = Path::new(relative);
    let plain =
        !relative.is_empty() && path.components().all(|c| matches!(c, Component::Normal(_)));
    if !plain {
        return Err(WriteError::Outside(
            crate::escape::control(relative).into_owned(),
        ));
    }
    prepare_dir(dir)?;
    let mut at = dir.to_path_buf();
    let parts: Vec<Component<'_>> = path.components().collect();
    for part in &parts[..parts.len() - 1] {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Err(WriteError::Link(at)),
            Ok(m) if !m.is_dir() => return Err(WriteError::NotFolder(at)),
            Ok(_) => {}
            Err(_) => std::fs::create_dir(&at).map_err(|e| WriteError::Io(at.clone(), e))?,
        }
    }
    at.push(parts[parts.len() - 1]);
    if is_link(&at) {
        return Err(WriteError::Link(at));
    }
    // Written beside it, then renamed over it: a hard link already there (to a file outside)
    // keeps its content, since the name gets a new file instead of the old file new bytes.
    let temporary = at.with_file_name(format!(
        ".{}.tilefit-{}",
        at.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        std::process::id()
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options
            .custom_flags(i32::try_from(rustix::fs::OFlags::NOFOLLOW.bits()).unwrap_or_default());
    }
    let _ = std::fs::remove_file(&temporary);
    let mut file = options
        .open(&temporary)
        .map_err(|e| WriteError::Io(temporary.clone(), e))?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&temporary, &at));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(WriteError::Io(at, e));
    }
    Ok(at)
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
