//! The device table as a flat, serializable listing: what `tilefit devices --json` prints and
//! what the terminal table is drawn from. Each arch and product carries its sources, each
//! source the fields it backs, so a reader can check any number against where it came from.

use serde::Serialize;

use super::lookup::Resolved;
use super::table::{ArchSpec, Backend, DeviceTable, Product, Segment, SourceKind};

/// Version of the JSON shape below; bumped on any breaking change.
pub const LISTING_SCHEMA_VERSION: u32 = 1;

/// The whole listing.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceListing {
    /// [`LISTING_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Architectures, in table order.
    pub archs: Vec<ArchListing>,
    /// Products, in table order.
    pub products: Vec<ProductListing>,
}

/// One source and the fields it backs for the arch or product it is listed under.
#[derive(Debug, Clone, Serialize)]
pub struct SourceListing {
    /// Source id in the table.
    pub id: String,
    /// Kind of evidence.
    pub kind: SourceKind,
    /// What it says.
    pub title: String,
    /// Where to read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Section of `docs/reference/devices.md`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// Fields this source backs.
    pub fields: Vec<String>,
}

/// One architecture, flattened.
#[derive(Debug, Clone, Serialize)]
#[expect(missing_docs, reason = "field names mirror ArchSpec, documented there")]
pub struct ArchListing {
    pub arch: String,
    pub backend: Backend,
    pub compute_capability: Option<String>,
    pub generation: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    pub warp_size: u32,
    pub smem_per_sm: u32,
    pub smem_per_block_optin: u32,
    pub smem_per_block_default: u32,
    pub smem_reserved_per_block: u32,
    pub regs_per_sm: Option<u32>,
    pub regs_per_block: Option<u32>,
    pub regs_per_thread: Option<u32>,
    pub max_threads_per_sm: Option<u32>,
    pub max_threads_per_block: u32,
    pub max_blocks_per_sm: Option<u32>,
    pub smem_carveouts_kib: Option<Vec<u32>>,
    pub smem_allocation_unit: Option<u32>,
    pub reg_allocation_unit: Option<u32>,
    pub register_subpartitions: Option<u32>,
    /// Names of the products that compile for this arch.
    pub products: Vec<String>,
    pub sources: Vec<SourceListing>,
}

/// One product, flattened, with its arch's budget beside it.
#[derive(Debug, Clone, Serialize)]
#[expect(missing_docs, reason = "field names mirror Product, documented there")]
pub struct ProductListing {
    pub name: String,
    pub aliases: Vec<String>,
    pub segment: Segment,
    pub arch: String,
    pub backend: Backend,
    pub sm_count: Option<u32>,
    /// The arch's opt-in per-block budget, repeated so one row answers "what does this card allow".
    pub smem_per_block_optin: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    pub sources: Vec<SourceListing>,
}

impl DeviceListing {
    /// The whole table.
    pub fn all(table: &DeviceTable) -> DeviceListing {
        DeviceListing {
            schema_version: LISTING_SCHEMA_VERSION,
            archs: table
                .archs()
                .iter()
                .map(|a| ArchListing::new(table, a))
                .collect(),
            products: table
                .products()
                .iter()
                .map(|p| ProductListing::new(table, p))
                .collect(),
        }
    }

    /// Only what the given names resolved to: a named product with its arch, a named arch with all
    /// of its products. Order follows the table; nothing is listed twice.
    pub fn selected(table: &DeviceTable, selection: &[Resolved<'_>]) -> DeviceListing {
        let arch_wanted = |arch: &ArchSpec| selection.iter().any(|r| r.arch().arch == arch.arch);
        let product_wanted = |product: &Product| {
            selection.iter().any(|r| match r {
                Resolved::Arch(arch) => arch.arch == product.arch,
                Resolved::Product(named, _) => named.name == product.name,
            })
        };
        DeviceListing {
            schema_version: LISTING_SCHEMA_VERSION,
            archs: table
                .archs()
                .iter()
                .filter(|a| arch_wanted(a))
                .map(|a| ArchListing::new(table, a))
                .collect(),
            products: table
                .products()
                .iter()
                .filter(|p| product_wanted(p))
                .map(|p| ProductListing::new(table, p))
                .collect(),
        }
    }
}

impl ArchListing {
    fn new(table: &DeviceTable, arch: &ArchSpec) -> ArchListing {
        let value = |v: &Option<super::Sourced<u32>>| v.as_ref().map(|v| v.value);
        ArchListing {
            arch: arch.arch.clone(),
            backend: arch.backend,
            compute_capability: arch.compute_capability.clone(),
            generation: arch.generation.clone(),
            notes: arch.notes.clone(),
            warp_size: arch.warp_size.value,
            smem_per_sm: arch.smem_per_sm.value,
            smem_per_block_optin: arch.smem_per_block_optin.value,
            smem_per_block_default: arch.smem_per_block_default.value,
            smem_reserved_per_block: arch.smem_reserved_per_block.value,
            regs_per_sm: value(&arch.regs_per_sm),
            regs_per_block: value(&arch.regs_per_block),
            regs_per_thread: value(&arch.regs_per_thread),
            max_threads_per_sm: value(&arch.max_threads_per_sm),
            max_threads_per_block: arch.max_threads_per_block.value,
            max_blocks_per_sm: value(&arch.max_blocks_per_sm),
            smem_carveouts_kib: arch.smem_carveouts_kib.as_ref().map(|c| c.value.clone()),
            smem_allocation_unit: value(&arch.smem_allocation_unit),
            reg_allocation_unit: value(&arch.reg_allocation_unit),
            register_subpartitions: value(&arch.register_subpartitions),
            products: table
                .products_of(&arch.arch)
                .map(|p| p.name.clone())
                .collect(),
            sources: cite(table, &arch.cited_fields()),
        }
    }
}

impl ProductListing {
    fn new(table: &DeviceTable, product: &Product) -> ProductListing {
        let arch = table
            .arch(&product.arch)
            .expect("validated at load: every product maps to a known arch");
        let mut fields: Vec<(&'static str, &[String])> = vec![("arch", &product.arch_from)];
        if let Some(sm) = &product.sm_count {
            fields.push(("sm_count", &sm.sources));
        }
        if let Some(reports) = &product.reports {
            fields.push(("reports", &reports.sources));
        }
        ProductListing {
            name: product.name.clone(),
            aliases: product.aliases.clone(),
            segment: product.segment,
            arch: product.arch.clone(),
            backend: arch.backend,
            sm_count: product.sm_count.as_ref().map(|s| s.value),
            smem_per_block_optin: arch.budget(),
            notes: product.notes.clone(),
            sources: cite(table, &fields),
        }
    }
}

/// Invert (field -> source ids) into (source -> fields), keeping first-cited order.
fn cite(table: &DeviceTable, fields: &[(&'static str, &[String])]) -> Vec<SourceListing> {
    let mut listed: Vec<SourceListing> = Vec::new();
    for (field, ids) in fields {
        for id in *ids {
            if let Some(existing) = listed.iter_mut().find(|s| &s.id == id) {
                existing.fields.push((*field).to_owned());
                continue;
            }
            let source = table
                .source(id)
                .expect("validated at load: every cited source exists");
            listed.push(SourceListing {
                id: id.clone(),
                kind: source.kind,
                title: source.title.clone(),
                url: source.url.clone(),
                section: source.section.clone(),
                fields: vec![(*field).to_owned()],
            });
        }
    }
    listed
}
