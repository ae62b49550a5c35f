//! The device table's types, its parsing from `data/devices.toml`, and the invariants checked
//! once at load: every value cites a known source, NVIDIA's opt-in budget plus the per-block
//! reservation equals the per-SM capacity, products point at real archs, and no name or alias is
//! claimed by two targets. A table that breaks an invariant is refused, never half-loaded.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use std::collections::HashMap as IndexMap;

use super::names::{TargetRef, normalize_name};

/// The table shipped inside the binary.
const BUILTIN_TABLE: &str = include_str!("../../data/devices.toml");

/// The table schema this code understands.
pub const TABLE_SCHEMA_VERSION: u32 = 1;

/// Which compiler backend and driver a target belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// NVIDIA, compiled by Triton's `cuda` backend.
    Cuda,
    /// AMD, compiled by Triton's `hip` backend.
    Hip,
}

impl Backend {
    /// The name Triton's `GPUTarget` uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Cuda => "cuda",
            Backend::Hip => "hip",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How much weight a source carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// A vendor document (programming guide, whitepaper, spec table).
    Document,
    /// Vendor source code (CUDA headers, CCCL, LLVM, Triton).
    VendorCode,
    /// A measurement on real hardware.
    Measurement,
    /// Reported by third parties who ran the hardware.
    Community,
    /// Derived from other sourced facts.
    Inferred,
}

impl SourceKind {
    /// The kebab-case name used in the data file and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Document => "document",
            SourceKind::VendorCode => "vendor-code",
            SourceKind::Measurement => "measurement",
            SourceKind::Community => "community",
            SourceKind::Inferred => "inferred",
        }
    }
}

/// Where a value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// The id values cite it by; filled from the table key.
    #[serde(skip_deserializing)]
    pub id: String,
    /// What kind of evidence it is.
    pub kind: SourceKind,
    /// What it says, short enough to print.
    pub title: String,
    /// Where to read it, when it has an address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The section of `docs/reference/devices.md` that discusses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
}

/// A value and the ids of the sources that back it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sourced<T> {
    /// The value itself.
    pub value: T,
    /// Source ids; never empty in a loaded table.
    #[serde(rename = "from")]
    pub sources: Vec<String>,
}

/// One architecture's per-block and per-SM limits.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchSpec {
    /// `sm_120`, `gfx942`.
    pub arch: String,
    /// `cuda` or `hip`.
    pub backend: Backend,
    /// NVIDIA compute capability as `major.minor`.
    #[serde(default)]
    pub compute_capability: Option<String>,
    /// Marketing generation and die.
    pub generation: String,
    /// Anything a reader must know to read the numbers right.
    #[serde(default)]
    pub notes: Option<String>,
    /// Threads per warp (wavefront on AMD).
    pub warp_size: Sourced<u32>,
    /// Largest shared-memory capacity of one SM (LDS per CU, or per WGP on RDNA).
    pub smem_per_sm: Sourced<u32>,
    /// Most shared memory one block may use after opting in: Triton's `max_shared_mem`.
    pub smem_per_block_optin: Sourced<u32>,
    /// Limit without the opt-in (NVIDIA's 48 KiB).
    pub smem_per_block_default: Sourced<u32>,
    /// Shared memory the driver reserves per resident block, on top of the opt-in budget.
    pub smem_reserved_per_block: Sourced<u32>,
    /// 32-bit registers per SM.
    #[serde(default)]
    pub regs_per_sm: Option<Sourced<u32>>,
    /// 32-bit registers one block may use.
    #[serde(default)]
    pub regs_per_block: Option<Sourced<u32>>,
    /// 32-bit registers one thread may use.
    #[serde(default)]
    pub regs_per_thread: Option<Sourced<u32>>,
    /// Resident threads per SM.
    #[serde(default)]
    pub max_threads_per_sm: Option<Sourced<u32>>,
    /// Threads per block.
    pub max_threads_per_block: Sourced<u32>,
    /// Resident blocks per SM.
    #[serde(default)]
    pub max_blocks_per_sm: Option<Sourced<u32>>,
    /// Shared-memory capacities (KiB) an SM can be configured to.
    #[serde(default)]
    pub smem_carveouts_kib: Option<Sourced<Vec<u32>>>,
    /// Bytes a block's shared memory (reservation included) is rounded up to, for occupancy.
    #[serde(default)]
    pub smem_allocation_unit: Option<Sourced<u32>>,
    /// Registers a warp's allocation is rounded up to.
    #[serde(default)]
    pub reg_allocation_unit: Option<Sourced<u32>>,
    /// Sub-partitions of the register file; each warp's registers come from one.
    #[serde(default)]
    pub register_subpartitions: Option<Sourced<u32>>,
}

