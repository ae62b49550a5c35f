//! The commands as stage calls: `probe` (spec -> plan -> compile -> judge -> report), `replay`
//! (cache index -> compile -> judge -> report) and `verify` (either, against the local driver and
//! a real launch). Each is a short sequence; the stages do the work.

pub mod diff;
pub mod fleet;
pub mod hints;
pub mod matrix;
pub mod probe;
pub mod replay;
pub mod toolchains;
pub mod verify;
pub mod verify_local;
