//! The worker protocol, typed on this side (the script in `worker/` is the other): one [`Request`] enum, one
//! [`Reply`] with a typed [`ReplyBody`], an [`ErrorKind`] enum. JSON lines; the first line a worker
//! writes is a [`Hello`]. Nothing outside this module builds or reads protocol JSON by hand, so a
//! renamed field fails to compile here or to parse at the boundary, never silently later.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::vocab::{AutotuneConfig, KernelParam, Loaded, Request};

/// The worker script and its parts, from one list of the parts of `worker/`, in the order of
/// their names (a test checks that the list is the folder).
macro_rules! worker_package {
    ($($module:literal),* $(,)?) => {
        /// The worker package's modules, by file name: `tilefit_worker/{name}`, each importing
        /// only the ones before it (the folder `compile/worker/`, embedded; `_jit.py` is the
        /// `tilefit` package's own, linked there).
        pub const WORKER_PACKAGE: &[(&str, &str)] =
            &[$(($module, include_str!(concat!("worker/", $module)))),*];
    };
}

worker_package!(
    "__init__.py",
    "_jit.py",
    "extract.py",
    "protocol.py",
    "stand_ins.py",
    "kernel.py",
    "compiling.py",
    "launch.py",
    "errors.py",
    "zygote.py",
    "serve.py",
);

/// The digest a cached result's key takes of the embedded worker: SHA-256 over its modules'
/// texts, in [`WORKER_PACKAGE`]'s order (the digest of the package as one text).
pub fn worker_package_digest() -> String {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    for (_, text) in WORKER_PACKAGE {
        hasher.update(text.as_bytes());
    }
    crate::digest::hex(&hasher.finalize())
}

/// The worker's entry: the package's folder (the first argument) first on `sys.path`, then the
/// serve loop. Run with `python -I -B -u -c`.
pub const WORKER_BOOT: &str =
    "import sys; sys.path.insert(0, sys.argv[1]); from tilefit_worker.serve import serve; serve()";

/// Write the worker package as `root/tilefit_worker/`: a file already there with the same text is
/// left alone, and a new one is written beside and renamed into place, so a worker starting
/// meanwhile never reads half a module.
pub fn write_worker_package(root: &std::path::Path) -> std::io::Result<()> {
    let dir = root.join("tilefit_worker");
    std::fs::create_dir_all(&dir)?;
    for (name, text) in WORKER_PACKAGE {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).is_ok_and(|old| old == *text) {
            continue;
        }
        let staged = dir.join(format!(
            ".{name}.{}.{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&staged, text)?;
        std::fs::rename(&staged, &path)?;
    }
    Ok(())
}

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

/// A request line: the request and the id its reply echoes.
#[derive(Serialize)]
pub(crate) struct Envelope<'a> {
    pub(crate) id: u64,
    #[serde(flatten)]
    pub(crate) request: &'a Request,
}

/// What kind of failure a reply, or tilefit itself, reports for one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// Triton refused the kernel for this config and target.
    CompileError,
    /// The target cannot run it at all (an fp8 type on sm_80, ...).
    UnsupportedOnTarget,
    /// The spec gives the kernel something it cannot take.
    BadSpec,
    /// The kernel file does not import.
    BadKernel,
    /// The Python or Triton environment is broken.
    Toolchain,
    /// A defect in tilefit's worker.
    Internal,
    /// The worker crashed, hung or garbled its reply (tilefit's side).
    WorkerFault,
    /// An interrupt kept the job from running (tilefit's side).
    Interrupted,
}

impl ErrorKind {
    /// `compile-error`, as reports write it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::CompileError => "compile-error",
            ErrorKind::UnsupportedOnTarget => "unsupported-on-target",
            ErrorKind::BadSpec => "bad-spec",
            ErrorKind::BadKernel => "bad-kernel",
            ErrorKind::Toolchain => "toolchain",
            ErrorKind::Internal => "internal",
            ErrorKind::WorkerFault => "worker-fault",
            ErrorKind::Interrupted => "interrupted",
        }
    }

    /// Only what the compiler decided is cached; faults and spec errors are retried next run.
    pub fn is_compiler_decision(self) -> bool {
        matches!(
            self,
            ErrorKind::CompileError | ErrorKind::UnsupportedOnTarget
        )
    }

    /// The spec or the kernel file is wrong: the run stops with a spec error.
    pub fn is_input_error(self) -> bool {
        matches!(self, ErrorKind::BadSpec | ErrorKind::BadKernel)
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
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

/// What a failed request reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// The reason, in one line.
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

/// What a launch passed for one parameter where it is more than a plain value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Passed {
    /// `dtype` (a `tl.` dtype constexpr), `none` (a None argument, a constexpr None),
    /// `tensor-descriptor`, `heuristic` (set by `@triton.heuristics`) or `default` (the
    /// signature's default).
    pub how: String,
    /// The value, as Python would show it.
    pub value: Value,
}

