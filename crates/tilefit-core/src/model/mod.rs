//! The model: the report types every command produces and `tilefit report` reads back. A probe's
//! report (`probe`), a replay's (`replay`), the listed configs' summary both carry (`listed`), the
//! verdicts in them (`verdict`), one shard's part of a sharded probe (`shard`), a Triton version
//! matrix (`matrix`), a verification (`verify`) and what changed between two reports (`diff`);
//! what each says it is (`kind`), how a config is named (`naming`), what a report judged
//! (`identity`), and the typed readers of saved reports (`saved`) and of shards and matrices
//! (`read`).
//! Data only: built by `run`, drawn by `render`.

pub mod capture;
pub mod diff;
pub mod fix_files;
pub mod identity;
pub mod kind;
pub mod listed;
pub mod matrix;
pub mod naming;
pub mod probe;
pub mod read;
pub mod replay;
pub mod saved;
pub mod shard;
pub mod verdict;
pub mod verify;
