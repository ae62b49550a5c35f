//! What one compile came to, in the one word verdicts, reports and renderers share.

use serde::{Deserialize, Serialize};

/// What a compile produced, for verdict purposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompileStatus {
    /// Compiled; the size is known.
    Ok,
    /// Triton rejected the kernel for this target.
    CompileError,
    /// The target cannot run this config at all (fp8e4nv on sm_80).
    UnsupportedOnTarget,
    /// The worker crashed, hung or garbled its answer: nothing is known.
    Failed,
}
