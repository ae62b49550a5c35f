//! The gate: which findings of a report fail a CI run. Rules (`--fail-on`) pick findings from a
//! report's [`Findings`]; a baseline report (`--baseline`) takes away the ones it already had;
//! shipped configs (`--shipped`) say what `baseline` judges. The result is an [`Outcome`], data
//! that the binary turns into an exit code and the GitHub exporter into annotations. Each finding
//! carries its file and line (a config file's entry, or the kernel's decorator), so no renderer
//! reads a file.

use std::collections::{BTreeMap, HashSet};

use super::findings::{Findings, SubjectKey};
use crate::fix::ConfigExport;
use crate::input::locate;
use crate::model::verdict::VerdictCode;
use crate::units::format_count;

/// Share of the budget from which a fitting config counts as near the cliff.
pub const NEAR_BUDGET_FRACTION: f64 = 0.9;

/// One rule of `--fail-on`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// Any config or kernel over any listed device's per-block budget.
    OverBudget,
    /// Any compile error (unsupported-on-target included).
    CompileError,
    /// Any config that fits but uses at least this share (0..1] of a device's budget.
    NearBudget(f64),
    /// Any config whose block has more threads (num_warps x warp size) than the device allows,
    /// or than its registers leave (`--resources full`).
    OverThreadLimit,
    /// Any config that spills registers to local memory (`--resources full`).
    Spills,
    /// Any config file whose device name does not resolve, or that cannot be read
    /// (`[sweep] from_files`): where an engine falls back to default configs.
    UnmappedFiles,
    /// Any config file, or entry of one, that could not be read or was left out (a link, a
    /// file that is not JSON, an entry with a `NaN`): configs nobody judged. `--emit-files`
    /// turns it on, since it cannot fix what it could not read.
    UnreadableFiles,
    /// The shipped config misses a device: the spec's baseline (or `--shipped`'s config for the
    /// device's arch), or a config file's entry on its own device.
    Baseline,
    /// A device is left with no fitting entry in an autotune list or a config file.
    NoneFits,
    /// A call of a captured script stopped where it needed what emulation lacks.
    Stopped,
    /// No rule: report only (a capture's default rules off; it still fails closed).
    Nothing,
}

/// The rules annotated when `--fail-on` names none: the findings that crash engines.
pub const ANNOTATED_BY_DEFAULT: [Rule; 3] = [Rule::Baseline, Rule::NoneFits, Rule::UnmappedFiles];

impl Rule {
    /// The rule as `--fail-on` names it.
    pub fn name(self) -> String {
        match self {
            Rule::OverBudget => "over-budget".to_owned(),
            Rule::CompileError => "compile-error".to_owned(),
            Rule::NearBudget(share) => format!("near-budget={:.0}", share * 100.0),
            Rule::OverThreadLimit => "over-thread-limit".to_owned(),
            Rule::Spills => "spills".to_owned(),
            Rule::UnmappedFiles => "unmapped-files".to_owned(),
            Rule::UnreadableFiles => "unreadable-files".to_owned(),
            Rule::Baseline => "baseline".to_owned(),
            Rule::NoneFits => "none-fits".to_owned(),
            Rule::Stopped => "stopped".to_owned(),
            Rule::Nothing => "none".to_owned(),
        }
    }

    /// `over-budget`, `compile-error`, `near-budget` (90%), `near-budget=PCT`, ...
    pub fn parse(text: &str) -> Result<Rule, String> {
        match text.split_once('=') {
            None if text == "over-budget" => Ok(Rule::OverBudget),
            None if text == "compile-error" => Ok(Rule::CompileError),
            None if text == "over-thread-limit" => Ok(Rule::OverThreadLimit),
            None if text == "spills" => Ok(Rule::Spills),
            None if text == "unmapped-files" => Ok(Rule::UnmappedFiles),
            None if text == "unreadable-files" => Ok(Rule::UnreadableFiles),
            None if text == "baseline" => Ok(Rule::Baseline),
            None if text == "none-fits" => Ok(Rule::NoneFits),
            None if text == "stopped" => Ok(Rule::Stopped),
            None if text == "none" => Ok(Rule::Nothing),
            None if text == "near-budget" => Ok(Rule::NearBudget(NEAR_BUDGET_FRACTION)),
            Some(("near-budget", percent)) => match percent.trim_end_matches('%').parse::<f64>() {
                Ok(p) if p > 0.0 && p <= 100.0 => Ok(Rule::NearBudget(p / 100.0)),
                _ => Err(format!(
                    "`{percent}` is not a percentage in (0, 100]: write `near-budget=85`"
                )),
            },
            _ => Err(format!(
                "`{text}` is not a gate: use over-budget, compile-error, near-budget, near-budget=PCT, over-thread-limit, spills, unmapped-files, unreadable-files, baseline, none-fits, stopped or none"
            )),
        }
    }

