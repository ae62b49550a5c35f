//! The processes of a capture run side by side: every target's run (a test suite's, in parts)
//! is a unit; up to `jobs` units run at once, each on its own thread that waits on its process.
//! Their output, their tests' progress and their ends come back to the caller's thread as
//! messages, so the caller judges a target as soon as its last part has ended while the others
//! still run.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::compile::script;
use crate::compile::toolchain::Toolchain;
use crate::device::emulated::EmulatedDevice;

use super::parts::Selection;
use super::target::{TargetRecords, run_target};
use super::{CaptureError, CaptureRun};

/// One process of the run: a target's whole run, or one part of its test suite.
pub(super) struct Unit {
    /// The target's index in the run.
    pub target: usize,
    /// The tests it runs (a script's run: the whole).
    pub selection: Selection,
    /// Whether `selection` is passed on (a pytest run).
    pub split: bool,
}

/// What a unit's thread says.
pub(super) enum Message {
    /// A line of the script's output.
    Line(usize, script::Stream, String),
    /// A unit has ended, with its records.
    Done(usize, Box<Result<TargetRecords, CaptureError>>),
}

/// Tests done and collected, as a unit's pytest plugin last wrote them.
pub(super) fn progress_of(file: &Path) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(file).ok()?;
    let mut numbers = text.split_whitespace().map(|n| n.parse::<u64>().ok());
    Some((numbers.next()??, numbers.next()??))
}

/// Where unit `index`'s pytest plugin writes its progress.
pub(super) fn progress_file(scratch: &Path, index: usize) -> PathBuf {
    scratch.join(format!("progress-{index}"))
}

/// Run every unit, up to `jobs` at once, sending what each says on `out`; returns when all have
/// ended (a cancelled run starts no more).
pub(super) fn run_all(
    toolchain: &Toolchain,
    scratch: &Path,
    run: &CaptureRun<'_>,
    (units, devices): (&[Unit], &[EmulatedDevice]),
    (jobs, cancel): (usize, &crate::cancel::Cancel),
    out: &mpsc::Sender<Message>,
) {
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, units.len().max(1)) {
            let out = out.clone();
            let next = &next;
            scope.spawn(move || {
                loop {
                    // A cancelled run starts no more processes: the targets not started are
                    // missing from the report, which says it is incomplete.
                    if cancel.is_cancelled() {
                        break;
                    }
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    let Some(unit) = units.get(index) else { break };
                    let device = &devices[unit.target];
                    let tests = unit.split.then(|| unit.selection.variable());
                    let progress = progress_file(scratch, index);
                    let lines = out.clone();
                    let result = run_target(
                        toolchain,
                        (scratch, index, tests.as_deref(), &progress),
                        run,
                        device,
                        cancel,
                        &mut |_, stream, line| {
                            let _ = lines.send(Message::Line(index, stream, line.to_owned()));
                        },
                    );
                    let _ = out.send(Message::Done(index, Box::new(result)));
                }
            });
        }
    });
}

/// A line per target, at most every `every`, while its tests run: tests done and left.
pub(super) struct Progress {
    every: Duration,
    last: Vec<Option<Instant>>,
    shown: Vec<u64>,
}

impl Progress {
    pub(super) fn new(targets: usize, every: Duration) -> Progress {
        Progress {
            every,
            last: vec![None; targets],
            shown: vec![0; targets],
        }
    }

    /// The line for `target` whose parts say (done, collected), when one is due: every part has
    /// collected, and the count moved since the last line, which was `every` ago (or all done).
    pub(super) fn line(
        &mut self,
        target: usize,
        name: &str,
        parts: &[Option<(u64, u64)>],
    ) -> Option<String> {
        let known: Option<Vec<(u64, u64)>> = parts.iter().copied().collect();
        let (done, total) = known?
            .into_iter()
            .fold((0, 0), |(d, t), (pd, pt)| (d + pd, t + pt));
        let due = self.last[target].is_none_or(|at| at.elapsed() >= self.every);
        if done == self.shown[target] || !(due || done == total) {
            return None;
        }
        self.shown[target] = done;
        self.last[target] = Some(Instant::now());
        Some(format!(
            "tilefit: [{name}] {done} of {total} tests done, {} left",
            total - done
        ))
    }
}

/// The processes of the run, and each target's among them (by index; none for a target another
/// shard runs). A pytest run's tests are split: over the shards (each shard runs its share of
/// every target's tests), then over the processes of this machine (`jobs` at once: a target's
/// share in as many parts as leave no core idle). A script's run is one process per target; its
/// shards split the targets.
pub(super) fn plan(run: &CaptureRun<'_>, jobs: usize) -> (Vec<Unit>, Vec<Vec<usize>>) {
    let (shard, shards) = run.shard.map_or((0, 1), |s| (s.index - 1, s.count));
    let split = run.module == Some("pytest");
    let mine: Vec<usize> = (0..run.targets.len())
        .filter(|&t| split || t % shards == shard)
        .collect();
    let parts = if split {
        jobs.div_ceil(mine.len().max(1)).max(1)
    } else {
        1
    };
    let mut units = Vec::new();
    let mut per_target = vec![Vec::new(); run.targets.len()];
    for &target in &mine {
        for part in 0..parts {
            per_target[target].push(units.len());
            units.push(Unit {
                target,
                selection: Selection {
                    offset: target,
                    shards,
                    shard,
                    parts,
                    part,
                },
                split,
            });
        }
    }
    (units, per_target)
}
