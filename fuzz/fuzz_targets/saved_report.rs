//! Saved reports from elsewhere (probe, replay, Triton version matrix): any JSON is refused or read;
//! one whose strings pass the check is rendered in every text format and gated; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tilefit_core::model::matrix::MatrixReport;
use tilefit_core::model::probe::ProbeReport;
use tilefit_core::model::replay::ReplayReport;
use tilefit_core::judge::findings::Findings;
use tilefit_core::judge::gate::{Gate, Rule};
use tilefit_core::render::{Exporter, GithubAnnotations, Markdown, Terminal};

/// The library's gate with every rule, its summary line and its annotations.
fn gate(report: &dyn Findings) {
    let rules = [
        "over-budget",
        "compile-error",
        "near-budget",
        "over-thread-limit",
        "spills",
        "unmapped-files",
        "baseline",
        "none-fits",
    ]
    .map(|rule| Rule::parse(rule).expect("a rule"))
    .to_vec();
    let gate = Gate {
        rules,
        ..Gate::default()
    };
    let _ = gate.judge(report).summary();
    let _ = GithubAnnotations { roots: Vec::new() }.export(&gate.annotated(report));
    let _ = report.subject().compare(&report.subject());
}

fuzz_target!(|data: &[u8]| {
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    if tilefit_core::input::untrusted::check_strings(&json).is_err() {
        return;
    }
    if let Ok(report) = serde_json::from_value::<ProbeReport>(json.clone()) {
        let _ = Terminal.export(&report);
        let _ = Markdown.export(&report);
        gate(&report);
    }
    if let Ok(report) = serde_json::from_value::<ReplayReport>(json.clone()) {
        let _ = Terminal.export(&report);
        let _ = Markdown.export(&report);
        gate(&report);
    }
    if let Ok(report) = serde_json::from_value::<MatrixReport>(json) {
        let _ = Terminal.export(&report);
        let _ = Markdown.export(&report);
    }
});