    /// What the rule's findings have in common, for the gate's line: `over budget`.
    fn what(self) -> String {
        match self {
            Rule::OverBudget => "over budget".to_owned(),
            Rule::CompileError => "do not compile".to_owned(),
            Rule::OverThreadLimit => {
                "launch more threads per block than the device allows".to_owned()
            }
            Rule::Spills => "spill registers to local memory".to_owned(),
            Rule::UnmappedFiles => "config files map to no device".to_owned(),
            Rule::UnreadableFiles => "config files or entries could not be read".to_owned(),
            Rule::Baseline => "shipped configs miss a device".to_owned(),
            Rule::NoneFits => "lists leave a device with no config that fits".to_owned(),
            Rule::Stopped => "captured calls stopped before their launches".to_owned(),
            Rule::Nothing => "nothing (report only)".to_owned(),
            Rule::NearBudget(share) => {
                format!("fit but use {:.0}% or more of the budget", share * 100.0)
            }
        }
    }
}

impl std::str::FromStr for Rule {
    type Err = String;

    fn from_str(text: &str) -> Result<Rule, String> {
        Rule::parse(text)
    }
}

/// Where a finding is, for an annotation: the file as the report names it, and the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The config file, or the kernel's source file.
    pub file: String,
    /// The entry's line (`"256": {`), or the kernel's `@triton.autotune`/`@triton.jit` line.
    pub line: Option<usize>,
}

/// One finding of a rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The rule that found it.
    pub rule: Rule,
    /// What `--baseline` compares: (rule, what it is about, device), as data.
    pub key: (String, SubjectKey, String),
    /// The words the gate line and the annotation use.
    pub text: String,
    /// Where it is, when the report says.
    pub location: Option<Location>,
    /// A second place it concerns (a captured launch's kernel, beside its launching line).
    pub also: Option<Location>,
}

/// What the gate compares and against what.
#[derive(Default)]
pub struct Gate {
    /// The rules (`--fail-on`).
    pub rules: Vec<Rule>,
    /// The configs shipped per arch (`--shipped`, an `--emit-configs` export), for `baseline`.
    pub shipped: Option<ConfigExport>,
    /// A report saved before (`--baseline OLD.json`): only findings it does not have fail.
    pub baseline: Option<Box<dyn Findings>>,
}

/// What the gate came to for one report.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The new findings of each rule, in rule order (rules without findings included).
    pub by_rule: Vec<(Rule, Vec<Finding>)>,
    /// Findings the baseline report already had (they do not fail).
    pub known: usize,
    /// Jobs whose worker faulted or that an interrupt stopped, of all jobs: FAILED cells.
    pub failed_jobs: (usize, usize),
}

impl Outcome {
    /// Every new finding.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.by_rule.iter().flat_map(|(_, found)| found)
    }

    /// Whether any rule found something new.
    pub fn failed(&self) -> bool {
        self.findings().next().is_some()
    }

    /// The gate's line: `gate failed (3 findings): 2 over budget: ..., ...; 1 do not compile: ...`.
    pub fn summary(&self) -> Option<String> {
        let mut parts = Vec::new();
        let mut total = 0;
        for (rule, found) in &self.by_rule {
            if found.is_empty() {
                continue;
            }
            total += found.len();
            let examples: Vec<&str> = found.iter().take(3).map(|f| f.text.as_str()).collect();
            let more = if found.len() > examples.len() {
                ", ..."
            } else {
                ""
            };
            parts.push(format!(
                "{} {}: {}{more}",
                found.len(),
                rule.what(),
                examples.join(", ")
            ));
        }
        (!parts.is_empty()).then(|| format!("gate failed ({total} findings): {}", parts.join("; ")))
    }
}

impl Gate {
    /// The gate of `rules` over `report`.
    pub fn judge(&self, report: &dyn Findings) -> Outcome {
        self.outcome(&self.rules, report)
    }

