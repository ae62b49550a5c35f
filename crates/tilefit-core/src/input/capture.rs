//! The records an emulated run writes (`tilefit capture`): the launches its host code made, the
//! calls that stopped, and the script's errors. The file comes from a process running the user's
//! code, so it is read as hostile: every string is checked before it becomes typed data, and a
//! record that does not parse is an error naming the file and the field.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::untrusted::{self, UntrustedError};

/// The records of one target's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Records {
    /// Python, torch and Triton versions of the run.
    #[serde(default)]
    pub versions: BTreeMap<String, String>,
    /// Every launch, in order.
    #[serde(default)]
    pub launches: Vec<Launch>,
    /// The scope files of the launched kernels, by the sha256 of their text: each defines its
    /// kernel from its source with the values its names had at the launch.
    #[serde(default)]
    pub scopes: BTreeMap<String, String>,
    /// Calls stopped where the host code needed what emulation lacks.
    #[serde(default)]
    pub stopped: Vec<Stopped>,
    /// Errors of the script that are not stops.
    #[serde(default)]
    pub errors: Vec<ScriptError>,
    /// Calls the script made (the script itself, and each `emulate.call`).
    #[serde(default)]
    pub calls: u64,
    /// Under pytest: each test's outcome under emulation.
    #[serde(default)]
    pub tests: Vec<TestOutcome>,
    /// Under pytest: how many tests the suite collected (before a split run took its share).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collected: Option<u64>,
    /// Value checks passed over: values a check read that emulation does not have.
    #[serde(default)]
    pub checks: Vec<ValueRead>,
    /// Values host code read that emulation does not have, assumed (declared, with the value).
    #[serde(default)]
    pub assumptions: Vec<ValueRead>,
    /// The process these records are of (the main process, or a child of the run).
    #[serde(default)]
    pub process: Option<ProcessName>,
    /// The script's exit status as the emulated run saw it (`sys.exit(4)`: 4).
    #[serde(default)]
    pub exit: Option<i64>,
    /// Whether the run reached its end (written last: records without it are not whole).
    #[serde(default)]
    pub complete: bool,
}

/// One test of a suite run under emulation (`pytest --tilefit-emulate`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestOutcome {
    /// The test's node id.
    pub nodeid: String,
    /// `passed`, `captured, passed`, `captured, not checked`, `stopped` or `failed`.
    pub outcome: String,
    /// Launches it made.
    #[serde(default)]
    pub launches: u64,
    /// Lines of its value checks passed over (not checked).
    #[serde(default)]
    pub checks: u64,
    /// Values it read that were assumed.
    #[serde(default)]
    pub assumptions: u64,
    /// Its stops (caught, or the one that ended it).
    #[serde(default)]
    pub stops: u64,
    /// Its index in the suite as pytest collected it (the same in every part of a split run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u64>,
    /// The file that defines it, relative to where pytest ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The line of its definition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// Seconds its set-up, call and tear-down took under emulation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
}

/// A value host code read that emulation does not have: a check's (passed over, not checked)
/// or an assumption (with the value assumed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValueRead {
    /// The call (under pytest, the test).
    #[serde(default)]
    pub call: Option<String>,
    /// The user's file where it was read.
    #[serde(default)]
    pub file: Option<String>,
    /// Its line.
    #[serde(default)]
    pub line: Option<u64>,
    /// What read it (`torch.testing.assert_close`, a tensor's value read on the host...).
    pub what: String,
    /// How many times that line read one.
    #[serde(default)]
    pub count: u64,
    /// The value assumed (an assumption's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// The process that read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// The thread that read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
}

/// A process of the run: the main one, or a child (a `fork`, `spawn` or `forkserver` process,
/// a Python `subprocess`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessName {
    /// Its name (`main`, `Process-1`, `python worker.py`).
    pub name: String,
    /// `main`, `fork`, `spawn`, `forkserver` or `subprocess`.
    pub kind: String,
}

/// A kernel as captured.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CapturedKernel {
    /// Its source file.
    pub file: String,
    /// The `@triton.jit` function's name.
    pub function: String,
    /// The module it was loaded as.
    #[serde(default)]
    pub module: String,
    /// The first line of its definition (its first decorator).
    pub line: u64,
    /// sha256 of its source.
    pub digest: String,
    /// Whether its module has it at module level (in the function's own globals).
    #[serde(default)]
    pub module_level: bool,
    /// The sha256 of its scope file ([`Records::scopes`]): what a compile loads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// A file and line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Site {
    /// The file.
    pub file: String,
    /// The line.
    pub line: u64,
}

