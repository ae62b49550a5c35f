//! `tilefit devices`: the device table grouped by budget, every value of named devices beside the
//! sources that back it, and the driver's numbers beside the table's (`--live`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::terminal::table as text_table;
use super::{Exporter, Terminal};
use crate::cuda::LiveComparison;
use crate::device::{ArchListing, DeviceListing, DeviceTable, ProductListing, Resolved};
use crate::units::{format_bytes, format_count};

/// One row of the grouped table: a product, or an arch that has no product in the table.
fn rows_for(arch: &ArchListing, products: &[&ProductListing]) -> Vec<Vec<String>> {
    let opt = |v: Option<u32>| v.map_or_else(|| "-".to_owned(), |v| format_count(u64::from(v)));
    let row = |name: String, sms: String| {
        vec![
            name,
            arch.arch.clone(),
            format_count(u64::from(arch.smem_per_block_optin)),
            format_count(u64::from(arch.smem_per_sm)),
            format_count(u64::from(arch.smem_reserved_per_block)),
            opt(arch.regs_per_block),
            opt(arch.regs_per_thread),
            opt(arch.max_threads_per_sm),
            opt(arch.max_blocks_per_sm),
            sms,
        ]
    };
    if products.is_empty() {
        return vec![row(format!("({} arch)", arch.generation), "-".to_owned())];
    }
    products
        .iter()
        .map(|p| row(p.name.clone(), opt(p.sm_count)))
        .collect()
}

/// `tilefit devices [NAME...]`: the table grouped by budget, then every value of the named
/// devices beside its sources.
pub struct DevicePage<'a> {
    /// The table the names resolved in.
    pub table: &'a DeviceTable,
    /// The whole table, or the named devices' rows.
    pub listing: &'a DeviceListing,
    /// The names given, resolved (none: the grouped table alone).
    pub resolved: &'a [Resolved<'a>],
}

impl Exporter<DevicePage<'_>> for Terminal {
    fn export(&self, page: &DevicePage<'_>) -> String {
        let mut text = grouped(page.listing);
        if !page.resolved.is_empty() {
            text.push_str(&details(page.table, page.listing, page.resolved));
        }
        text
    }
}

/// `tilefit devices --live`: the driver's numbers for every local GPU beside the table's.
pub struct LiveDevices<'a>(pub &'a [LiveComparison]);

impl Exporter<LiveDevices<'_>> for Terminal {
    fn export(&self, live: &LiveDevices<'_>) -> String {
        live_text(live.0)
    }
}

/// The table grouped by (budget, backend), largest budget first.
fn grouped(listing: &DeviceListing) -> String {
    // Groups keyed by (budget, backend), largest budget first, so one sees at a glance which archs
    // share a budget.
    let mut groups: BTreeMap<(std::cmp::Reverse<u32>, &str), Vec<&ArchListing>> = BTreeMap::new();
    for arch in &listing.archs {
        groups
            .entry((
                std::cmp::Reverse(arch.smem_per_block_optin),
                arch.backend.as_str(),
            ))
            .or_default()
            .push(arch);
    }
    let header = [
        "device",
        "arch",
        "opt-in/block",
        "smem/SM",
        "reserved",
        "regs/block",
        "regs/thread",
        "threads/SM",
        "blocks/SM",
        "SMs/CUs",
    ];
    let mut out = String::from(
        "Per-block shared-memory budgets (opt-in; bytes). A compiled kernel's shared memory must not exceed its device's opt-in/block.\n",
    );
    for ((budget, backend), archs) in &groups {
        let names: Vec<&str> = archs.iter().map(|a| a.arch.as_str()).collect();
        let vendor = if *backend == "hip" { "AMD" } else { "NVIDIA" };
        let _ = writeln!(
            out,
            "\n{} per block  ({vendor}: {})",
            format_bytes(u64::from(budget.0)),
            names.join(", ")
        );
        let mut rows = Vec::new();
        for arch in archs {
            let products: Vec<&ProductListing> = listing
                .products
                .iter()
                .filter(|p| p.arch == arch.arch)
                .collect();
            rows.extend(rows_for(arch, &products));
        }
        out.push_str(&text_table(&header, &rows, &[2, 3, 4, 5, 6, 7, 8, 9], "  "));
    }
    out.push_str("\n`-`: not in the table (AMD register and occupancy limits are not modelled yet). `tilefit devices NAME` shows each value's sources; `--json` prints them all.\n");
    out
}

