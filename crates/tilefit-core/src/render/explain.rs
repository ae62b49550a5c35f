//! `tilefit explain`: the library's [`Explanation`] of a resource error, worded for a person.

use std::fmt::Write as _;

use super::terminal::table as text_table;
use super::{Exporter, Terminal};
use crate::explain::{ArchBudget, Explanation, Finding, Reporter};
use crate::units::{format_bytes, format_count};

fn headline(finding: &Finding) -> String {
    match finding {
        Finding::SharedMemory {
            required,
            limit,
            reporter,
            kernel,
        } => {
            let who = match reporter {
                Reporter::Triton => "Triton (at the kernel's first launch)",
                Reporter::LlvmAmdgpu => "LLVM's AMDGPU backend (at compile time)",
            };
            let kernel = kernel
                .as_deref()
                .map(|k| format!(" `{k}`"))
                .unwrap_or_default();
            let verdict = if required > limit {
                format!("Over by {}.", format_bytes(required - limit))
            } else {
                "That fits; the message is odd.".to_owned()
            };
            format!(
                "Shared memory: the kernel{kernel} needs {} per block; the device allows {} per block. {verdict}\nReported by {who}.",
                format_bytes(*required),
                format_bytes(*limit)
            )
        }
        Finding::StaticSharedMemory {
            required,
            limit,
            kernel,
        } => format!(
            "Static shared memory: kernel{} declares {} of `__shared__` arrays; ptxas allows {} of static shared memory. Over by {}.",
            kernel
                .as_deref()
                .map(|k| format!(" `{k}`"))
                .unwrap_or_default(),
            format_bytes(*required),
            format_bytes(*limit),
            format_bytes(required.saturating_sub(*limit))
        ),
        Finding::Threads { required, limit } => format!(
            "Threads: the kernel launches {} threads per block, but at its register count the driver allows only {}.",
            format_count(*required),
            format_count(*limit)
        ),
        Finding::TensorMemory { required, limit } => format!(
            "Tensor memory: the kernel needs {required} columns; {limit} are available. Over by {}.",
            required.saturating_sub(*limit)
        ),
        Finding::LaunchOutOfResources => {
            "Launch out of resources: CUDA refused to launch the kernel with this block size."
                .to_owned()
        }
        Finding::DynamicSharedMemoryRejected { requested } => format!(
            "Rejected max-dynamic-shared-memory attribute{}.",
            requested
                .map(|r| format!(": {} asked for", format_bytes(r)))
                .unwrap_or_default()
        ),
    }
}

fn arch_rows(rows: &[ArchBudget], show_margin: bool) -> String {
    let table_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let margin = if r.margin >= 0 {
                format!("{} to spare", format_count(r.margin.unsigned_abs()))
            } else {
                format!("over by {}", format_count(r.margin.unsigned_abs()))
            };
            let mut row = vec![r.arch.clone(), format_count(r.budget)];
            if show_margin {
                row.push(margin);
            }
            row.push(if r.products.is_empty() {
                "-".to_owned()
            } else {
                r.products.join(", ")
            });
            row
        })
        .collect();
    let header: &[&str] = if show_margin {
        &["arch", "budget/block", "margin", "devices"]
    } else {
        &["arch", "budget/block", "devices"]
    };
    text_table(header, &table_rows, &[1], "  ")
}

impl Exporter<Explanation> for Terminal {
    fn export(&self, explanation: &Explanation) -> String {
        text(explanation)
    }
}

/// The explanation as text.
fn text(explanation: &Explanation) -> String {
    let mut out = headline(&explanation.finding);
    out.push('\n');
    if !explanation.notes.is_empty() {
        out.push_str("\nWhat the numbers mean\n");
        for note in &explanation.notes {
            let _ = writeln!(out, "  - {note}");
        }
    }
    if !explanation.limit_matches.is_empty() {
        out.push_str("\nDevices with exactly this limit (they all fail this way)\n");
        out.push_str(&arch_rows(&explanation.limit_matches, false));
    }
    if !explanation.fits.is_empty() {
        out.push_str("\nWould fit\n");
        out.push_str(&arch_rows(&explanation.fits, true));
    }
    // The devices that print exactly this message are listed above; repeat only the others.
    let others: Vec<ArchBudget> = explanation
        .does_not_fit
        .iter()
        .filter(|row| !explanation.limit_matches.iter().any(|m| m.arch == row.arch))
        .cloned()
        .collect();
    if !others.is_empty() {
        let heading = if explanation.limit_matches.is_empty() {
            "Would not fit"
        } else {
            "Would not fit either"
        };
        let _ = writeln!(out, "\n{heading}");
        out.push_str(&arch_rows(&others, true));
    }
    if !explanation.advice.is_empty() {
        out.push_str("\nWhat to change\n");
        for advice in &explanation.advice {
            let _ = writeln!(out, "  - {}", advice.text);
        }
    }
    if let Some(command) = &explanation.next_command {
        let _ = writeln!(out, "\nFind the largest config that fits:\n  {command}");
    }
    out
}
