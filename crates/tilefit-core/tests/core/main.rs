//! Integration tests of the library: the embedded device table against the team's sourced
//! reference, the table's invariants, name lookup, and `explain` on real error messages.

mod captured_sweep;
mod compile_loop;
mod contract;
mod device_table;
mod emitters;
mod explain_messages;
mod layering;
mod lookup;
mod pool;
mod selection;
mod spec;
