//! What to capture ([`CaptureRun`]), and why a capture could not run at all ([`CaptureError`]);
//! a target's failed run is a note in its report instead.

use std::path::Path;

use crate::device::TargetDevice;
use crate::device::emulated::NotEmulable;

/// Why a capture could not run at all (a target's failed run is a note in its report instead).
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The script is not there.
    #[error("cannot read the script `{0}`")]
    Script(String, #[source] std::io::Error),
    /// The Python cannot import torch.
    #[error("the Python that runs the script ({python}) cannot import torch")]
    NoTorch {
        /// The interpreter.
        python: String,
    },
    /// A target the table cannot emulate.
    #[error(transparent)]
    Device(#[from] NotEmulable),
    /// The embedded device table.
    #[error(transparent)]
    Table(#[from] crate::device::TableError),
    /// The scratch folder.
    #[error("cannot write the capture's scratch folder `{0}`")]
    Scratch(String, #[source] std::io::Error),
}

impl crate::hint::Hint for CaptureError {
    fn hint(&self) -> Option<String> {
        match self {
            CaptureError::Script(..) => Some("pass the Python script that calls the engine's host code".to_owned()),
            CaptureError::NoTorch { .. } => Some(
                "install torch into the environment where the engine and Triton are (`pip install torch`: it imports on a machine with no GPU), or pass `--python` of one that has it"
                    .to_owned(),
            ),
            CaptureError::Device(e) => crate::hint::Hint::hint(e),
            CaptureError::Table(_) | CaptureError::Scratch(..) => None,
        }
    }
}

/// What to capture.
pub struct CaptureRun<'a> {
    /// The script; with `module`, ignored.
    pub script: &'a Path,
    /// Run this module as `__main__` instead of a script (`pytest`).
    pub module: Option<&'a str>,
    /// Its arguments.
    pub args: &'a [String],
    /// The targets, each run in its own process.
    pub targets: &'a [TargetDevice],
    /// How long one target's run may take.
    pub timeout: std::time::Duration,
    /// Whether a target with no launch passes (`--allow-empty`).
    pub allow_empty: bool,
    /// Whether a stop that ended the script (a thread, a test) early passes (`--allow-stopped`):
    /// it is reported, not failed.
    pub allow_stopped: bool,
    /// Run only this shard of the run (`--shard K/N`): a test suite's share of every target's
    /// tests, a script's share of the targets.
    pub shard: Option<crate::plan::shard::Shard>,
    /// Folders besides its scratch the script may write to (`--allow-writes`): a write anywhere
    /// else fails the run.
    pub writable: &'a [std::path::PathBuf],
}
