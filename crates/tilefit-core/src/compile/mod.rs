//! The compile stage: Python workers that run the real Triton compiler, and the one loop every
//! command runs them through.
//!
//! - `protocol`: the typed JSON-lines protocol (one [`Request`] enum, one [`Reply`], an
//!   [`ErrorKind`] enum), mirrored by the embedded worker script, assembled at build time from
//!   the parts of `worker/` in name order: `00_extract` (a kernel loaded from its file without
//!   running the rest of it), `10_protocol` (stdout kept for protocol lines), `20_stand_ins`
//!   (torch and tensors without their imports), `30_kernel` (loading and inspection),
//!   `40_compile` (the JIT's specialization, the early stop, IR recompiles), `50_launch`,
//!   `60_errors` (what a failure was), `70_zygote` (the fork server) and `90_serve` (the loop).
//! - `process` and `pool`: one worker process (its own process group, handshake, timeouts, fault
//!   detection) and a pool that runs jobs on N of them, one arch per process, replacing any that
//!   crash, hang or garble the protocol. A worker's fault fails only the job it was running.
//! - `zygote`: fork servers, one per arch, that start workers in milliseconds.
//! - `folders`: tilefit's own folders (cache, scratch): private, this user's, never a link; the
//!   sweep of killed runs' scratch.
//! - `toolchain`: the Python + Triton environments (managed, or the user's).
//! - `cache`: the versioned result cache, atomic writes, broken entries recomputed.
//! - `inspect`: what a kernel takes; `outcome`: what one compile came to.
//! - `package`: tilefit's Python package, embedded, for the emulated process of a capture.
//! - `script`: a user's script run under control (`tilefit capture`): process group, time limit,
//!   cancel, output streamed with a bounded tail; `guests`: every process it started, found by
//!   its mark and ended with it.
//! - `run`: [`Settings`], the one cache-key scheme, the scratch folder and [`compile_all`], the
//!   loop probe, replay and verify share.
//!
//! Nothing here prints; progress goes to a callback as [`Event`]s.

pub mod cache;
pub mod folders;

pub mod guests;
pub mod inspect;
pub mod outcome;
pub mod package;
mod pool;
mod process;
mod protocol;
pub mod reporter;
pub mod run;
pub mod script;
pub mod toolchain;
mod zygote;

pub use inspect::{InspectError, inspect};
pub use outcome::{CompileOutcome, OutcomeError, outcome_of_reply};
pub use pool::{Pool, WorkerStart, WorkersUsed};
pub use process::{Worker, WorkerCommand, WorkerExit, WorkerFault};
pub use protocol::{
    ChildExit, ErrorKind, Hello, Passed, Reply, ReplyBody, ReplyError, SourceLocation, Timings,
    write_worker_package,
};
pub use reporter::{Event, Reporter, Reporting, Silent};
pub use run::{Compiled, Scratch, Settings, compile_all, complete, needs_workers, pool_for};
