//! GitHub Actions output: `::error file=...,line=...,title=...::message` annotations for the
//! gate's findings, at most [`MAX_ANNOTATIONS`] and then a count of the rest. Every value is
//! escaped with GitHub's own rules; paths are made relative to the repository. Each finding
//! already carries its file and line, so nothing here reads a file.

use std::path::{Path, PathBuf};

use super::exporter::Exporter;
use crate::escape::{workflow_data, workflow_property};
use crate::judge::gate::Outcome;

/// At most this many annotations per run; the rest are counted.
pub const MAX_ANNOTATIONS: usize = 10;

/// The annotations exporter. `roots` are where the repository is checked out
/// (`GITHUB_WORKSPACE`, then the working folder): a path under one is written relative to it.
pub struct GithubAnnotations {
    /// Roots to make paths relative to, in order.
    pub roots: Vec<PathBuf>,
}

impl GithubAnnotations {
    /// A path as the repository names it: relative to the first root it is under.
    fn relative(&self, path: &str) -> String {
        let path = Path::new(path);
        for root in &self.roots {
            if let Ok(relative) = path.strip_prefix(root) {
                return relative.display().to_string();
            }
        }
        path.display().to_string()
    }
}

impl Exporter<Outcome> for GithubAnnotations {
    fn export(&self, outcome: &Outcome) -> String {
        let mut lines = Vec::new();
        let mut rest = 0;
        for finding in outcome.findings() {
            // A captured launch's finding is annotated at its launching line and at its kernel.
            let places =
                std::iter::once(finding.location.as_ref()).chain(finding.also.as_ref().map(Some));
            for location in places {
                if lines.len() == MAX_ANNOTATIONS {
                    rest += 1;
                    continue;
                }
                let mut properties = Vec::new();
                if let Some(location) = location {
                    properties.push(format!(
                        "file={}",
                        workflow_property(&self.relative(&location.file))
                    ));
                    if let Some(line) = location.line {
                        properties.push(format!("line={line}"));
                    }
                }
                properties.push(format!(
                    "title={}",
                    workflow_property(&format!("tilefit {}", finding.rule.name()))
                ));
                lines.push(format!(
                    "::error {}::{}",
                    properties.join(","),
                    workflow_data(&finding.text)
                ));
            }
        }
        if rest > 0 {
            lines.push(format!("::warning title=tilefit::{rest} more findings are not annotated (at most {MAX_ANNOTATIONS} per run)"));
        }
        if lines.is_empty() {
            String::new()
        } else {
            lines.join("\n") + "\n"
        }
    }
}
