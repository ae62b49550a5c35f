//! The render stage: one [`Exporter`] trait with an implementation per format (terminal text,
//! Markdown, JSON, HTML) for every model a command prints: the probe's, replay's, matrix's,
//! diff's, capture's and verify's reports, `--emit-files`' summary, the cache listing, an
//! explanation, the device table (a [`DevicePage`], [`LiveDevices`]) and the toolchains (a
//! [`ToolchainListing`]). No module renders outside the trait. Exporters return text; the binary decides where it goes. The shared layout
//! (which columns, what a cell says) lives in `layout` once, so the formats differ only in how a
//! table is drawn.

mod cache_list;
mod capture;
mod capture_run;
mod devices;
mod explain;
mod exporter;
mod fix_files;
mod github;
mod html;
mod junit;
mod layout;
mod markdown;
mod matrix;
mod replay;
mod sections;
mod terminal;
mod toolchains;
mod verify;

pub use devices::{DevicePage, LiveDevices};
pub use exporter::{Exporter, Json};
pub use fix_files::outputs as fix_files_outputs;
pub use github::{GithubAnnotations, MAX_ANNOTATIONS};
pub use html::Html;
pub use junit::{Junit, xml_text};
pub use markdown::Markdown;
pub use terminal::Terminal;
pub use toolchains::ToolchainListing;
