//! `--emit-files`' summary for a pull request: per device and file, the entries changed, bytes
//! before and after, and what changed; and where each written thing goes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::model::fix_files::{FileFix, FixedFiles};
use crate::units::format_count;

/// The pull request's summary: per device and file, the entries changed, bytes before and after,
/// and what changed.
pub fn summary(fixed: &FixedFiles) -> String {
    let mut text = String::from("# Config files that fit every device\n\n");
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
            "\n## {device} ({} bytes per block)\n",
            format_count(budget)
        );
        for file in files {
            let changed = file
                .entries
                .iter()
                .filter(|e| !e.changes.is_empty())
                .count();
            let dropped = file.entries.iter().filter(|e| e.unfixable).count();
            let _ = writeln!(
                text,
                "### `{}` ({}; from `{}`)\n\n{} of its {} entries changed{}.\n",
                file.name,
                if file.kind == "new" { "new" } else { "patched" },
                file.source,
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
            if changed + dropped == 0 {
                continue;
            }
            text.push_str("| batch | bytes before | bytes after | change |\n|---|---|---|---|\n");
            for entry in file
                .entries
                .iter()
                .filter(|e| !e.changes.is_empty() || e.unfixable)
            {
                let _ = writeln!(
                    text,
                    "| {} | {} | {} | {} |",
                    entry.key,
                    entry.bytes_before.map_or("-".to_owned(), format_count),
                    entry.bytes_after.map_or("-".to_owned(), format_count),
                    if entry.unfixable {
                        "none fits".to_owned()
                    } else {
                        entry.changes.join(", ")
                    }
                );
            }
            text.push('\n');
        }
    }
    for (device, why) in &fixed.skipped {
        let _ = writeln!(text, "\nNo files for {device}: {why}.");
    }
    text
}

/// Where the files go: `dir/<name>` for each, the summary and the provenance beside them.
pub fn outputs(fixed: &FixedFiles, dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out: Vec<(PathBuf, String)> = fixed
        .files
        .iter()
        .map(|f| (dir.join(&f.name), f.text.clone()))
        .collect();
    out.push((dir.join("SUMMARY.md"), summary(fixed)));
    out.push((
        dir.join("tilefit-provenance.json"),
        serde_json::to_string_pretty(fixed).unwrap_or_default() + "\n",
    ));
    out
}
