//! tilefit's library: everything the `tilefit` command does, as data. It answers "does this
//! kernel config fit on device X" from a sourced device table and, in later layers, the real
//! Triton compiler. It never prints, never exits and never reads the command line: the binary
//! renders what it returns.

pub mod device;
pub mod explain;
pub mod units;