/// An autotuned launch's part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutotuneRole {
    /// Which autotuned call (one per launch of the autotuner).
    pub group: u64,
    /// `candidate` (tried by the autotuner after pruning) or `chosen` (its only config).
    pub role: String,
    /// Configs in the autotune list.
    #[serde(default)]
    pub configs: u64,
    /// Configs the autotuner would try after pruning.
    #[serde(default)]
    pub tried: u64,
    /// The names the list's entries set (`BLOCK_M`...), not the heuristics'.
    #[serde(default)]
    pub keys: Vec<String>,
}

/// One argument as the JIT specializes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapturedArg {
    /// `*bf16`, `i32`, `fp32`, `u1`, `none`, `tensordesc`.
    #[serde(rename = "type")]
    pub ty: String,
    /// Value of a scalar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// A pointer's 16-byte alignment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aligned: Option<bool>,
    /// A tensor descriptor's element type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// A tensor descriptor's shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<u64>>,
    /// A tensor descriptor's strides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strides: Option<Vec<u64>>,
    /// A tensor descriptor's block shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_shape: Option<Vec<u64>>,
}

/// One frame of the chain from the user's call down to a launch.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Frame {
    /// The file.
    pub file: String,
    /// The line.
    pub line: u64,
    /// The function.
    pub function: String,
}

/// A kernel `torch.compile` generated: Inductor's name for it, what made its configs, and its
/// generated source file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct InductorKernel {
    /// Inductor's kernel name (`triton_poi_fused_...`, `triton_tem_fused_...`).
    pub kernel: String,
    /// What chose its configs: `pointwise`, `reduction`, `persistent-reduction` (heuristics
    /// for the device), `template` (a template's table for the device), ...
    pub kind: String,
    /// The generated module (under the run's Inductor cache).
    pub source: String,
    /// On the emulated device Inductor's own fit check left none of its configs: the compile
    /// fails there with this error (`No valid triton configs. OutOfResources: ...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_valid_configs: Option<String>,
    /// A choice of a max-autotune selection (`kind` `template-choice`): the selection it is one
    /// of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<InductorChoices>,
    /// The tile sizes the kernel's generated source sets in its body (a template's
    /// `BLOCK_M`, `BLOCK_N`...: constants, not arguments).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tiles: BTreeMap<String, u64>,
    /// Where none of its configs loaded, torch (2.15 and later) retried the last at this
    /// `num_stages` before failing: the launch's last compile is that retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<InductorRetry>,
}

/// Inductor's retry of a kernel none of whose configs loads, without software pipelining.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct InductorRetry {
    /// The stages of the retried config (1).
    pub num_stages: u64,
}

/// A max-autotune selection: Inductor's choices for one op on the device, each Triton template
/// choice judged (never benchmarked); a choice that does not fit is skipped there, and with none
/// left the ATen kernel runs or, without one, the compile fails.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct InductorChoices {
    /// The template (`triton_mm`, `triton_bmm`...).
    #[serde(default)]
    pub op: Option<String>,
    /// Every choice Inductor offered (Triton templates, ATen kernels, decompositions).
    pub of: u64,
    /// The Triton template choices among them (each a launch judged).
    pub triton: u64,
    /// The ATen kernel(s) the selection falls back to where no Triton choice fits (None: the
    /// compile fails with `NoValidChoicesError`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

/// A launch's Inductor part: the kernel, and the bytes Inductor's own compile of this config
/// for the emulated arch reported (a cross-check of tilefit's compile).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InductorLaunch {
    /// The kernel.
    #[serde(flatten)]
    pub kernel: InductorKernel,
    /// `metadata.shared` of Inductor's compile of this config, when it compiled.
    #[serde(default)]
    pub shared: Option<u64>,
    /// For a choice of a max-autotune selection: Inductor's description of its config.
    #[serde(default)]
    pub choice: Option<String>,
    /// A config Inductor added after the load, its R blocks halved for registers.
    #[serde(default)]
    pub rescaled: Option<InductorRescale>,
}

