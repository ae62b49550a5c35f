//! Reading the other JSON files tilefit writes, from elsewhere: shards (`--shard K/N --json`) for
//! `merge`, and version matrices and probe reports for `diff`. Each file goes through
//! `input::untrusted` (every string checked), then its `kind` and `schema_version`; a file of
//! another kind is an error naming the file, with what to pass instead.

use std::path::Path;

use serde_json::Value;

use crate::hint::Hinted;
use crate::input::untrusted::{Expected, read_json_expecting};
use crate::model::kind::ReportKind;
use crate::model::matrix::MatrixReport;
use crate::model::probe::ProbeReport;
use crate::model::saved::SavedReport;
use crate::model::shard::{ReplayShardReport, SHARD_SCHEMA_VERSION, ShardReport};

const SHARD_HINT: &str = "pass the files written by `tilefit probe SPEC --shard K/N --json FILE` (or `tilefit replay ... --shard K/N`, `tilefit capture ... --shard K/N`), one per shard";
const DIFF_HINT: &str = "pass `tilefit diff OLD.json NEW.json` (two `probe --json` reports) or one `probe --triton A,B --json` matrix";

/// The shards of one sharded run.
pub enum Shards {
    /// A probe's.
    Probe(Vec<ShardReport>),
    /// A replay's.
    Replay(Vec<ReplayShardReport>),
    /// A capture's, each with its file.
    Capture(Vec<(crate::model::capture::CaptureReport, std::path::PathBuf)>),
}

