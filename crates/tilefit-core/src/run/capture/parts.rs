//! One target's run in parts: a test suite's tests split over processes (the parts of one
//! machine, the shards of several), each part's records read on its own, then put back into the
//! records one process would have written.
//!
//! Every record is put in the order of the test it belongs to (the test's index in the suite as
//! pytest collected it: the same in every part), and, within a test, in the order its process
//! made it. A run in one part goes through the same ordering, so a split run's records equal the
//! whole run's wherever a test does not depend on the tests before it (the emulation's autotuner
//! tries every config afresh at every launch): launch for launch, check for check.

use std::collections::{BTreeMap, HashMap};

use crate::input::capture::Records;
use crate::model::capture::ScriptRun;

/// Which tests of a suite one process runs: test `i` (in pytest's collection order) belongs to
/// shard `(i + offset) % shards`, and within its shard to part `((i + offset) / shards) % parts`.
/// The offset is the target's index, so the shards of a run with fewer tests than shards still
/// spread the targets' tests over every shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selection {
    /// The target's index.
    pub offset: usize,
    /// How many shards the run is split into.
    pub shards: usize,
    /// This shard, from 0.
    pub shard: usize,
    /// How many processes this shard runs the target's tests in.
    pub parts: usize,
    /// This process, from 0.
    pub part: usize,
}

impl Selection {
    /// The whole suite in one process.
    pub const WHOLE: Selection = Selection {
        offset: 0,
        shards: 1,
        shard: 0,
        parts: 1,
        part: 0,
    };

    /// The value of `TILEFIT_CAPTURE_TESTS` the pytest plugin reads.
    pub fn variable(&self) -> String {
        format!(
            "{},{},{},{},{}",
            self.offset, self.shards, self.shard, self.parts, self.part
        )
    }

    /// Whether test `index` is this selection's (what the plugin computes).
    pub fn keeps(&self, index: usize) -> bool {
        let at = index + self.offset;
        at % self.shards == self.shard && (at / self.shards) % self.parts == self.part
    }
}

/// The test index of every test the records hold, by node id.
fn test_indexes(records: &Records) -> HashMap<String, u64> {
    records
        .tests
        .iter()
        .filter_map(|t| Some((t.nodeid.clone(), t.index?)))
        .collect()
}

/// Put every record in the order of its test (records of no test first: the suite's own), then
/// in the order it was made; autotune groups numbered again in order of appearance.
pub fn order_by_tests(records: &mut Records) {
    let indexes = test_indexes(records);
    let key = |call: &Option<String>| -> i128 {
        call.as_ref()
            .and_then(|c| indexes.get(c))
            .map_or(-1, |&i| i128::from(i))
    };
    records.launches.sort_by_key(|l| key(&l.call));
    records.stopped.sort_by_key(|s| key(&s.call));
    records.errors.sort_by_key(|e| key(&e.call));
    records.checks.sort_by_key(|c| key(&c.call));
    records.assumptions.sort_by_key(|a| key(&a.call));
    records.tests.sort_by_key(|t| t.index.unwrap_or(u64::MAX));
    let mut groups: BTreeMap<u64, u64> = BTreeMap::new();
    for launch in &mut records.launches {
        if let Some(role) = launch.autotune.as_mut() {
            let next = groups.len() as u64 + 1;
            role.group = *groups.entry(role.group).or_insert(next);
        }
    }
}

/// The records of the parts of one target's run (each already joined with its children's), as
/// one process's: records of a test from the part that ran it; the suite's own records (those
/// of no test: collection, session set-up) once, as every part makes them alike; the calls
/// counted as one process counts them (each part counts the suite's own call).
pub fn merge(parts: Vec<Records>) -> Records {
    let mut parts = parts.into_iter();
    let Some(mut merged) = parts.next() else {
        return Records::empty();
    };
    let in_a_test = |call: &Option<String>, tests: &HashMap<String, u64>| {
        call.as_ref().is_some_and(|c| tests.contains_key(c))
    };
    for part in parts {
        let tests = test_indexes(&part);
        let offset = merged
            .launches
            .iter()
            .filter_map(|l| l.autotune.as_ref().map(|a| a.group))
            .max()
            .unwrap_or(0);
        for mut launch in part.launches {
            if !in_a_test(&launch.call, &tests) {
                continue;
            }
            if let Some(role) = launch.autotune.as_mut() {
                role.group += offset;
            }
            merged.launches.push(launch);
        }
        merged.stopped.extend(
            part.stopped
                .into_iter()
                .filter(|s| in_a_test(&s.call, &tests)),
        );
        merged.errors.extend(
            part.errors
                .into_iter()
                .filter(|e| in_a_test(&e.call, &tests)),
        );
        merged.checks.extend(
            part.checks
                .into_iter()
                .filter(|c| in_a_test(&c.call, &tests)),
        );
        merged.assumptions.extend(
            part.assumptions
                .into_iter()
                .filter(|a| in_a_test(&a.call, &tests)),
        );
        merged.tests.extend(part.tests);
        merged.scopes.extend(part.scopes);
        // Each part's calls count its own start once.
        merged.calls += part.calls.saturating_sub(1);
        merged.exit = worse_exit(merged.exit, part.exit);
        merged.complete &= part.complete;
        for (name, version) in part.versions {
            merged.versions.entry(name).or_insert(version);
        }
    }
    order_by_tests(&mut merged);
    merged
}

/// The exit status of the whole from two parts': a failure's over a success.
fn worse_exit(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(0) | None, other) | (other, Some(0) | None) => other.or(a).or(b),
        (Some(x), Some(_)) => Some(x),
    }
}

/// How the processes of one target's run ended, as one: the first that did not exit 0 (its
/// status and its output's tail), else the first; the longest time; every line counted.
pub fn combine_runs(runs: Vec<ScriptRun>) -> Option<ScriptRun> {
    let seconds = runs.iter().map(|r| r.seconds).fold(0.0, f64::max);
    let lines = runs.iter().map(|r| r.lines).sum();
    let failed = runs
        .iter()
        .position(|r| !(r.end == "exited" && r.code == Some(0)))
        .unwrap_or(0);
    let mut run = runs.into_iter().nth(failed)?;
    run.seconds = seconds;
    run.lines = lines;
    Some(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_test_is_in_exactly_one_shard_and_part() {
        for (shards, parts) in [(1, 1), (3, 1), (1, 4), (3, 2), (5, 3)] {
            for offset in 0..4 {
                for index in 0..50 {
                    let owners = (0..shards)
                        .flat_map(|shard| (0..parts).map(move |part| (shard, part)))
                        .filter(|&(shard, part)| {
                            Selection {
                                offset,
                                shards,
                                shard,
                                parts,
                                part,
                            }
                            .keeps(index)
                        })
                        .count();
                    assert_eq!(owners, 1, "{shards} shards {parts} parts test {index}");
                }
            }
        }
    }

    #[test]
    fn a_failed_parts_exit_wins() {
        assert_eq!(worse_exit(Some(0), Some(1)), Some(1));
        assert_eq!(worse_exit(Some(2), Some(0)), Some(2));
        assert_eq!(worse_exit(None, Some(0)), Some(0));
        assert_eq!(worse_exit(Some(0), Some(0)), Some(0));
    }
}
