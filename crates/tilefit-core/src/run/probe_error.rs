//! Why a probe could not run ([`ProbeError`]), and its next step.

use crate::compile::WorkerFault;
use crate::input::spec::SpecError;
use crate::plan::listed::ListedError;

/// Why a probe could not run.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The spec is wrong.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The kernel file does not import or the function is not a Triton kernel.
    #[error("`{file}`: {message}")]
    Kernel {
        /// The kernel file.
        file: String,
        /// What the worker said.
        message: String,
    },
    /// The embedded device table does not load (a build defect).
    #[error(transparent)]
    Table(#[from] crate::device::TableError),
    /// No worker could start.
    #[error("the compile worker could not start")]
    Worker(#[source] WorkerFault),
    /// Shards that do not make one run.
    #[error("{0}")]
    Shards(String),
    /// Reading the kernel source failed.
    #[error("cannot read `{path}`")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl From<ListedError> for ProbeError {
    fn from(error: ListedError) -> ProbeError {
        match error {
            ListedError::Spec(e) => ProbeError::Spec(e),
            ListedError::Table(e) => ProbeError::Table(e),
        }
    }
}

impl crate::hint::Hint for ProbeError {
    fn hint(&self) -> Option<String> {
        match self {
            ProbeError::Spec(e) => Some(e.hint()),
            ProbeError::Table(e) => crate::hint::Hint::hint(e),
            ProbeError::Kernel { .. } => Some(
                "check the function is decorated with @triton.jit; where the file imports what is not installed, tilefit extracts the kernel, and `[globals]` gives the names it cannot evaluate".to_owned(),
            ),
            ProbeError::Shards(_) => Some(
                "merge the `--json` files of every shard of one run (`--shard 1/N` .. `N/N`), made from the same spec and Triton".to_owned(),
            ),
            ProbeError::Worker(_) | ProbeError::Io { .. } => None,
        }
    }
}