/// Seconds a compile's stages took in the worker.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Timings {
    /// Binding and specialization.
    #[serde(default)]
    pub specialize_s: f64,
    /// The compile.
    #[serde(default)]
    pub compile_s: f64,
}

/// The body of a successful reply: the fields of each request kind, absent where they do not
/// apply (an inspect reply has `params`, a compile reply `shared`, a launch reply `launched`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ReplyBody {
    /// Inspect: the kernel's parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Vec<KernelParam>>,
    /// Inspect: the `@triton.autotune` configs, when the kernel has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autotune_configs: Option<Vec<AutotuneConfig>>,
    /// Inspect: the options each backend of this Triton takes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub backend_options: BTreeMap<String, Vec<String>>,
    /// Inspect: how the kernel's module was loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded: Option<Loaded>,
    /// Compile: `metadata.shared`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<u64>,
    /// Compile: effective num_warps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_warps: Option<u64>,
    /// Compile: effective num_stages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_stages: Option<u64>,
    /// Compile: `metadata.tmem_size`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmem_size: Option<u64>,
    /// Compile: the signature Triton compiled (non-constexpr arguments).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub signature: BTreeMap<String, String>,
    /// Compile: arguments marked divisible by 16.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub divisible_by_16: Vec<String>,
    /// Compile: int arguments equal to 1, compiled as constants.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub specialized_to_1: Vec<String>,
    /// Compile: parameters passed as more than a plain value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub passed: BTreeMap<String, Passed>,
    /// Compile: options the target's backend does not take, left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_options: Vec<String>,
    /// Compile: stage timings.
    #[serde(default)]
    pub timings: Timings,
    /// Compile with a binary folder: where the binary was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<PathBuf>,
    /// Compile with binaries or resources: the kernel's symbol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_name: Option<String>,
    /// Compile with resources: `cubin` or `hsaco`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_format: Option<String>,
    /// Compile with resources: the binary, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_base64: Option<String>,
    /// Compile with resources: ptxas's verbose log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiler_log: Option<String>,
    /// Launch: whether the launch went through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launched: Option<bool>,
    /// Launch: what refused it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_error: Option<String>,
    /// The process that answered (which worker ran a job, for the pool's tests and bug reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Fork: the new process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_pid: Option<u32>,
    /// Fork: the threads the zygote ran when it forked (1: none besides its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// Reap: how the child ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<ChildExit>,
}

/// How a zygote's child ended, as `waitpid` told the zygote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ChildExit {
    /// Its exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// The signal that ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// It has not ended yet.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub running: bool,
}

/// One reply line.
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
    pub body: ReplyBody,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded package is the folder `worker/`, module for module (a module added to the
    /// folder and not to the list, or the other way round, fails here), and its `_jit.py` is the
    /// `tilefit` package's.
    #[test]
    fn the_worker_package_is_the_folder() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/compile/worker");
        let mut folder: Vec<(String, String)> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "py"))
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(&p).unwrap())
            })
            .collect();
        folder.sort();
        let mut embedded: Vec<(String, String)> = WORKER_PACKAGE
            .iter()
            .map(|(n, t)| ((*n).to_owned(), (*t).to_owned()))
            .collect();
        embedded.sort();
        assert_eq!(folder, embedded);
        let shared =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python/tilefit/_jit.py");
        let jit = WORKER_PACKAGE
            .iter()
            .find(|(n, _)| *n == "_jit.py")
            .unwrap()
            .1;
        assert_eq!(std::fs::read_to_string(shared).unwrap(), jit);
        // The cache key's digest is the folder's modules, as one text in the package's order.
        let whole: String = WORKER_PACKAGE
            .iter()
            .map(|(name, _)| std::fs::read_to_string(dir.join(name)).unwrap())
            .collect();
        assert_eq!(
            worker_package_digest(),
            crate::digest::sha256(whole.as_bytes())
        );
    }

    /// Written twice over itself, the package stays whole and leaves no staged file.
    #[test]
    fn the_worker_package_writes_once_and_in_place() {
        let root =
            std::env::temp_dir().join(format!("tilefit-worker-package-{}", std::process::id()));
        write_worker_package(&root).unwrap();
        write_worker_package(&root).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(root.join("tilefit_worker"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let mut wanted: Vec<String> = WORKER_PACKAGE
            .iter()
            .map(|(n, _)| (*n).to_owned())
            .collect();
        wanted.sort();
        assert_eq!(names, wanted);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
