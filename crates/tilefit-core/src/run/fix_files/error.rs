//! Why `--emit-files` could not make its files.

/// Why the files could not be made.
#[derive(Debug, thiserror::Error)]
pub enum FixFilesError {
    /// The spec sweeps no config files.
    #[error("`--emit-files` writes engine config files, and `{0}` sweeps none")]
    NotFiles(String),
    /// The config files could not be read again.
    #[error("cannot read the config files again: {0}")]
    Files(String),
    /// A round of candidates could not be compiled.
    #[error("compiling the candidate configs failed")]
    Probe(#[source] Box<crate::run::probe_error::ProbeError>),
    /// The scratch folder.
    #[error("cannot write `{0}`")]
    Scratch(String, #[source] std::io::Error),
    /// The embedded device table.
    #[error(transparent)]
    Table(#[from] crate::device::TableError),
    /// A name to write leaves the output folder.
    #[error(
        "refusing to write `{0}`: a written file's name must be a relative path below the output folder"
    )]
    Name(String),
    /// Read back as the engine reads them, the files do not say what was judged.
    #[error("the files to write were read back as the engine reads them and judged again, and {} did not hold: {}", .0.len(), .0.join("; "))]
    Rejudged(Vec<String>),
    /// The engine's loader could not be run.
    #[error("cannot run `{0}` to read the written files as the engine does")]
    Loader(String, #[source] std::io::Error),
}

impl crate::hint::Hint for FixFilesError {
    fn hint(&self) -> Option<String> {
        match self {
            FixFilesError::NotFiles(_) => Some(
                "use it with `[sweep] from_files = \"configs/*.json\"` (and `[files]` for the launcher's edits)"
                    .to_owned(),
            ),
            FixFilesError::Probe(e) => crate::hint::Hint::hint(e.as_ref()),
            _ => None,
        }
    }
}
