//! `tilefit replay --list`: what the caches hold, one line per kernel variant, and what was skipped.

use super::{Exporter, Terminal};
use crate::input::cache_index::CacheIndex;

impl Exporter<Vec<crate::input::aoti::Package>> for Terminal {
    fn export(&self, packages: &Vec<crate::input::aoti::Package>) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        for package in packages {
            let _ = writeln!(
                out,
                "{}: {} shipped kernels, {} unreadable",
                crate::escape::control(&package.path.display().to_string()),
                package.kernels.len(),
                package.problems.len()
            );
            for k in &package.kernels {
                let images: Vec<String> = k.images.iter().map(|i| i.label()).collect();
                let _ = writeln!(
                    out,
                    "  {}  {}:{}  {} bytes  {} warps  {} ({})",
                    crate::escape::control(&k.name),
                    crate::escape::control(k.wrapper.rsplit('/').next().unwrap_or(&k.wrapper)),
                    k.line,
                    crate::units::format_count(k.shared_bytes),
                    k.num_warps,
                    crate::escape::control(&k.binary),
                    images.join(", ")
                );
            }
            for p in &package.problems {
                let _ = writeln!(
                    out,
                    "  unreadable: {}: {}",
                    crate::escape::control(&p.path.display().to_string()),
                    crate::escape::control(&p.reason)
                );
            }
        }
        out
    }
}

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