impl ArchSpec {
    /// The opt-in per-block budget in bytes: what a compiled kernel's shared memory must not exceed.
    pub fn budget(&self) -> u32 {
        self.smem_per_block_optin.value
    }

    /// Every field that carries a value, with the field's JSON name and its sources, in table order.
    pub fn cited_fields(&self) -> Vec<(&'static str, &[String])> {
        let mut fields: Vec<(&'static str, &[String])> = vec![
            ("warp_size", &self.warp_size.sources),
            ("smem_per_sm", &self.smem_per_sm.sources),
            ("smem_per_block_optin", &self.smem_per_block_optin.sources),
            (
                "smem_per_block_default",
                &self.smem_per_block_default.sources,
            ),
            (
                "smem_reserved_per_block",
                &self.smem_reserved_per_block.sources,
            ),
        ];
        let optional = [
            ("regs_per_sm", &self.regs_per_sm),
            ("regs_per_block", &self.regs_per_block),
            ("regs_per_thread", &self.regs_per_thread),
            ("max_threads_per_sm", &self.max_threads_per_sm),
        ];
        fields.extend(
            optional
                .into_iter()
                .filter_map(|(name, v)| v.as_ref().map(|v| (name, v.sources.as_slice()))),
        );
        fields.push(("max_threads_per_block", &self.max_threads_per_block.sources));
        if let Some(v) = &self.max_blocks_per_sm {
            fields.push(("max_blocks_per_sm", &v.sources));
        }
        if let Some(v) = &self.smem_carveouts_kib {
            fields.push(("smem_carveouts_kib", &v.sources));
        }
        let model = [
            ("smem_allocation_unit", &self.smem_allocation_unit),
            ("reg_allocation_unit", &self.reg_allocation_unit),
            ("register_subpartitions", &self.register_subpartitions),
        ];
        fields.extend(
            model
                .into_iter()
                .filter_map(|(name, v)| v.as_ref().map(|v| (name, v.sources.as_slice()))),
        );
        fields
    }
}

/// Where a product is sold; used to group and to read the fleet at a glance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Segment {
    /// Datacenter accelerators.
    Datacenter,
    /// Professional desk and server cards.
    Workstation,
    /// Gaming cards.
    Consumer,
    /// Jetson-class modules.
    Embedded,
}

/// A product people name, mapped to one architecture.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Product {
    /// Canonical display name.
    pub name: String,
    /// Market segment.
    pub segment: Segment,
    /// Other names that resolve to this product (short names, driver strings).
    pub aliases: Vec<String>,
    /// The arch it compiles for.
    pub arch: String,
    /// Sources for the product-to-arch mapping.
    pub arch_from: Vec<String>,
    /// SMs (NVIDIA) or CUs (AMD), where sourced.
    #[serde(default)]
    pub sm_count: Option<Sourced<u32>>,
    /// The name the device reports (`torch.cuda.get_device_name()`), where sourced: what device
    /// emulation answers and what engines name their config files after.
    #[serde(default)]
    pub reports: Option<Sourced<String>>,
    /// Anything a reader must know.
    #[serde(default)]
    pub notes: Option<String>,
    /// The representative of its budget class in the default probe fleet.
    #[serde(default)]
    pub default_fleet: bool,
}

impl Product {
    /// The shortest of its name and aliases: what a narrow table column shows.
    pub fn short_name(&self) -> &str {
        std::iter::once(&self.name)
            .chain(&self.aliases)
            .min_by_key(|n| n.len())
            .map_or(self.name.as_str(), String::as_str)
    }
}

