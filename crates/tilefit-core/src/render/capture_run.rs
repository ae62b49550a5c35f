//! What a capture's report says of the run beyond its launches: where each launch was made (a
//! thread, a child process), the values host code read that emulation does not have (checks
//! passed over, values assumed, and the launches made after an assumption), the run's child
//! processes, and under pytest the table of tests with their launches, checks, assumptions and
//! stops. Every value from the script's process is escaped by the caller's drawer.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::escape::control;
use crate::input::capture::ValueRead;
use crate::judge::capture::file_name;
use crate::model::capture::{LaunchReport, TargetCapture};
use crate::units::counted;

/// The places a launch row names beside its line: nothing for the main thread of the main
/// process alone.
pub fn places(launch: &LaunchReport) -> Option<String> {
    let shown: Vec<&str> = launch
        .places
        .iter()
        .map(String::as_str)
        .filter(|p| *p != "main / MainThread")
        .collect();
    if shown.is_empty() {
        return None;
    }
    let main = launch.places.iter().any(|p| p == "main / MainThread");
    let mut text = shown.join(", ");
    if main {
        text = format!("main / MainThread, {text}");
    }
    Some(text)
}

/// `after an assumed value at x.py:12`: a launch made after a value was assumed.
pub fn assumed(launch: &LaunchReport) -> Option<String> {
    launch.assumed.as_ref().map(|site| {
        format!(
            "after an assumed value at {}",
            site_text(Some(site.file.as_str()), Some(site.line))
        )
    })
}

fn site_text(file: Option<&str>, line: Option<u64>) -> String {
    match (file, line) {
        (Some(f), Some(l)) => format!("{}:{l}", file_name(f)),
        _ => "?".to_owned(),
    }
}

fn read_where(read: &ValueRead) -> String {
    let mut text = site_text(read.file.as_deref(), read.line);
    match (read.process.as_deref(), read.thread.as_deref()) {
        (Some("main") | None, Some("MainThread") | None) => {}
        (p, t) => {
            let _ = write!(
                text,
                " [{} / {}]",
                p.unwrap_or("main"),
                t.unwrap_or("MainThread")
            );
        }
    }
    text
}

fn times(count: u64) -> String {
    if count > 1 {
        format!(" (x{count})")
    } else {
        String::new()
    }
}

/// The notes of the run: checks, assumptions, children, and the tests' table.
pub fn notes(target: &TargetCapture, out: &mut String, prefix: &str) {
    for check in &target.checks {
        let _ = writeln!(
            out,
            "{prefix}not checked at {}{}: {} (kernel outputs have no data under emulation; the run went on past it)",
            control(&read_where(check)),
            times(check.count),
            control(&check.what)
        );
    }
    for assumption in &target.assumptions {
        let value = assumption
            .value
            .as_ref()
            .map_or_else(|| "?".to_owned(), ToString::to_string);
        let _ = writeln!(
            out,
            "{prefix}assumed at {}{}: {} = {} (no data for it under emulation; every launch after it is marked)",
            control(&read_where(assumption)),
            times(assumption.count),
            control(&assumption.what),
            control(&value)
        );
    }
    for child in &target.children {
        let state = child.failure.as_deref().map_or_else(
            || {
                counted(child.launches, "launch", "launches")
                    + &child
                        .exit
                        .map_or_else(String::new, |c| format!(", exit {c}"))
            },
            |why| format!("NO RECORDS: {why}"),
        );
        let _ = writeln!(
            out,
            "{prefix}child process {} ({}): {}",
            control(&child.process.name),
            control(&child.process.kind),
            control(&state)
        );
    }
    tests(target, out, prefix);
}

/// Under pytest: one line a test, with its launches, checks, assumptions and stops, then the
/// count of each outcome.
fn tests(target: &TargetCapture, out: &mut String, prefix: &str) {
    for test in &target.tests {
        let _ = writeln!(
            out,
            "{prefix}test {}: {}; {}, {} not checked, {}, {}",
            control(&test.nodeid),
            control(&test.outcome),
            counted(test.launches, "launch", "launches"),
            counted(test.checks, "check", "checks"),
            counted(test.assumptions, "assumption", "assumptions"),
            counted(test.stops, "stop", "stops")
        );
    }
    if !target.tests.is_empty() {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for test in &target.tests {
            *counts.entry(test.outcome.as_str()).or_default() += 1;
        }
        let parts: Vec<String> = counts.iter().map(|(o, n)| format!("{n} {o}")).collect();
        let _ = writeln!(
            out,
            "{prefix}{} tests: {}",
            target.tests.len(),
            control(&parts.join("; "))
        );
    }
}

/// Under pytest, in Markdown: how many tests pass on the target, and a row per test that fails
/// (its verdict from `judge::capture_tests`): the first reason, and how many more.
pub fn failing_tests_markdown(target: &TargetCapture, md: &dyn Fn(&str) -> String) -> String {
    let verdicts = crate::judge::capture_tests::test_verdicts(target);
    if verdicts.is_empty() {
        return String::new();
    }
    let failing: Vec<_> = verdicts.iter().filter(|t| !t.failures.is_empty()).collect();
    let mut out = format!(
        "\n{} of {} tests pass on {}.\n",
        verdicts.len() - failing.len(),
        verdicts.len(),
        md(&target.device.device)
    );
    if !failing.is_empty() {
        out.push_str("\n| test | fails | why |\n|---|---|---|\n");
        for test in failing {
            let first = &test.failures[0];
            let more = match test.failures.len() - 1 {
                0 => String::new(),
                n => format!(" (and {n} more)"),
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | {}{more} |",
                md(&test.nodeid).replace('`', "'"),
                first.kind,
                md(&first.message)
            );
        }
    }
    out
}

/// The summary's words for the run's stops (how many the script caught and went on from),
/// checks passed over and values assumed.
pub fn summary_counts(targets: &[TargetCapture]) -> String {
    let stops: usize = targets.iter().map(|t| t.stopped.len()).sum();
    let caught: usize = targets
        .iter()
        .flat_map(|t| &t.stopped)
        .filter(|s| !s.ended)
        .count();
    let checks: u64 = targets
        .iter()
        .flat_map(|t| &t.checks)
        .map(|c| c.count)
        .sum();
    let assumed: u64 = targets
        .iter()
        .flat_map(|t| &t.assumptions)
        .map(|c| c.count)
        .sum();
    let mut text = counted(stops as u64, "stop", "stops");
    if caught > 0 {
        let _ = write!(text, ", {caught} caught and gone on from");
    }
    let _ = write!(
        text,
        "; {} not checked; {}",
        counted(checks, "check", "checks"),
        counted(assumed, "value assumed", "values assumed")
    );
    text
}
