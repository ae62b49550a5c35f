//! What `tilefit probe --emit-files` made: per written file, its device, its source, and each
//! entry's bytes before and after with what changed; the text of every file. The summary for a
//! pull request is drawn from it (`render::fix_files`), and the provenance sidecar is it, as JSON.

use serde::Serialize;

/// One entry's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntryFix {
    /// The key (a batch size).
    pub key: String,
    /// Bytes of the entry as the source has it, on this device.
    pub bytes_before: Option<u64>,
    /// Bytes of what the file now holds (the same entry when it fits).
    pub bytes_after: Option<u64>,
    /// The changes (empty: kept as it was).
    pub changes: Vec<String>,
    /// No candidate fits: the entry is left out of a new file (the engine takes the nearest batch
    /// size) and left as it was in a patched copy.
    pub unfixable: bool,
    /// What bounded its candidates (stages clamped, the list cut).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One file written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileFix {
    /// Its path below the output folder (the engine's own relative name).
    pub name: String,
    /// A patched copy of the engine's file, or a new file.
    pub kind: &'static str,
    /// The device it is for.
    pub device: String,
    /// That device's budget.
    pub budget: u64,
    /// The engine file it was made from.
    pub source: String,
    /// The entries settled, in the file's order: every entry of a new file, the entries that
    /// missed in a patched copy.
    pub entries: Vec<EntryFix>,
    /// The entries the file holds from its source: all of a patched copy's, the ones a new file
    /// carries over.
    pub entries_in_source: usize,
    /// What the summary must say of the file (a key written twice, and which copy was patched).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The file's text.
    #[serde(skip)]
    pub text: String,
}

/// What `--emit-files` writes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FixedFiles {
    /// tilefit's version.
    pub tilefit: String,
    /// The Triton every entry was compiled with.
    pub triton: String,
    /// The files.
    pub files: Vec<FileFix>,
    /// Devices of the fleet that no file could be made for, and why.
    pub skipped: Vec<(String, String)>,
    /// Files of the folder that were not judged, so nothing was made from them, and why: a
    /// variant the spec does not describe, a file or entry that could not be read.
    pub not_judged: Vec<(String, String)>,
    /// Entries of the files to write that were read back as the engine reads them and judged
    /// again on their device, every one as the summary says.
    pub rejudged: usize,
    /// False when the run was interrupted: nothing is written.
    pub complete: bool,
}
