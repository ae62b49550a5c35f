//! The commands as stage calls: `probe` (spec -> plan -> compile -> judge -> report), `matrix`
//! (the probe per Triton version, and config files under the Triton they were tuned with),
//! `replay` (cache index -> plan -> compile -> judge -> report), `verify` and `verify_local`
//! (either, against the local driver and a real launch) and `diff`. Beside them what every
//! command resolves first: the fleet (`fleet`) and the toolchain (`toolchains`); and `hints`, the
//! one walk of an error chain for its next step. Each is a short sequence; the stages do the work.

pub mod capture;
pub mod capture_spec;
pub mod diff;
pub mod fix_files;
pub mod fleet;
pub mod hints;
pub mod matrix;
pub mod pipeline;
pub mod probe;
pub mod probe_error;
pub mod replay;
pub mod replay_shard;
pub mod shard;
pub mod toolchains;
pub mod verify;
pub mod verify_error;
pub mod verify_local;