/// A product the engines name whose GPUs tilefit cannot compile for (no Triton backend in its
/// toolchains): known, so a file naming it is not "unmapped", but never judged.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForeignProduct {
    /// Canonical display name.
    pub name: String,
    /// Other names, as drivers print them.
    pub aliases: Vec<String>,
    /// The Triton backend it needs (`xpu`).
    pub backend: String,
    /// Sources for what it is.
    pub from: Vec<String>,
    /// Anything a reader must know.
    #[serde(default)]
    pub notes: Option<String>,
}

/// The on-disk shape of the data file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    schema_version: u32,
    sources: BTreeMap<String, Source>,
    arch: Vec<ArchSpec>,
    product: Vec<Product>,
    #[serde(default)]
    foreign: Vec<ForeignProduct>,
}

/// Why a device table was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// The TOML did not parse or did not match the schema.
    #[error("the device table does not parse: {0}")]
    Parse(String),
    /// The file declares a schema this build does not know.
    #[error("the device table has schema_version {found}, this build reads {expected}")]
    SchemaVersion {
        /// What the file says.
        found: u32,
        /// What the code reads.
        expected: u32,
    },
    /// A value names no source.
    #[error("`{owner}`.`{field}` has no source")]
    Unsourced {
        /// Arch or product.
        owner: String,
        /// Field name.
        field: String,
    },
    /// A value cites a source id that is not declared.
    #[error("`{owner}`.`{field}` cites unknown source `{source_id}`")]
    UnknownSource {
        /// Arch or product.
        owner: String,
        /// Field name.
        field: String,
        /// The missing id.
        source_id: String,
    },
    /// NVIDIA defines opt-in = per-SM - reserved; a row that breaks it has a typo.
    #[error(
        "`{arch}`: smem_per_block_optin {optin} + smem_reserved_per_block {reserved} != smem_per_sm {per_sm}"
    )]
    OptinInvariant {
        /// The arch.
        arch: String,
        /// Opt-in bytes.
        optin: u32,
        /// Reserved bytes.
        reserved: u32,
        /// Per-SM bytes.
        per_sm: u32,
    },
    /// A budget relation that must hold on every arch does not.
    #[error("`{arch}`: {what}")]
    Inconsistent {
        /// The arch.
        arch: String,
        /// The relation that failed.
        what: String,
    },
    /// A product names an arch the table lacks.
    #[error("product `{product}` maps to unknown arch `{arch}`")]
    UnknownArch {
        /// The product.
        product: String,
        /// The arch it names.
        arch: String,
    },
    /// Two targets claim the same lookup key.
    #[error("the name `{name}` is claimed by both `{first}` and `{second}`")]
    DuplicateName {
        /// The name as written.
        name: String,
        /// First claimant.
        first: String,
        /// Second claimant.
        second: String,
    },
    /// A source is declared but nothing cites it.
    #[error("source `{0}` is declared but no value cites it")]
    UnusedSource(String),
}

/// The validated table: architectures, products, sources, and the lookup index.
#[derive(Debug, Clone)]
pub struct DeviceTable {
    sources: BTreeMap<String, Source>,
    archs: Vec<ArchSpec>,
    products: Vec<Product>,
    foreign: Vec<ForeignProduct>,
    pub(super) index: HashMap<String, TargetRef>,
}

impl DeviceTable {
    /// The table compiled into this binary, parsed and validated on first use.
    pub fn builtin() -> Result<&'static DeviceTable, TableError> {
        static TABLE: OnceLock<Result<DeviceTable, TableError>> = OnceLock::new();
        TABLE
            .get_or_init(|| DeviceTable::from_toml(BUILTIN_TABLE))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Parse and validate a table in the `data/devices.toml` format.
    pub fn from_toml(text: &str) -> Result<DeviceTable, TableError> {
        let mut raw: RawTable =
            toml::from_str(text).map_err(|e| TableError::Parse(e.to_string()))?;
        if raw.schema_version != TABLE_SCHEMA_VERSION {
            return Err(TableError::SchemaVersion {
                found: raw.schema_version,
                expected: TABLE_SCHEMA_VERSION,
            });
        }
        for (id, source) in &mut raw.sources {
            source.id.clone_from(id);
        }
        validate(&raw)?;
        let index = build_index(&raw.archs(), &raw.product)?;
        Ok(DeviceTable {
            sources: raw.sources,
            archs: raw.arch,
            products: raw.product,
            foreign: raw.foreign,
            index,
        })
    }

