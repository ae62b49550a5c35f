//! The commands as stage calls: `probe` (spec -> plan -> compile -> judge -> report), `replay`
//! (cache index -> compile -> judge -> report) and `verify` (either, against the local driver and
//! a real launch). Each is a short sequence; the stages do the work.

pub mod probe;
pub mod replay;
pub mod verify;
