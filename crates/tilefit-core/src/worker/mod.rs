//! Python compile workers: the JSON-lines protocol (typed here, mirrored in the embedded
//! `worker.py`), one worker process with its handshake, timeouts and fault detection, and a pool
//! that runs jobs on N workers and replaces any that crash, hang or garble the protocol. A
//! worker's fault fails only the job it was running; the pool never prints.

mod pool;
mod process;

pub use pool::Pool;
pub use process::{Worker, WorkerCommand, WorkerExit, WorkerFault};

use serde::{Deserialize, Serialize};

/// The worker script, embedded so the binary needs nothing beside it.
pub const WORKER_SCRIPT: &str = include_str!("worker.py");

/// The protocol version both sides speak.
pub const PROTOCOL_VERSION: u32 = 1;

/// The worker's first line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// Must equal [`PROTOCOL_VERSION`].
    pub protocol: u32,
    /// The worker's Python version.
    pub python: String,
    /// The Triton version it imported, or `None` when the import failed.
    pub triton: Option<String>,
    /// Triton backends available (`nvidia`, `amd`).
    #[serde(default)]
    pub backends: Vec<String>,
    /// Why `import triton` failed.
    #[serde(default)]
    pub import_error: Option<String>,
    /// The worker's process id.
    pub pid: u32,
}

/// What a failed request reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyError {
    /// `compile-error`, `unsupported-on-target`, `bad-spec`, `bad-kernel`, `toolchain`, `internal`.
    pub kind: String,
    /// The first meaningful line.
    pub message: String,
    /// A traceback tail, for `--verbose` and bug reports.
    #[serde(default)]
    pub detail: String,
    /// The compiler's whole diagnostic: `at L:C:`, the source excerpt with its caret, the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostic: Option<String>,
    /// Where in the kernel's source file the compiler stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<SourceLocation>,
}

/// A place in a kernel's source file, as the worker computed it from a `CompilationError`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceLocation {
    /// The source file.
    pub file: String,
    /// 1-based line in that file.
    pub line: u64,
    /// 1-based column.
    pub column: u64,
    /// The line's text, trimmed.
    #[serde(default)]
    pub text: String,
}

impl SourceLocation {
    /// `moe.py:85:21`: the file's name, not its whole path.
    pub fn short(&self) -> String {
        let name = std::path::Path::new(&self.file)
            .file_name()
            .map_or_else(|| self.file.clone(), |n| n.to_string_lossy().into_owned());
        format!("{name}:{}:{}", self.line, self.column)
    }
}

/// One reply line. The body's fields depend on the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// Echo of the request id.
    pub id: u64,
    /// `ok` or `error`.
    pub status: String,
    /// Set when `status` is `error`.
    #[serde(default)]
    pub error: Option<ReplyError>,
    /// The rest of the reply.
    #[serde(flatten)]
    pub body: serde_json::Map<String, serde_json::Value>,
}