/// A reduction config Inductor adds once its configs are loaded (`_dynamic_scale_rblock`): where
/// a config's registers per thread leave fewer resident blocks than its grid has, a copy with
/// every R block halved is compiled and tried beside it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct InductorRescale {
    /// Registers per thread of the config it halved, as the load read them from its cubin.
    #[serde(default)]
    pub registers: Option<u64>,
    /// That config's R blocks (`R0_BLOCK`...), before halving.
    #[serde(default)]
    pub from: BTreeMap<String, u64>,
}

/// One launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Launch {
    /// The kernel.
    pub kernel: CapturedKernel,
    /// The user's call: the innermost frame of the user's own code (the script's folder).
    #[serde(default)]
    pub caller: Option<Site>,
    /// The frames from the user's call down to the launch, outermost first.
    #[serde(default)]
    pub chain: Vec<Frame>,
    /// A `warmup` call (compiles, does not run).
    #[serde(default)]
    pub warmup: bool,
    /// The call of the script it belongs to.
    #[serde(default)]
    pub call: Option<String>,
    /// Its part in an autotuned launch.
    #[serde(default)]
    pub autotune: Option<AutotuneRole>,
    /// Non-constexpr arguments.
    #[serde(default)]
    pub args: BTreeMap<String, CapturedArg>,
    /// Constexprs.
    #[serde(default)]
    pub constexprs: BTreeMap<String, Value>,
    /// Compile options the launch passed.
    #[serde(default)]
    pub options: BTreeMap<String, Value>,
    /// Module-level values the kernel body reads.
    #[serde(default)]
    pub globals: BTreeMap<String, Value>,
    /// The program grid.
    #[serde(default)]
    pub grid: Option<Vec<u64>>,
    /// Why the launch cannot be compiled from its values.
    #[serde(default)]
    pub unsupported: Option<String>,
    /// A kernel `torch.compile` generated: Inductor's part.
    #[serde(default)]
    pub inductor: Option<InductorLaunch>,
    /// The process that launched it.
    #[serde(default)]
    pub process: Option<String>,
    /// The thread that launched it.
    #[serde(default)]
    pub thread: Option<String>,
    /// The first value assumed before it (in its call): it was launched after that assumption.
    #[serde(default)]
    pub assumed: Option<Site>,
}

/// A call stopped where its host code needed what emulation lacks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stopped {
    /// The call.
    #[serde(default)]
    pub call: Option<String>,
    /// The user's file where it stopped.
    #[serde(default)]
    pub file: Option<String>,
    /// Its line.
    #[serde(default)]
    pub line: Option<u64>,
    /// Why.
    pub reason: String,
    /// The stop ended the script (it was not caught): what the script runs after it was never
    /// run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ended: bool,
    /// The process it happened in (absent: the main one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// The thread it happened in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
}

/// An error of the script that is not a stop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptError {
    /// The call.
    #[serde(default)]
    pub call: Option<String>,
    /// The exception.
    pub error: String,
    /// Its traceback.
    #[serde(default)]
    pub traceback: String,
    /// The user's file where it was raised (the innermost frame of the user's code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Its line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// The process it happened in (absent: the main one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// The thread it happened in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
}

/// Why the records could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    /// Unreadable, not JSON, or a string no field may hold.
    #[error(transparent)]
    Untrusted(#[from] UntrustedError),
    /// Not records.
    #[error("`{path}` is not tilefit capture records: {detail}")]
    Shape {
        /// The file.
        path: String,
        /// serde's words (the field).
        detail: String,
    },
}

impl crate::hint::Hint for RecordsError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            RecordsError::Untrusted(e) => e
                .field_hint()
                .unwrap_or("the emulated run's records are written by tilefit's own emulation; run the capture again")
                .to_owned(),
            RecordsError::Shape { .. } => {
                "the records are written by the tilefit emulation of the same release: run `tilefit capture` again".to_owned()
            }
        })
    }
}

/// Read one run's records. A string holding a control character (a kernel's global message with
/// a tab, a coloured exception) is kept as its escaped text, never a lost target. A scope file
/// whose text is not the digest it is filed under is an error naming it; a launch naming a scope
/// the records do not hold cannot be compiled, and says so.
pub fn read(path: &Path) -> Result<Records, RecordsError> {
    of_value(untrusted::read_json_escaping(path)?, path)
}

impl Records {
    /// No records.
    pub fn empty() -> Records {
        serde_json::from_value(serde_json::json!({})).expect("every field has a default")
    }
}

