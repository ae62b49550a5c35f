//! Why `verify` on this machine could not run ([`VerifyError`]), and its next step.

use crate::cuda::LiveError;
use crate::device::{LookupError, TableError};
use crate::hint::Hinted;
use crate::input::cache_index::ScanError;
use crate::input::spec::SpecError;
use crate::run::toolchains::SelectError;

/// Why verification could not run.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// No driver, no GPU, or the driver refused a query.
    #[error(transparent)]
    Live(#[from] LiveError),
    /// The embedded device table does not load (a build defect).
    #[error("loading the embedded device table")]
    Table(#[source] TableError),
    /// The local GPU's arch is not in the table.
    #[error("the local GPU's arch {arch}: {error}")]
    UnknownArch {
        /// The arch.
        arch: String,
        /// Why.
        error: LookupError,
    },
    /// The input or a flag does not fit.
    #[error(transparent)]
    Input(#[from] Hinted),
    /// A saved report does not read.
    #[error(transparent)]
    Report(#[from] crate::input::untrusted::Expected),
    /// The spec is wrong.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// No toolchain.
    #[error(transparent)]
    Toolchain(#[from] SelectError),
    /// The probe failed.
    #[error(transparent)]
    Probe(#[from] crate::run::probe_error::ProbeError),
    /// A cache could not be scanned.
    #[error(transparent)]
    Scan(#[from] ScanError),
    /// The replay failed.
    #[error(transparent)]
    Replay(#[from] crate::run::replay::ReplayError),
    /// The binaries folder could not be made.
    #[error("creating `{path}`")]
    Io {
        /// The folder.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl crate::hint::Hint for VerifyError {
    fn hint(&self) -> Option<String> {
        use crate::hint::Hint;
        match self {
            VerifyError::Live(e) => Hint::hint(e),
            VerifyError::Table(e) => Hint::hint(e),
            VerifyError::UnknownArch { .. } => {
                Some("tilefit's table does not know this arch yet".to_owned())
            }
            VerifyError::Input(e) => Hint::hint(e),
            VerifyError::Report(e) => Hint::hint(e),
            VerifyError::Spec(e) => Hint::hint(e),
            VerifyError::Toolchain(e) => Hint::hint(e),
            VerifyError::Probe(e) => Hint::hint(e),
            VerifyError::Scan(_) => Some("check the path".to_owned()),
            VerifyError::Replay(_) | VerifyError::Io { .. } => None,
        }
    }
}