    /// Every architecture, in table order (NVIDIA by compute capability, then AMD).
    pub fn archs(&self) -> &[ArchSpec] {
        &self.archs
    }

    /// Every product, in table order.
    /// Products on backends tilefit does not compile for.
    pub fn foreign(&self) -> &[ForeignProduct] {
        &self.foreign
    }

    /// Every product, in table order.
    pub fn products(&self) -> &[Product] {
        &self.products
    }

    /// Every declared source, by id.
    pub fn sources(&self) -> &BTreeMap<String, Source> {
        &self.sources
    }

    /// A source by id.
    pub fn source(&self, id: &str) -> Option<&Source> {
        self.sources.get(id)
    }

    /// The arch with this exact canonical name (`sm_120`).
    pub fn arch(&self, name: &str) -> Option<&ArchSpec> {
        self.archs.iter().find(|a| a.arch == name)
    }

    /// The products that compile for an arch.
    pub fn products_of<'a>(&'a self, arch: &'a str) -> impl Iterator<Item = &'a Product> + 'a {
        self.products.iter().filter(move |p| p.arch == arch)
    }
}

impl RawTable {
    fn archs(&self) -> Vec<&str> {
        self.arch.iter().map(|a| a.arch.as_str()).collect()
    }
}

fn validate(raw: &RawTable) -> Result<(), TableError> {
    let mut cited: BTreeMap<&str, bool> = raw.sources.keys().map(|k| (k.as_str(), false)).collect();
    let mut cite = |owner: &str, field: &str, ids: &[String]| -> Result<(), TableError> {
        if ids.is_empty() {
            return Err(TableError::Unsourced {
                owner: owner.to_owned(),
                field: field.to_owned(),
            });
        }
        for id in ids {
            match cited.get_mut(id.as_str()) {
                Some(used) => *used = true,
                None => {
                    return Err(TableError::UnknownSource {
                        owner: owner.to_owned(),
                        field: field.to_owned(),
                        source_id: id.clone(),
                    });
                }
            }
        }
        Ok(())
    };

    for arch in &raw.arch {
        for (field, ids) in arch.cited_fields() {
            cite(&arch.arch, field, ids)?;
        }
        check_arch_relations(arch)?;
    }
    let arch_names = raw.archs();
    for foreign in &raw.foreign {
        cite(&foreign.name, "backend", &foreign.from)?;
    }
    for product in &raw.product {
        cite(&product.name, "arch", &product.arch_from)?;
        if let Some(sm) = &product.sm_count {
            cite(&product.name, "sm_count", &sm.sources)?;
        }
        if let Some(reports) = &product.reports {
            cite(&product.name, "reports", &reports.sources)?;
        }
        if !arch_names.contains(&product.arch.as_str()) {
            return Err(TableError::UnknownArch {
                product: product.name.clone(),
                arch: product.arch.clone(),
            });
        }
    }
    check_default_fleet(raw)?;
    if let Some((unused, _)) = cited.into_iter().find(|(_, used)| !used) {
        return Err(TableError::UnusedSource(unused.to_owned()));
    }
    Ok(())
}