/// Every value of the named devices beside the sources that back it.
fn details(table: &DeviceTable, listing: &DeviceListing, resolved: &[Resolved<'_>]) -> String {
    let mut out = String::new();
    for product in resolved.iter().filter_map(Resolved::product) {
        let sms = product.sm_count.as_ref().map_or_else(
            || "SM count not in the table".to_owned(),
            |sm| format!("{} SMs [{}]", sm.value, sm.sources.join(", ")),
        );
        let notes = product
            .notes
            .as_deref()
            .map(|n| format!("  ({n})"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "\n{} -> arch {} [{}], {sms}{notes}",
            product.name,
            product.arch,
            product.arch_from.join(", "),
        );
    }
    for arch in &listing.archs {
        out.push_str(&render_arch_values(table, arch));
    }
    out.push_str(&render_sources(listing));
    out
}

/// One arch's values, one per line, each with the ids of its sources.
fn render_arch_values(table: &DeviceTable, arch: &ArchListing) -> String {
    let cc = arch
        .compute_capability
        .as_deref()
        .map(|cc| format!(", compute capability {cc}"))
        .unwrap_or_default();
    let mut out = format!(
        "\n{}: {}, backend {}{cc}\n",
        arch.arch, arch.generation, arch.backend
    );
    if let Some(notes) = &arch.notes {
        let _ = writeln!(out, "  note: {notes}");
    }
    let fields: Vec<&str> = table
        .arch(&arch.arch)
        .map(|spec| spec.cited_fields().into_iter().map(|(f, _)| f).collect())
        .unwrap_or_default();
    let rows: Vec<Vec<String>> = fields
        .iter()
        .map(|field| {
            let ids: Vec<&str> = arch
                .sources
                .iter()
                .filter(|s| s.fields.iter().any(|f| f == field))
                .map(|s| s.id.as_str())
                .collect();
            vec![
                (*field).to_owned(),
                field_value(arch, field),
                ids.join(", "),
            ]
        })
        .collect();
    out.push_str(&text_table(
        &["field", "value", "sources"],
        &rows,
        &[],
        "  ",
    ));
    out
}

fn field_value(arch: &ArchListing, field: &str) -> String {
    let bytes = |v: u32| format_bytes(u64::from(v));
    match field {
        "warp_size" => arch.warp_size.to_string(),
        "smem_per_sm" => bytes(arch.smem_per_sm),
        "smem_per_block_optin" => bytes(arch.smem_per_block_optin),
        "smem_per_block_default" => bytes(arch.smem_per_block_default),
        "smem_reserved_per_block" => bytes(arch.smem_reserved_per_block),
        "regs_per_sm" => opt_count(arch.regs_per_sm),
        "regs_per_block" => opt_count(arch.regs_per_block),
        "regs_per_thread" => opt_count(arch.regs_per_thread),
        "max_threads_per_sm" => opt_count(arch.max_threads_per_sm),
        "max_threads_per_block" => format_count(u64::from(arch.max_threads_per_block)),
        "max_blocks_per_sm" => opt_count(arch.max_blocks_per_sm),
        "smem_carveouts_kib" => arch.smem_carveouts_kib.as_ref().map_or_else(
            || "-".to_owned(),
            |c| {
                let kib: Vec<String> = c.iter().map(u32::to_string).collect();
                format!("{} KiB", kib.join(", "))
            },
        ),
        "smem_allocation_unit" => arch
            .smem_allocation_unit
            .map_or_else(|| "-".to_owned(), |v| format!("{v} bytes")),
        "reg_allocation_unit" => arch
            .reg_allocation_unit
            .map_or_else(|| "-".to_owned(), |v| format!("{v} registers per warp")),
        "register_subpartitions" => opt_count(arch.register_subpartitions),
        _ => "-".to_owned(),
    }
}

/// Every source cited by the listed archs and products, once, with its kind and address.
fn render_sources(listing: &DeviceListing) -> String {
    let mut seen: Vec<&str> = Vec::new();
    let mut out = String::from("\nSources\n");
    let all = listing
        .archs
        .iter()
        .flat_map(|a| &a.sources)
        .chain(listing.products.iter().flat_map(|p| &p.sources));
    for source in all {
        if seen.contains(&source.id.as_str()) {
            continue;
        }
        seen.push(&source.id);
        let url = source
            .url
            .as_deref()
            .map(|u| format!(" <{u}>"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {} [{}]: {}{url}",
            source.id,
            source.kind.as_str(),
            source.title
        );
    }
    out
}

fn opt_count(value: Option<u32>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format_count(u64::from(v)))
}

/// `devices --live`: the driver's numbers for every local GPU beside the table's, field by field.
fn live_text(comparisons: &[LiveComparison]) -> String {
    let mut out = String::new();
    for c in comparisons {
        let d = &c.live;
        let _ = writeln!(
            out,
            "GPU {}: {} (compute capability {}.{}, {}, {} SMs, driver {}.{})\n  resolves to: {}",
            d.ordinal,
            d.name,
            d.compute_capability.0,
            d.compute_capability.1,
            d.arch,
            d.sm_count,
            d.driver_version / 1000,
            d.driver_version % 1000 / 10,
            c.product.as_deref().map_or_else(
                || format!(
                    "no product in the table (compared with {})",
                    c.arch.as_deref().unwrap_or("no arch either")
                ),
                |p| format!("{p} ({})", c.arch.as_deref().unwrap_or("?"))
            )
        );
        let rows: Vec<Vec<String>> = c
            .fields
            .iter()
            .map(|f| {
                vec![
                    f.field.clone(),
                    format_count(f.live.unsigned_abs()),
                    f.table
                        .map_or_else(|| "-".to_owned(), |t| format_count(t.unsigned_abs())),
                    if f.table.is_none() {
                        "not in the table".to_owned()
                    } else if f.agrees {
                        "agrees".to_owned()
                    } else {
                        "DISAGREES: the table is wrong or this device is new".to_owned()
                    },
                ]
            })
            .collect();
        out.push_str(&text_table(
            &["field", "driver", "table", ""],
            &rows,
            &[1, 2],
            "  ",
        ));
        out.push('\n');
    }
    out
}
