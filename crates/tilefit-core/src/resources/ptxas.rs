//! ptxas's verbose log (`-v`, which Triton always passes): the only place spill bytes exist. The
//! cubin keeps the stack frame (spills and local arrays together), not the spills themselves.
//!
//! ```text
//! ptxas info    : Compiling entry function 'matmul_kernel' for 'sm_90a'
//! ptxas info    : Function properties for matmul_kernel
//!     96 bytes stack frame, 100 bytes spill stores, 96 bytes spill loads
//! ptxas info    : Used 255 registers, used 1 barriers, 96 bytes cumulative stack size
//! ```

use std::sync::LazyLock;

use regex::Regex;

/// What ptxas said of one function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PtxasReport {
    /// "N bytes stack frame".
    pub stack_frame: Option<u64>,
    /// "N bytes spill stores".
    pub spill_stores: Option<u64>,
    /// "N bytes spill loads".
    pub spill_loads: Option<u64>,
    /// "Used N registers".
    pub registers: Option<u32>,
}

static PROPERTIES: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"Function properties for (\S+)").expect("valid"));
static FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
        .expect("valid")
});
static ENTRY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"Compiling entry function '([^']+)'").expect("valid"));
static USED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"Used (\d+) registers").expect("valid"));

/// The report for `function`, or `None` when the log does not mention it.
pub fn parse(log: &str, function: &str) -> Option<PtxasReport> {
    let mut report = PtxasReport::default();
    let mut seen = false;
    let mut current: Option<String> = None;
    let mut lines = log.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(c) = ENTRY.captures(line) {
            current = Some(c[1].to_owned());
        }
        if let Some(c) = PROPERTIES.captures(line) {
            current = Some(c[1].to_owned());
            if &c[1] == function
                && let Some(next) = lines.peek()
                && let Some(f) = FRAME.captures(next)
            {
                seen = true;
                report.stack_frame = f[1].parse().ok();
                report.spill_stores = f[2].parse().ok();
                report.spill_loads = f[3].parse().ok();
            }
        }
        if current.as_deref() == Some(function)
            && let Some(c) = USED.captures(line)
        {
            seen = true;
            report.registers = c[1].parse().ok();
        }
    }
    seen.then_some(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "ptxas-blackwell info    : 0 bytes gmem\n\
ptxas-blackwell info    : Compiling entry function 'matmul_kernel' for 'sm_120a'\n\
ptxas-blackwell info    : Function properties for matmul_kernel\n    \
440 bytes stack frame, 588 bytes spill stores, 564 bytes spill loads\n\
ptxas-blackwell info    : Used 255 registers, used 1 barriers, 440 bytes cumulative stack size\n";

    #[test]
    fn reads_the_frame_spills_and_registers() {
        assert_eq!(
            parse(LOG, "matmul_kernel"),
            Some(PtxasReport {
                stack_frame: Some(440),
                spill_stores: Some(588),
                spill_loads: Some(564),
                registers: Some(255),
            })
        );
        assert_eq!(parse(LOG, "other"), None);
        assert_eq!(parse("", "matmul_kernel"), None);
    }
}