/// Records from a JSON value already read from `path` (a records file, or a shard report's
/// records of a target), checked as [`read`] checks a file.
pub fn of_value(value: Value, path: &Path) -> Result<Records, RecordsError> {
    let mut records: Records = serde_json::from_value(value).map_err(|e| RecordsError::Shape {
        path: path.display().to_string(),
        detail: e.to_string(),
    })?;
    for (digest, text) in &records.scopes {
        if crate::digest::sha256(text.as_bytes()) != *digest {
            return Err(RecordsError::Shape {
                path: path.display().to_string(),
                detail: format!(
                    "field `scopes.{}` does not hold the text of that digest",
                    crate::escape::control(digest)
                ),
            });
        }
    }
    for (i, launch) in records.launches.iter().enumerate() {
        let names = std::iter::once(("kernel.function", &launch.kernel.function))
            .chain(launch.args.keys().map(|k| ("args", k)))
            .chain(launch.constexprs.keys().map(|k| ("constexprs", k)))
            .chain(launch.options.keys().map(|k| ("options", k)))
            .chain(launch.globals.keys().map(|k| ("globals", k)));
        for (field, name) in names {
            if !is_identifier(name) {
                return Err(RecordsError::Shape {
                    path: path.display().to_string(),
                    detail: format!(
                        "field `launches[{i}].{field}` holds a name that is not a Python identifier (`{}`); names become file names and spec keys",
                        crate::escape::control(name)
                    ),
                });
            }
        }
    }
    for launch in &mut records.launches {
        if launch.unsupported.is_none() {
            match &launch.kernel.scope {
                Some(digest) if records.scopes.contains_key(digest) => {}
                Some(_) => {
                    launch.unsupported =
                        Some("the records hold no scope file for its kernel".to_owned());
                }
                None => {
                    launch.unsupported =
                        Some("the records give no scope for its kernel".to_owned());
                }
            }
        }
    }
    Ok(records)
}

/// Whether `name` is a Python identifier: a letter or `_`, then letters, digits or `_`.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_records_are_identifiers() {
        assert!(is_identifier("_fwd_kernel_stage1"));
        assert!(is_identifier("k2"));
        for bad in ["", "../../x", "a b", "2k", "k.py", "a/b", "k\n"] {
            assert!(!is_identifier(bad), "{bad}");
        }
        let error = read_text(
            "identifier",
            r#"{"launches": [{"kernel": {"file": "a.py", "function": "../../x", "line": 1, "digest": "x"}}]}"#,
        );
        assert!(error.contains("launches[0].kernel.function"), "{error}");
    }

    fn read_text(name: &str, text: &str) -> String {
        let path = std::env::temp_dir().join(format!(
            "tilefit-records-{}-{name}.json",
            std::process::id()
        ));
        std::fs::write(&path, text).unwrap();
        let error = read(&path).unwrap_err().to_string();
        let _ = std::fs::remove_file(&path);
        error
    }

    #[test]
    fn a_string_with_a_control_character_is_one_escaped_field() {
        let path = std::env::temp_dir().join(format!(
            "tilefit-records-{}-escaped.json",
            std::process::id()
        ));
        std::fs::write(
            &path,
            r#"{"launches": [{"kernel": {"file": "a\u001b[31m.py", "function": "k", "line": 1, "digest": "x"}, "globals": {"MSG": "bad\tvalue\n"}}], "errors": [{"error": "\u001b[31mboom\u001b[0m\r", "traceback": "a\tb"}]}"#,
        )
        .unwrap();
        let records = read(&path);
        let _ = std::fs::remove_file(&path);
        let records = records.unwrap();
        assert_eq!(records.launches[0].kernel.file, "a\\u{1b}[31m.py");
        assert_eq!(records.launches[0].globals["MSG"], "bad\\tvalue\\n");
        // A message keeps its text: every renderer escapes it when it prints.
        assert_eq!(records.errors[0].error, "\u{1b}[31mboom\u{1b}[0m\r");
        assert_eq!(records.errors[0].traceback, "a\tb");
    }

    #[test]
    fn a_record_of_another_shape_names_the_field() {
        let error = read_text("shape", r#"{"launches": [{"kernel": {"file": "a.py"}}]}"#);
        assert!(error.contains("function"), "{error}");
    }
}
