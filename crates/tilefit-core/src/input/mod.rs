//! The input stage: everything a user hands tilefit, parsed and validated once. Probe specs
//! (`spec`), engines' per-device config files (`config_files`), their names (`config_names`) and
//! the walk of their folder (`config_walk`),
//! Triton caches indexed in Rust (`cache_index`) and the caches a replay reads (`caches`), the
//! places compiled kernels already are: `torch.compile`'s Inductor cache and tritonparse traces
//! (`sources`), an installed module's file (`installed`), JSON text as Python's loader reads it
//! (`json_text`), where an entry or a decorator is in a file (`locate`), and any file from
//! elsewhere, every string checked (`untrusted`). Errors name the file, the field and the fix; a
//! bad file or entry is one listed problem, not a failed run.

pub mod aoti;
pub mod aoti_wrapper;
pub mod cache_index;
pub mod caches;
pub mod capture;
pub mod capture_children;
pub mod config_files;
pub mod config_names;
pub mod config_walk;
pub mod installed;
pub mod json_text;
pub mod locate;
pub mod sources;
pub mod spec;
pub mod untrusted;
