//! tilefit's library: everything the `tilefit` command does, as data. It answers "does this
//! kernel config fit on device X" from a sourced device table and, in later layers, the real
//! Triton compiler. It never prints, never exits and never reads the command line: the binary
//! renders what it returns.
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

pub mod cache;
pub mod cancel;
pub mod config_files;
pub mod cuda;
pub mod device;
pub mod explain;
pub mod fix;
pub mod job;
pub mod listed;
pub mod probe;
pub mod replay;
pub mod report;
pub mod resources;
pub mod spec;
pub mod toolchain;
pub mod units;
pub mod verdict;
pub mod verify;
pub mod worker;
