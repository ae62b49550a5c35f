//! The process exit codes, named in one place. Scripts and CI gates depend on these meaning one
//! thing each; nothing else in the binary writes a number into `ExitCode`.

use std::process::ExitCode;

/// Everything ran and no gate found a problem.
pub const OK: u8 = 0;
/// A gate (`--fail-on ...`) found a problem in the results.
pub const GATE_FAILED: u8 = 1;
/// The input was bad or the tool itself failed; no verdict can be trusted.
pub const BAD_INPUT_OR_TOOL_FAILURE: u8 = 2;

/// Turn a named code into the process's exit status.
pub fn exit(code: u8) -> ExitCode {
    ExitCode::from(code)
}