/// Why a file from elsewhere is not what it was to be.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// It does not read, is not JSON, or holds a value no field may hold.
    #[error(transparent)]
    File(#[from] Expected),
    /// It is JSON of another kind, schema or shape.
    #[error(transparent)]
    Kind(#[from] Hinted),
}

impl crate::hint::Hint for ReadError {
    fn hint(&self) -> Option<String> {
        match self {
            ReadError::File(e) => crate::hint::Hint::hint(e),
            ReadError::Kind(e) => crate::hint::Hint::hint(e),
        }
    }
}

/// A JSON file from elsewhere, parsed and its strings checked; `hint` says what to pass.
fn untrusted(path: &Path, hint: &'static str) -> Result<Value, ReadError> {
    Ok(read_json_expecting(path, hint)?)
}

/// Read the shard files of one run: all of a probe's, or all of a replay's (by the first).
pub fn shards(paths: &[impl AsRef<Path>]) -> Result<Shards, ReadError> {
    let mut read = Vec::new();
    for path in paths {
        let path = path.as_ref();
        let shown = path.display();
        let json = untrusted(path, SHARD_HINT)?;
        let written = json.get("kind").and_then(Value::as_str).unwrap_or_default();
        let kind = ReportKind::parse(written);
        if kind == Some(ReportKind::Capture) && json.get("shard").is_some() {
            let version = json.get("schema_version").and_then(Value::as_u64);
            let current = crate::model::capture::CAPTURE_SCHEMA_VERSION;
            if version != Some(u64::from(current)) {
                return Err(Hinted::new(
                    format!("`{shown}` is a capture of schema {version:?}; this tilefit reads schema {current}"),
                    "make every shard and the merge with the same tilefit",
                )
                .into());
            }
            read.push((kind, json, path));
            continue;
        }
        if !matches!(kind, Some(ReportKind::ProbeShard | ReportKind::ReplayShard)) {
            let kind = written.to_owned();
            return Err(Hinted::new(
                format!(
                    "`{shown}` has the kind {kind:?}, not `probe-shard`, `replay-shard` or a capture shard's `capture` with its `shard`"
                ),
                SHARD_HINT,
            )
            .into());
        }
        let version = json.get("schema_version").and_then(Value::as_u64);
        if version != Some(u64::from(SHARD_SCHEMA_VERSION)) {
            return Err(Hinted::new(
                format!(
                    "`{shown}` is a shard of schema {version:?}; this tilefit reads schema {SHARD_SCHEMA_VERSION}"
                ),
                "make every shard and the merge with the same tilefit",
            )
            .into());
        }
        read.push((kind, json, path));
    }
    let first = read.first().and_then(|(kind, _, _)| *kind);
    if read.iter().any(|(kind, _, _)| *kind != first) {
        return Err(Hinted::new(
            "the files are shards of different kinds of run (probe, replay, capture)",
            SHARD_HINT,
        )
        .into());
    }
    if first == Some(ReportKind::Capture) {
        return read
            .into_iter()
            .map(|(_, json, path)| {
                parse(json, path, "a capture shard", SHARD_HINT).map(|r| (r, path.to_path_buf()))
            })
            .collect::<Result<_, _>>()
            .map(Shards::Capture);
    }
    let replay = first == Some(ReportKind::ReplayShard);
    if replay {
        read.into_iter()
            .map(|(_, json, path)| parse(json, path, "a shard", SHARD_HINT))
            .collect::<Result<_, _>>()
            .map(Shards::Replay)
    } else {
        read.into_iter()
            .map(|(_, json, path)| parse(json, path, "a shard", SHARD_HINT))
            .collect::<Result<_, _>>()
            .map(Shards::Probe)
    }
}

fn parse<T: serde::de::DeserializeOwned>(
    json: Value,
    path: &Path,
    what: &str,
    hint: &str,
) -> Result<T, ReadError> {
    serde_json::from_value(json).map_err(|e| {
        Hinted::new(
            format!("`{}` is not {what} this tilefit reads: {e}", path.display()),
            hint,
        )
        .into()
    })
}

/// A version matrix (`probe --triton A,B --json`).
pub fn matrix(path: &Path) -> Result<MatrixReport, ReadError> {
    let json = untrusted(path, DIFF_HINT)?;
    let kind = json
        .get("kind")
        .and_then(Value::as_str)
        .and_then(ReportKind::parse);
    if kind != Some(ReportKind::ProbeMatrix) {
        return Err(Hinted::new(
            format!(
                "`{}` is not a version matrix; give the new report too",
                path.display()
            ),
            DIFF_HINT,
        )
        .into());
    }
    parse(json, path, "a matrix", DIFF_HINT)
}

/// Why a file is not one probe report.
#[derive(Debug, thiserror::Error)]
pub enum NotAProbeReport {
    /// It does not read as a saved report.
    #[error(transparent)]
    Saved(#[from] crate::model::saved::SavedReportError),
    /// It is a matrix or a replay report.
    #[error(transparent)]
    Other(#[from] Hinted),
    /// It does not read as JSON of tilefit's.
    #[error(transparent)]
    File(#[from] ReadError),
}

impl crate::hint::Hint for NotAProbeReport {
    fn hint(&self) -> Option<String> {
        match self {
            NotAProbeReport::Saved(e) => crate::hint::Hint::hint(e),
            NotAProbeReport::Other(e) => crate::hint::Hint::hint(e),
            NotAProbeReport::File(e) => crate::hint::Hint::hint(e),
        }
    }
}

/// A report `diff` compares: a probe's, or a capture's.
pub enum ForDiff {
    /// A probe report.
    Probe(Box<ProbeReport>),
    /// A capture report.
    Capture(Box<crate::model::capture::CaptureReport>),
}

/// One probe or capture report, for `diff`: a matrix or a replay report is refused with what to
/// do. The file is read once.
pub fn for_diff(path: &Path) -> Result<ForDiff, NotAProbeReport> {
    let json = crate::input::untrusted::read_json(path)
        .map_err(crate::model::saved::SavedReportError::from)?;
    let kind = json
        .get("kind")
        .and_then(Value::as_str)
        .and_then(ReportKind::parse);
    if kind == Some(ReportKind::ProbeMatrix)
        && let Ok(matrix) = serde_json::from_value::<MatrixReport>(json.clone())
    {
        return Err(Hinted::new(
            format!(
                "`{}` is a version matrix ({} versions), not one probe report",
                path.display(),
                matrix.versions.len()
            ),
            "diff a matrix on its own: `tilefit diff MATRIX.json`",
        )
        .into());
    }
    match SavedReport::from_json(path, json)? {
        SavedReport::Probe(report) => Ok(ForDiff::Probe(report)),
        SavedReport::Capture(report) => Ok(ForDiff::Capture(report)),
        SavedReport::Replay(_) => Err(Hinted::new(
            format!("`{}` is a replay report", path.display()),
            "`tilefit diff` compares two probe reports of one spec, or two capture reports of one script",
        )
        .into()),
    }
}
