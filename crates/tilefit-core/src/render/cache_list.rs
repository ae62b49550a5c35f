//! `tilefit replay --list`: what the caches hold, one line per kernel variant, and what was skipped.

use super::{Exporter, Terminal};
use crate::input::cache_index::CacheIndex;

impl Exporter<CacheIndex> for Terminal {
    fn export(&self, index: &CacheIndex) -> String {
        text(index)
    }
}

/// The index as text.
fn text(index: &CacheIndex) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "{} cache entries: {} kernel variants, {} other entries, {} skipped\n",
        index.entries_scanned,
        index.kernels.len(),
        index.other_entries,
        index.skipped.len()
    );
    for (kernel, copies) in index.kernels.iter().zip(&index.copies) {
        let _ = writeln!(
            out,
            "  {} #{}  {}  Triton {}  {} {} bytes  {}{}",
            kernel.name,
            kernel.hash.chars().take(8).collect::<String>(),
            kernel.source.as_deref().unwrap_or("-"),
            kernel.triton_version.as_deref().unwrap_or("?"),
            kernel.arch,
            kernel
                .shared
                .map(crate::units::format_count)
                .unwrap_or_default(),
            kernel
                .options
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
            if *copies > 1 {
                format!("  [{copies} identical entries]")
            } else {
                String::new()
            }
        );
    }
    for skipped in &index.skipped {
        let _ = writeln!(
            out,
            "  skipped {}: {}",
            skipped.path.display(),
            skipped.reason
        );
    }
    out
}
