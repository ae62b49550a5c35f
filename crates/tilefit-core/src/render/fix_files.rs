//! `--emit-files`' summary for a pull request: per device and file, the entries changed, bytes
//! before and after, and what changed; and where each written thing goes.

use std::fmt::Write as _;

use super::{Exporter, Json, Markdown};
use crate::escape::{markdown, markdown_code};
use crate::model::fix_files::{FileFix, FixedFiles};
use crate::units::format_count;

impl Exporter<FixedFiles> for Markdown {
    /// The pull request's summary (`SUMMARY.md`).
    fn export(&self, fixed: &FixedFiles) -> String {
        summary(fixed)
    }
}

/// The pull request's summary: per device and file, the entries changed, bytes before and after,
/// and what changed.
fn summary(fixed: &FixedFiles) -> String {
    // The title claims only what holds: nothing left unjudged, and every entry fits.
    let unfixable = fixed
        .files
        .iter()
        .any(|f| f.entries.iter().any(|e| e.unfixable));
    let mut text = String::from(if fixed.not_judged.is_empty() && !unfixable {
        "# Config files that fit every device\n\n"
    } else {
        "# Config files for the fleet: some files or entries were not judged, or do not fit (see below)\n\n"
    });
    let _ = writeln!(
        text,
        "Written by tilefit {} with Triton {}: every entry below was compiled for its device's arch and judged against the device's per-block shared-memory budget.\n",
        fixed.tilefit, fixed.triton
    );
    text.push_str(
        "**Derived and patched entries are guaranteed to launch, not tuned for speed on that device.** \
         Each is the entry the engine shipped with the fewest changes that fit: fewer pipeline stages \
         first, then a smaller tile along its largest dimension. Tune them on the device when you can.\n",
    );
    let mut devices: Vec<&str> = fixed.files.iter().map(|f| f.device.as_str()).collect();
    devices.dedup();
    devices.sort_unstable();
    devices.dedup();
    for device in devices {
        let files: Vec<&FileFix> = fixed.files.iter().filter(|f| f.device == device).collect();
        let budget = files.first().map_or(0, |f| f.budget);
        let _ = writeln!(
            text,
            "\n## {} ({} bytes per block)\n",
            markdown(device),
            format_count(budget)
        );
        for file in files {
            file_section(&mut text, file);
        }
    }
    for (device, why) in &fixed.skipped {
        let _ = writeln!(
            text,
            "\nNo files for {}: {}.",
            markdown(device),
            markdown(why)
        );
    }
    if !fixed.not_judged.is_empty() {
        text.push_str(
            "\n## Not judged\n\nNothing was made from these files; an entry left out of a file that has a patched copy is kept there as the source has it, unjudged.\n\n",
        );
        for (file, why) in &fixed.not_judged {
            let _ = writeln!(text, "- {}: {}", markdown_code(file), markdown(why));
        }
    }
    let _ = writeln!(
        text,
        "\nEvery file above was read back the way the engine loads it (Python's `json.load`) and its {} entries judged again on their device before this summary was written.",
        format_count(fixed.rejudged as u64)
    );
    text
}

/// One file's section: its name and source, its notes, and the entries changed or dropped.
fn file_section(text: &mut String, file: &FileFix) {
    let changed = file
        .entries
        .iter()
        .filter(|e| !e.changes.is_empty())
        .count();
    let dropped = file.entries.iter().filter(|e| e.unfixable).count();
    let _ = writeln!(
        text,
        "### {} ({}; from {})\n\n{} of its {} entries changed{}.\n",
        markdown_code(&file.name),
        if file.kind == "new" { "new" } else { "patched" },
        markdown_code(&file.source),
        changed,
        file.entries_in_source,
        if dropped > 0 {
            format!(
                ", {dropped} with no config that fits (left out of a new file; the engine takes the nearest batch size)"
            )
        } else {
            String::new()
        }
    );
    for note in &file.notes {
        let _ = writeln!(text, "- {}", markdown(note));
    }
    if !file.notes.is_empty() {
        text.push('\n');
    }
    if changed + dropped == 0 {
        return;
    }
    text.push_str("| batch | bytes before | bytes after | change |\n|---|---|---|---|\n");
    for entry in file
        .entries
        .iter()
        .filter(|e| !e.changes.is_empty() || e.unfixable)
    {
        let mut change = if entry.unfixable {
            "none fits".to_owned()
        } else {
            markdown(&entry.changes.join(", "))
        };
        for note in &entry.notes {
            let _ = write!(change, " ({})", markdown(note));
        }
        let _ = writeln!(
            text,
            "| {} | {} | {} | {} |",
            markdown(&entry.key),
            entry.bytes_before.map_or("-".to_owned(), format_count),
            entry.bytes_after.map_or("-".to_owned(), format_count),
            change
        );
    }
    text.push('\n');
}

/// What is written, by name below the output folder: each file, the summary and the
/// provenance beside them.
pub fn outputs(fixed: &FixedFiles) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = fixed
        .files
        .iter()
        .map(|f| (f.name.clone(), f.text.clone()))
        .collect();
    out.push(("SUMMARY.md".to_owned(), Markdown.export(fixed)));
    out.push(("tilefit-provenance.json".to_owned(), Json.export(fixed)));
    out
}
