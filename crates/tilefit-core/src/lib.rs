//! tilefit's library: everything the `tilefit` command does, as data. It answers "does this
//! kernel config fit on device X, and which config does" from a sourced device table and the real
//! Triton compiler. It never prints, never exits and never reads the command line: the binary turns
//! flags into [`compile::Settings`], calls a [`run`] function and prints what [`render`] draws.
//!
//! The stages, lowest first; each imports only from those above it in this list (ARCHITECTURE.md,
//! kept true by the layering test):
//! 1. [`device`]: the fleet, each device's budgets from the table.
//! 2. [`vocab`]: the nouns every later stage shares (kernel source, configs, jobs, requests).
//! 3. [`input`]: specs, autotune lists, engines' config files, Triton caches, traces; beside it
//!    [`resources`] (registers and spills from binaries) and [`cuda`] (the local driver).
//! 4. [`plan`]: configs bound to the kernel's parameters, one compile job per (config, arch), the
//!    one cache key, shards.
//! 5. [`compile`]: the worker pool running the real Triton compiler, the result cache, and the
//!    one compile loop every command shares.
//! 6. [`model`]: the reports, as data.
//! 7. [`judge`]: verdicts per device, recommendations, findings and the gate; beside it
//!    [`explain`] (error messages as data) and [`fix`] (configs for engines).
//! 8. [`render`]: terminal, Markdown, JSON, HTML and GitHub annotations.
//! 9. [`run`]: each command as a sequence of those stages.
//!
//! Below them all: [`units`], [`escape`] (what came from outside, made safe to print or to write
//! as Python), [`write`] (files below an output folder, never through a link), [`cancel`],
//! [`digest`] and [`hint`] (the next step an error carries).
//!
//! ```
//! use tilefit_core::device::DeviceTable;
//! use tilefit_core::explain::explain;
//!
//! let table = DeviceTable::builtin()?;
//! // What people type, or what torch.cuda.get_device_name() prints, resolves to an arch.
//! let rtx = table.resolve("NVIDIA RTX PRO 6000 Blackwell Server Edition")?;
//! assert_eq!(rtx.arch().arch, "sm_120");
//! assert_eq!(rtx.arch().budget(), 101_376);
//!
//! // An error message becomes data: the devices that print exactly it, and the overshoot.
//! let why = explain("out of resource: shared memory, Required: 102400, Hardware limit: 101376", table)?;
//! assert!(why.limit_matches.iter().any(|m| m.arch == "sm_121" && m.margin == -1024));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod cancel;
pub mod compile;
pub mod cuda;
pub mod device;
pub mod digest;
pub mod escape;
pub mod explain;
pub mod fix;
pub mod hint;
pub mod input;
pub mod judge;
pub mod model;
pub mod plan;
pub mod render;
pub mod resources;
pub mod run;
pub mod units;
pub mod vocab;
pub mod write;
