//! The one [`Exporter`] trait every format implements, and the JSON exporter every report shares.

/// Renders a report (a probe's or a replay's) in one format.
pub trait Exporter<R> {
    /// The whole report as text.
    fn export(&self, report: &R) -> String;
}

/// The report as pretty JSON (`schema_version` 1).
pub struct Json;

impl<R: serde::Serialize> Exporter<R> for Json {
    fn export(&self, report: &R) -> String {
        let mut text = serde_json::to_string_pretty(report).expect("reports serialize");
        text.push('\n');
        text
    }
}