/// The default fleet has exactly one device per (backend, per-block budget) class.
fn check_default_fleet(raw: &RawTable) -> Result<(), TableError> {
    let class_of = |arch_name: &str| {
        raw.arch
            .iter()
            .find(|a| a.arch == arch_name)
            .map(|a| (a.backend, a.smem_per_block_optin.value))
    };
    let mut classes: Vec<(Backend, u32)> = raw
        .arch
        .iter()
        .map(|a| (a.backend, a.smem_per_block_optin.value))
        .collect();
    classes.sort();
    classes.dedup();
    for class in classes {
        let representatives: Vec<&str> = raw
            .product
            .iter()
            .filter(|p| p.default_fleet && class_of(&p.arch) == Some(class))
            .map(|p| p.name.as_str())
            .collect();
        if representatives.len() != 1 {
            return Err(TableError::Inconsistent {
                arch: format!("{} {} bytes", class.0, class.1),
                what: format!(
                    "the default fleet needs exactly one device of this budget class, has {}",
                    if representatives.is_empty() {
                        "none".to_owned()
                    } else {
                        representatives.join(", ")
                    }
                ),
            });
        }
    }
    Ok(())
}

fn check_arch_relations(arch: &ArchSpec) -> Result<(), TableError> {
    let optin = arch.smem_per_block_optin.value;
    let reserved = arch.smem_reserved_per_block.value;
    let per_sm = arch.smem_per_sm.value;
    let default = arch.smem_per_block_default.value;
    // NVIDIA defines the opt-in budget as the per-SM capacity less the per-block reservation
    // (CCCL arch_traits.h); AMD's per-workgroup LDS limit is not derived that way on RDNA.
    if arch.backend == Backend::Cuda && optin + reserved != per_sm {
        return Err(TableError::OptinInvariant {
            arch: arch.arch.clone(),
            optin,
            reserved,
            per_sm,
        });
    }
    let inconsistent = |what: String| {
        Err(TableError::Inconsistent {
            arch: arch.arch.clone(),
            what,
        })
    };
    if default > optin {
        return inconsistent(format!(
            "default per-block {default} exceeds the opt-in budget {optin}"
        ));
    }
    if optin > per_sm {
        return inconsistent(format!("opt-in budget {optin} exceeds per-SM {per_sm}"));
    }
    if let Some(carveouts) = &arch.smem_carveouts_kib {
        let largest = carveouts.value.iter().copied().max().unwrap_or(0);
        if largest * KIB != per_sm {
            return inconsistent(format!(
                "largest carveout {largest} KiB is not the per-SM capacity {per_sm} bytes"
            ));
        }
    }
    if arch.backend == Backend::Cuda && arch.compute_capability.is_none() {
        return inconsistent("a CUDA arch needs compute_capability".to_owned());
    }
    Ok(())
}

/// Build the lookup index, refusing a table where one key names two targets.
fn build_index(
    archs: &[&str],
    products: &[Product],
) -> Result<IndexMap<String, TargetRef>, TableError> {
    let mut index: IndexMap<String, (TargetRef, String)> = IndexMap::new();
    let mut claim = |name: &str, target: TargetRef, owner: &str| -> Result<(), TableError> {
        let key = normalize_name(name);
        if key.is_empty() {
            return Err(TableError::Inconsistent {
                arch: owner.to_owned(),
                what: format!("the name `{name}` normalizes to nothing"),
            });
        }
        match index.get(&key) {
            Some((existing, _)) if *existing == target => Ok(()),
            Some((_, first)) => Err(TableError::DuplicateName {
                name: name.to_owned(),
                first: first.clone(),
                second: owner.to_owned(),
            }),
            None => {
                index.insert(key, (target, owner.to_owned()));
                Ok(())
            }
        }
    };
    for (i, arch) in archs.iter().enumerate() {
        claim(arch, TargetRef::Arch(i), arch)?;
    }
    for (i, product) in products.iter().enumerate() {
        let target = TargetRef::Product(i);
        claim(&product.name, target, &product.name)?;
        for alias in &product.aliases {
            claim(alias, target, &product.name)?;
        }
    }
    Ok(index.into_iter().map(|(k, (t, _))| (k, t)).collect())
}

/// Bytes in one KiB, the unit NVIDIA's tables use for shared memory.
pub const KIB: u32 = 1024;

impl crate::hint::Hint for TableError {
    fn hint(&self) -> Option<String> {
        Some("this is a bug in tilefit's embedded device table; please report it".to_owned())
    }
}