    /// The findings to annotate: the gate's rules, or without any the ones that crash engines
    /// ([`ANNOTATED_BY_DEFAULT`]).
    pub fn annotated(&self, report: &dyn Findings) -> Outcome {
        if self.rules.is_empty() {
            self.outcome(&ANNOTATED_BY_DEFAULT, report)
        } else {
            self.judge(report)
        }
    }

    fn outcome(&self, rules: &[Rule], report: &dyn Findings) -> Outcome {
        let mut known = 0;
        let mut by_rule = Vec::new();
        let mut lines = Lines::default();
        for &rule in rules {
            let mut found = findings_of(rule, report, self.shipped.as_ref(), &mut lines);
            if let Some(old) = &self.baseline {
                let before: HashSet<(String, SubjectKey, String)> = findings_of(
                    rule,
                    old.as_ref(),
                    self.shipped.as_ref(),
                    &mut Lines::skip(),
                )
                .into_iter()
                .map(|f| f.key)
                .collect();
                let all = found.len();
                found.retain(|f| !before.contains(&f.key));
                known += all - found.len();
            }
            by_rule.push((rule, found));
        }
        Outcome {
            by_rule,
            known,
            failed_jobs: report.failed_jobs(),
        }
    }
}

/// Lines found in files, read once per file; or none read at all (a baseline's findings only
/// need their keys).
#[derive(Default)]
struct Lines {
    skip: bool,
    texts: BTreeMap<String, Option<String>>,
}

impl Lines {
    fn skip() -> Lines {
        Lines {
            skip: true,
            texts: BTreeMap::new(),
        }
    }

    fn text(&mut self, path: &str) -> Option<&str> {
        if self.skip {
            return None;
        }
        self.texts
            .entry(path.to_owned())
            .or_insert_with(|| read_source(path))
            .as_deref()
    }

    /// A config file's entry: the file and the line of `"KEY": {`.
    fn entry(&mut self, path: &str, key: &str) -> Location {
        let line = self.text(path).and_then(|t| locate::entry_line(t, key));
        Location {
            file: path.to_owned(),
            line,
        }
    }

    /// The kernel: the file and the line of its `@triton.autotune` (when `autotune`) or
    /// `@triton.jit` decorator.
    fn kernel(&mut self, kernel: Option<&(String, String)>, autotune: bool) -> Option<Location> {
        let (path, function) = kernel?;
        let line = self
            .text(path)
            .and_then(|t| locate::decorator_line(t, function, autotune));
        Some(Location {
            file: path.clone(),
            line,
        })
    }
}

/// The largest file read to place a finding: a saved report names its files, and one from
/// elsewhere may name `/dev/zero` or a huge file; those are placed without a line.
const MAX_SOURCE_BYTES: u64 = 16 * 1024 * 1024;

