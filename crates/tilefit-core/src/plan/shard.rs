//! Sharded sweeps: which of a run's jobs shard K of N compiles. Every shard plans the whole run
//! and takes its own part, so N machines that share nothing (a CI matrix, a Kubernetes Indexed
//! Job, a Slurm array) split the work without talking to each other, and `tilefit merge` puts the
//! parts back together. The split is deterministic: jobs with the same cache key stay together,
//! and groups go, costliest first (ties broken by a digest of the key, never by input order), to
//! the shard with the least estimated cost so far.

use std::collections::{HashMap, HashSet};

use crate::digest::sha256;
use crate::plan::Job;

/// The most shards one run may be split into: far beyond any CI matrix or job array, and small
/// enough that a shard file from elsewhere cannot make the merge allocate or print without bound.
pub const MAX_SHARDS: usize = 10_000;

/// Shard `index` of `count` (1-based: `1/3`, `2/3`, `3/3`). Always `1 <= index <= count <=`
/// [`MAX_SHARDS`]: a shard file read from elsewhere is checked when it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "RawShard")]
pub struct Shard {
    /// Which shard, from 1.
    pub index: usize,
    /// How many shards.
    pub count: usize,
}

/// A shard as a file holds it, before its range is checked.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawShard {
    index: usize,
    count: usize,
}

impl TryFrom<RawShard> for Shard {
    type Error = String;

    fn try_from(raw: RawShard) -> Result<Shard, String> {
        Shard::checked(raw.index, raw.count)
            .map_err(|problem| format!("field `shard` ({}/{}): {problem}", raw.index, raw.count))
    }
}

/// Why a shard could not be read from the command line or the environment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// Not `K/N` with 1 <= K <= N.
    #[error("`{text}` is not a shard: write K/N with 1 <= K <= N, e.g. `2/3`")]
    Syntax {
        /// What was given.
        text: String,
    },
    /// `auto` found no scheduler's variables.
    #[error(
        "`--shard auto` found no shard in the environment: set TILEFIT_SHARD=K/N, or run in a Kubernetes Indexed Job (JOB_COMPLETION_INDEX with TILEFIT_SHARD_COUNT) or a Slurm job array (SLURM_ARRAY_TASK_ID)"
    )]
    NotFound,
    /// A scheduler variable is set but cannot be used.
    #[error("`{variable}={value}`: {problem}")]
    Variable {
        /// The variable.
        variable: String,
        /// Its value.
        value: String,
        /// What is wrong with it.
        problem: String,
    },
}

impl Shard {
    /// `K/N`.
    pub fn parse(text: &str) -> Result<Shard, ShardError> {
        let syntax = || ShardError::Syntax {
            text: text.to_owned(),
        };
        let (index, count) = text.trim().split_once('/').ok_or_else(syntax)?;
        let index: usize = index.trim().parse().map_err(|_| syntax())?;
        let count: usize = count.trim().parse().map_err(|_| syntax())?;
        Shard::checked(index, count).map_err(|_| syntax())
    }

    /// Shard `index` of `count`, or what is wrong with the pair.
    pub fn checked(index: usize, count: usize) -> Result<Shard, String> {
        if count == 0 || count > MAX_SHARDS {
            return Err(format!(
                "the shard count must be between 1 and {MAX_SHARDS}"
            ));
        }
        if index == 0 || index > count {
            return Err(format!("the shard index must be between 1 and {count}"));
        }
        Ok(Shard { index, count })
    }

    /// `--shard auto`: from `TILEFIT_SHARD` (`K/N`, what a GitHub Actions matrix sets), a
    /// Kubernetes Indexed Job (`JOB_COMPLETION_INDEX`, 0-based, with `TILEFIT_SHARD_COUNT` since
    /// the Job's completions are not in its pods' environment), or a Slurm job array
    /// (`SLURM_ARRAY_TASK_ID` within `SLURM_ARRAY_TASK_MIN`..`SLURM_ARRAY_TASK_MAX`, or with
    /// `SLURM_ARRAY_TASK_COUNT`), in that order.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Shard, ShardError> {
        let number = |name: &str| -> Result<Option<usize>, ShardError> {
            var(name)
                .map(|value| {
                    value
                        .trim()
                        .parse::<usize>()
                        .map_err(|_| ShardError::Variable {
                            variable: name.to_owned(),
                            value: value.clone(),
                            problem: "not a whole number".to_owned(),
                        })
                })
                .transpose()
        };
        if let Some(text) = var("TILEFIT_SHARD").filter(|t| t.trim() != "auto") {
            return Shard::parse(&text).map_err(|_| ShardError::Variable {
                variable: "TILEFIT_SHARD".to_owned(),
                value: text,
                problem: "write K/N with 1 <= K <= N, e.g. 2/3".to_owned(),
            });
        }
        if let Some(index) = number("JOB_COMPLETION_INDEX")? {
            let count = number("TILEFIT_SHARD_COUNT")?.ok_or_else(|| ShardError::Variable {
                variable: "JOB_COMPLETION_INDEX".to_owned(),
                value: index.to_string(),
                problem: "set TILEFIT_SHARD_COUNT to the Job's `completions` too".to_owned(),
            })?;
            return in_range("JOB_COMPLETION_INDEX", index + 1, count);
        }
        if let Some(id) = number("SLURM_ARRAY_TASK_ID")? {
            let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            let count = match (
                number("SLURM_ARRAY_TASK_MAX")?,
                number("SLURM_ARRAY_TASK_COUNT")?,
            ) {
                (Some(max), _) if max >= min => max - min + 1,
                (_, Some(count)) => count,
                _ => {
                    return Err(ShardError::Variable {
                        variable: "SLURM_ARRAY_TASK_ID".to_owned(),
                        value: id.to_string(),
                        problem: "SLURM_ARRAY_TASK_MAX or SLURM_ARRAY_TASK_COUNT is not set"
                            .to_owned(),
                    });
                }
            };
            let index = id.checked_sub(min).ok_or_else(|| ShardError::Variable {
                variable: "SLURM_ARRAY_TASK_ID".to_owned(),
                value: id.to_string(),
                problem: format!("below SLURM_ARRAY_TASK_MIN={min}"),
            })?;
            return in_range("SLURM_ARRAY_TASK_ID", index + 1, count);
        }
        Err(ShardError::NotFound)
    }

    /// `2/3`.
    pub fn describe(self) -> String {
        format!("{}/{}", self.index, self.count)
    }
}

