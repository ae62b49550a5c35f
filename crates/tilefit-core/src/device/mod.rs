//! Device budgets: the embedded, sourced table of GPU architectures and products, and the
//! forgiving lookup that turns what people type (`rtx-pro-6000`, `sm120`, `12.0`, `mi300x`, the
//! string `torch.cuda.get_device_name()` returns) into one architecture's limits.
//!
//! Every number here comes from `data/devices.toml`, compiled into the binary and validated once at
//! load; no budget is written as a literal in code. This module never prints and never guesses: an
//! unknown name is an error that carries the closest known names.

pub mod emulated;
mod listing;
mod lookup;
mod names;
pub mod occupancy;
mod table;
mod target;

pub use listing::{ArchListing, DeviceListing, ProductListing, SourceListing};
pub use lookup::{LookupError, Resolved};
pub use names::normalize_name;
pub use table::{
    ArchSpec, Backend, DeviceTable, KIB, Product, Segment, Source, SourceKind, Sourced, TableError,
};
pub use target::{Target, TargetDevice};