/// A kernel or config file's text, when it is a regular file of at most [`MAX_SOURCE_BYTES`].
fn read_source(path: &str) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_SOURCE_BYTES {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// What one rule finds in a report, each finding once.
fn findings_of(
    rule: Rule,
    report: &dyn Findings,
    shipped: Option<&ConfigExport>,
    lines: &mut Lines,
) -> Vec<Finding> {
    let name = rule.name();
    let kernel = report.kernel_source();
    let at_kernel = |lines: &mut Lines| lines.kernel(kernel.as_ref(), rule == Rule::NoneFits);
    let finding =
        |subject: SubjectKey, device: &str, text: String, location: Option<Location>| Finding {
            rule,
            key: (name.clone(), subject, device.to_owned()),
            text,
            location,
            also: None,
        };
    let mut found: Vec<Finding> = Vec::new();
    match rule {
        Rule::Stopped => {
            for (device, text) in report.stopped_calls() {
                found.push(finding(SubjectKey::File(text.clone()), &device, text, None));
            }
        }
        Rule::UnmappedFiles | Rule::UnreadableFiles => {
            let files = if rule == Rule::UnmappedFiles {
                report.unmapped_files()
            } else {
                report.unreadable_files()
            };
            for file in files {
                let location = at_kernel(lines);
                found.push(finding(SubjectKey::File(file.clone()), "", file, location));
            }
        }
        Rule::Baseline | Rule::NoneFits => {
            let misses = if rule == Rule::Baseline {
                report.shipped_misses(shipped)
            } else {
                report.none_fits()
            };
            for miss in misses {
                let text = if rule == Rule::Baseline {
                    format!("{} on {} {}", miss.subject, miss.device, miss.detail)
                        .trim_end()
                        .to_owned()
                } else {
                    format!("{} on {} ({})", miss.subject, miss.device, miss.detail)
                };
                let location = match (&miss.entry, &miss.site) {
                    (Some((path, key)), _) => Some(lines.entry(path, key)),
                    (None, Some((file, line))) => Some(Location {
                        file: file.clone(),
                        line: usize::try_from(*line).ok(),
                    }),
                    (None, None) => at_kernel(lines),
                };
                let also = miss.kernel_site.as_ref().map(|(file, line)| Location {
                    file: file.clone(),
                    line: usize::try_from(*line).ok(),
                });
                found.push(Finding {
                    also,
                    ..finding(miss.key, &miss.device, text, location)
                });
            }
        }
        _ => {}
    }
    for j in report.judged() {
        let text = judged_text(rule, &j);
        if let Some(text) = text {
            // Spills are per arch; every other rule per device.
            let device = if rule == Rule::Spills {
                &j.arch
            } else {
                &j.device
            };
            let location = at_kernel(lines);
            found.push(finding(j.key.clone(), device, text, location));
        }
    }
    let mut seen = HashSet::new();
    found.retain(|f| seen.insert(f.key.clone()));
    found
}

/// The words of one verdict's finding under `rule`, if the rule finds it.
fn judged_text(rule: Rule, j: &super::findings::Judged) -> Option<String> {
    match rule {
        Rule::OverBudget if j.verdict == VerdictCode::OverBudget => Some(format!(
            "{} on {} +{}",
            j.subject,
            j.device,
            format_count(j.over_by.unwrap_or(0))
        )),
        Rule::CompileError
            if matches!(
                j.verdict,
                VerdictCode::CompileError | VerdictCode::UnsupportedOnTarget
            ) =>
        {
            Some(format!("{} on {} ({})", j.subject, j.device, j.arch))
        }
        Rule::OverThreadLimit if j.verdict == VerdictCode::OverThreadLimit => Some(format!(
            "{} on {} ({} threads, max {})",
            j.subject,
            j.device,
            j.threads_per_block.unwrap_or(0),
            j.max_threads_per_block.unwrap_or(0)
        )),
        Rule::Spills => j.spill_bytes.filter(|b| *b > 0).map(|bytes| {
            format!(
                "{} on {} ({} bytes)",
                j.subject,
                j.arch,
                format_count(bytes)
            )
        }),
        Rule::NearBudget(share) if j.verdict == VerdictCode::Fits => j
            .shared_bytes
            .filter(|bytes| {
                #[expect(clippy::cast_precision_loss, reason = "byte counts are far below 2^52")]
                let used = *bytes as f64 / j.budget.max(1) as f64;
                used >= share
            })
            .map(|bytes| {
                format!(
                    "{} on {} ({} of {} bytes)",
                    j.subject,
                    j.device,
                    format_count(bytes),
                    format_count(j.budget)
                )
            }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_and_name_themselves() {
        for text in [
            "over-budget",
            "compile-error",
            "over-thread-limit",
            "spills",
            "unmapped-files",
            "unreadable-files",
            "baseline",
            "none-fits",
            "near-budget=85",
        ] {
            assert_eq!(Rule::parse(text).unwrap().name(), text);
        }
        assert_eq!(Rule::parse("near-budget").unwrap().name(), "near-budget=90");
        assert!(Rule::parse("near-budget=0").is_err());
        assert!(Rule::parse("over").unwrap_err().contains("is not a gate"));
    }

    #[test]
    fn only_regular_files_of_a_sane_size_are_read_to_place_a_finding() {
        assert_eq!(read_source("/dev/zero"), None);
        assert_eq!(read_source("/"), None);
        assert_eq!(read_source("/no/such/file"), None);
        let here = concat!(env!("CARGO_MANIFEST_DIR"), "/src/judge/gate.rs");
        assert!(read_source(here).is_some_and(|t| t.contains("MAX_SOURCE_BYTES")));
    }

    #[test]
    fn an_empty_outcome_passes() {
        let outcome = Outcome {
            by_rule: vec![(Rule::OverBudget, Vec::new())],
            known: 0,
            failed_jobs: (0, 3),
        };
        assert!(!outcome.failed());
        assert_eq!(outcome.summary(), None);
    }
}
