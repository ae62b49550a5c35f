//! A capture as JUnit XML, the per-test format CI systems show (GitLab, Jenkins, Azure, GitHub's
//! test reporters): one `<testsuite>` per target, one `<testcase>` per test and target (a
//! script's run: one case per target), failing with the kernel, the bytes, the budget and the
//! fix (`judge::capture_tests`). A test marked to fail that failed is skipped, as pytest's own
//! JUnit writes it. What fails a target outside every test is the suite's own case. Every value
//! is escaped for XML, and characters XML cannot hold are dropped.

use std::fmt::Write as _;

use crate::judge::capture_tests::{suite_failures, test_verdicts};
use crate::model::capture::{CaptureReport, LaunchVerdict, TargetCapture};

use super::Exporter;

/// The JUnit exporter.
pub struct Junit;

/// `text` as XML attribute or element text: markup escaped, characters XML 1.0 cannot hold
/// (controls other than tab and newlines) dropped.
pub fn xml_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || matches!(c as u32, 0xFFFE | 0xFFFF) => {}
            c => out.push(c),
        }
    }
    out
}

/// The class name JUnit groups a test under: its module path (`test/ops/test_x.py::test_y` is
/// `test.ops.test_x`).
fn class_name(nodeid: &str) -> String {
    let file = nodeid.split("::").next().unwrap_or(nodeid);
    file.trim_end_matches(".py").replace(['/', '\\'], ".")
}

/// The test's name after its file, with the target (`test_y[a-b] [h100]`).
fn case_name(nodeid: &str, device: &str) -> String {
    let name = nodeid.split_once("::").map_or(nodeid, |(_, rest)| rest);
    format!("{name} [{device}]")
}

struct Case {
    class: String,
    name: String,
    file: Option<(String, u64)>,
    seconds: f64,
    failures: Vec<(String, String)>,
    skipped: Option<String>,
    out: Option<String>,
}

fn cases(report: &CaptureReport, target: &TargetCapture) -> Vec<Case> {
    let device = &target.device.device;
    let mut cases = Vec::new();
    for test in test_verdicts(target) {
        cases.push(Case {
            class: class_name(&test.nodeid),
            name: case_name(&test.nodeid, device),
            file: test.site.clone(),
            seconds: test.seconds,
            failures: test
                .failures
                .iter()
                .map(|f| (f.kind.to_owned(), f.message.clone()))
                .collect(),
            // One outcome a case: a launch that would crash the engine fails even a test marked
            // to fail (the gate fails on it too).
            skipped: if !test.failures.is_empty() {
                None
            } else if test.expected_failure {
                Some("marked to fail (xfail), and it failed".to_owned())
            } else if test.outcome == "skipped" {
                Some("skipped".to_owned())
            } else {
                None
            },
            out: Some(format!(
                "{}: {} launches, {} value checks not checked (emulation has no data)",
                test.outcome, test.launches, test.checks
            )),
        });
    }
    let suite = suite_failures(target);
    if target.tests.is_empty() || !suite.is_empty() {
        // A script's run, or what fails a suite outside every test.
        let name = if target.tests.is_empty() {
            report.script.clone()
        } else {
            format!("{} (the suite itself)", report.script)
        };
        let failures = if target.tests.is_empty() {
            target
                .failures
                .iter()
                .map(|f| (f.code.as_str().to_owned(), f.message.clone()))
                .chain(crash_failures(target))
                .collect()
        } else {
            suite.into_iter().map(|m| ("suite".to_owned(), m)).collect()
        };
        cases.push(Case {
            class: "tilefit.capture".to_owned(),
            name: format!("{name} [{device}]"),
            file: None,
            seconds: target.script.as_ref().map_or(0.0, |s| s.seconds),
            failures,
            skipped: None,
            out: None,
        });
    }
    cases
}

/// A script's launches that crash the engine, as failures.
fn crash_failures(target: &TargetCapture) -> Vec<(String, String)> {
    target
        .launches
        .iter()
        .filter(|l| l.verdict.crashes())
        .map(|l| {
            let kind = match l.verdict {
                LaunchVerdict::OverThreads => "over-thread-limit",
                _ => "over-budget",
            };
            (
                kind.to_owned(),
                crate::judge::capture_tests::crash_text(target, l),
            )
        })
        .collect()
}

fn write_case(xml: &mut String, case: &Case) {
    let _ = write!(
        xml,
        "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
        xml_text(&case.class),
        xml_text(&case.name),
        case.seconds
    );
    if let Some((file, line)) = &case.file {
        let _ = write!(xml, " file=\"{}\" line=\"{line}\"", xml_text(file));
    }
    xml.push_str(">\n");
    if let Some(why) = &case.skipped {
        let _ = writeln!(xml, "      <skipped message=\"{}\"/>", xml_text(why));
    }
    if let Some((kind, first)) = case.failures.first() {
        let all: Vec<&str> = case.failures.iter().map(|(_, m)| m.as_str()).collect();
        let _ = writeln!(
            xml,
            "      <failure type=\"{}\" message=\"{}\">{}</failure>",
            xml_text(kind),
            xml_text(first),
            xml_text(&all.join("\n"))
        );
    }
    if let Some(out) = &case.out {
        let _ = writeln!(xml, "      <system-out>{}</system-out>", xml_text(out));
    }
    xml.push_str("    </testcase>\n");
}

impl Exporter<CaptureReport> for Junit {
    fn export(&self, report: &CaptureReport) -> String {
        let suites: Vec<(&TargetCapture, Vec<Case>)> = report
            .targets
            .iter()
            .map(|t| (t, cases(report, t)))
            .collect();
        let count = |pick: &dyn Fn(&Case) -> bool| -> usize {
            suites
                .iter()
                .flat_map(|(_, c)| c)
                .filter(|c| pick(c))
                .count()
        };
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            xml,
            "<testsuites name=\"tilefit capture {}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">",
            xml_text(&report.script),
            count(&|_| true),
            count(&|c| !c.failures.is_empty()),
            count(&|c| c.skipped.is_some()),
        );
        for (target, cases) in &suites {
            let seconds: f64 = cases.iter().map(|c| c.seconds).sum();
            let _ = writeln!(
                xml,
                "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{seconds:.3}\">",
                xml_text(&format!(
                    "{} ({})",
                    target.device.device, target.device.arch
                )),
                cases.len(),
                cases.iter().filter(|c| !c.failures.is_empty()).count(),
                cases.iter().filter(|c| c.skipped.is_some()).count(),
            );
            let _ = writeln!(
                xml,
                "    <properties><property name=\"device\" value=\"{}\"/><property name=\"arch\" value=\"{}\"/><property name=\"triton\" value=\"{}\"/></properties>",
                xml_text(&target.device.device),
                xml_text(&target.device.arch),
                xml_text(&report.triton_version)
            );
            for case in cases {
                write_case(&mut xml, case);
            }
            xml.push_str("  </testsuite>\n");
        }
        xml.push_str("</testsuites>\n");
        xml
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_text_escapes_markup_and_drops_what_xml_cannot_hold() {
        assert_eq!(
            xml_text("a<b>&\"c'\u{1b}[31m\n"),
            "a&lt;b&gt;&amp;&quot;c&apos;[31m\n"
        );
    }

    #[test]
    fn a_test_is_named_by_its_module_and_target() {
        assert_eq!(
            class_name("test/ops/test_x.py::test_y[a]"),
            "test.ops.test_x"
        );
        assert_eq!(
            case_name("test/ops/test_x.py::Cls::test_y[a]", "h100"),
            "Cls::test_y[a] [h100]"
        );
    }
}