fn in_range(variable: &str, index: usize, count: usize) -> Result<Shard, ShardError> {
    if index == 0 || count == 0 || index > count {
        return Err(ShardError::Variable {
            variable: variable.to_owned(),
            value: (index - 1).to_string(),
            problem: format!("outside the {count} shards"),
        });
    }
    Ok(Shard { index, count })
}

/// The shard (1-based) of every job. Twins (same key) share a shard.
pub fn assign(jobs: &[Job], count: usize) -> Vec<usize> {
    let count = count.max(1);
    let mut groups: Vec<(&str, u64)> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for job in jobs {
        if seen.insert(job.key.as_str()) {
            groups.push((job.key.as_str(), job.cost.max(1)));
        }
    }
    let mut ordered: Vec<(u64, String, &str)> = groups
        .into_iter()
        .map(|(key, cost)| (cost, sha256(key.as_bytes()), key))
        .collect();
    ordered.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut load = vec![0_u128; count];
    let mut shard_of: HashMap<&str, usize> = HashMap::new();
    for (cost, _, key) in ordered {
        let lightest = (0..count).min_by_key(|&s| (load[s], s)).unwrap_or(0);
        load[lightest] += u128::from(cost);
        shard_of.insert(key, lightest + 1);
    }
    jobs.iter().map(|job| shard_of[job.key.as_str()]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::Request;

    fn job(key: &str, cost: u64) -> Job {
        Job {
            request: Request::Reap { pid: 0, wait_ms: 0 },
            key: key.to_owned(),
            label: key.to_owned(),
            cost,
        }
    }

    #[test]
    fn shards_parse_and_refuse_what_is_not_k_of_n() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { index: 2, count: 3 }));
        for bad in ["0/3", "4/3", "3", "a/b", "1/0", ""] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn schedulers_variables_give_the_shard() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert_eq!(
            Shard::from_env(env(&[("TILEFIT_SHARD", "3/4")])),
            Ok(Shard { index: 3, count: 4 })
        );
        assert_eq!(
            Shard::from_env(env(&[
                ("JOB_COMPLETION_INDEX", "0"),
                ("TILEFIT_SHARD_COUNT", "3")
            ])),
            Ok(Shard { index: 1, count: 3 })
        );
        assert!(matches!(
            Shard::from_env(env(&[("JOB_COMPLETION_INDEX", "0")])),
            Err(ShardError::Variable { .. })
        ));
        assert_eq!(
            Shard::from_env(env(&[
                ("SLURM_ARRAY_TASK_ID", "7"),
                ("SLURM_ARRAY_TASK_MIN", "5"),
                ("SLURM_ARRAY_TASK_MAX", "8")
            ])),
            Ok(Shard { index: 3, count: 4 })
        );
        assert_eq!(
            Shard::from_env(env(&[
                ("SLURM_ARRAY_TASK_ID", "1"),
                ("SLURM_ARRAY_TASK_COUNT", "2")
            ])),
            Ok(Shard { index: 2, count: 2 })
        );
        assert_eq!(Shard::from_env(env(&[])), Err(ShardError::NotFound));
    }

    #[test]
    fn the_split_is_balanced_stable_and_keeps_twins_together() {
        let mut jobs: Vec<Job> = (0..30).map(|i| job(&format!("k{i}"), 1 + i % 7)).collect();
        jobs.push(job("k3", 4));
        let shards = assign(&jobs, 3);
        assert_eq!(shards[3], shards[30], "twins share a shard");
        let mut reversed = jobs.clone();
        reversed.reverse();
        let mut again = assign(&reversed, 3);
        again.reverse();
        assert_eq!(shards, again, "input order does not change the split");
        let mut load = [0_u64; 3];
        for (job, shard) in jobs.iter().zip(&shards).take(30) {
            load[shard - 1] += job.cost;
        }
        let (min, max) = (load.iter().min().unwrap(), load.iter().max().unwrap());
        assert!(max - min <= 7, "balanced by cost: {load:?}");
        assert!(shards.iter().all(|&s| (1..=3).contains(&s)));
    }
}
