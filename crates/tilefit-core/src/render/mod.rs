//! The render stage: one [`Exporter`] trait with an implementation per format (terminal text,
//! Markdown, JSON, HTML) for the probe's, the replay's and the matrix's report models
//! (`crate::model`). Exporters return text; the binary decides where it goes. The shared layout
//! (which columns, what a cell says) lives in `layout` once, so the formats differ only in how a
//! table is drawn.

pub mod cache_list;
mod capture;
pub mod devices;
pub mod explain;
mod exporter;
pub mod fix_files;
mod github;
mod html;
mod layout;
mod markdown;
mod matrix;
mod replay;
mod sections;
mod terminal;
pub mod toolchains;
pub mod verify;

pub use exporter::{Exporter, Json};
pub use github::{GithubAnnotations, MAX_ANNOTATIONS};
pub use html::Html;
pub use markdown::Markdown;
pub use terminal::Terminal;
