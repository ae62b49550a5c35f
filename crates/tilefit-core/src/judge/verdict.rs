//! Verdicts and recommendations, as data. A compiled size meets a device's per-block budget
//! and becomes `fits` (with headroom) or `over-budget` (with the overshoot); a failed compile is a
//! `compile-error`, `unsupported-on-target` or `failed` verdict, never an `Err`. The
//! recommendation picks, per device and per workload variant, the best config that fits by the
//! spec's rule, and says whether the baseline (the config shipped today) needs to change there.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::input::spec::{Preference, RecommendRule};
use crate::model::verdict::{DeviceVerdict, VerdictCode};
use crate::vocab::CompileStatus;
use crate::vocab::Config;

/// Judge a compile result against one budget.
pub fn judge(
    status: CompileStatus,
    shared: Option<u64>,
    device: &str,
    budget: u64,
) -> DeviceVerdict {
    let (verdict, over_by, headroom) = match (status, shared) {
        (CompileStatus::Ok, Some(bytes)) if bytes <= budget => {
            (VerdictCode::Fits, None, Some(budget - bytes))
        }
        (CompileStatus::Ok, Some(bytes)) => (VerdictCode::OverBudget, Some(bytes - budget), None),
        (CompileStatus::Ok | CompileStatus::Failed, _) => (VerdictCode::Failed, None, None),
        (CompileStatus::CompileError, _) => (VerdictCode::CompileError, None, None),
        (CompileStatus::UnsupportedOnTarget, _) => (VerdictCode::UnsupportedOnTarget, None, None),
    };
    DeviceVerdict {
        device: device.to_owned(),
        verdict,
        over_by,
        headroom,
        budget,
        threads_per_block: None,
        max_threads_per_block: None,
        blocks_per_sm: None,
        occupancy_limiter: None,
        occupancy_percent: None,
    }
}

/// The best config for one device and one workload variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// Index of the recommended config, or `None` when no swept config fits.
    pub recommended: Option<usize>,
    /// Index of the baseline config.
    pub baseline: usize,
    /// Whether the baseline fits this device.
    pub baseline_fits: bool,
}

impl Choice {
    /// The recommendation differs from the baseline.
    pub fn changed(&self) -> bool {
        self.recommended != Some(self.baseline)
    }
}

/// Group config indices into workload variants (equal values of the `per` axes), in order of
/// first appearance.
pub fn variants(configs: &[Config], rule: &RecommendRule) -> Vec<(Config, Vec<usize>)> {
    let mut groups: Vec<(Config, Vec<usize>)> = Vec::new();
    for (index, config) in configs.iter().enumerate() {
        let key: Config = config
            .iter()
            .filter(|(axis, _)| rule.per.contains(axis))
            .cloned()
            .collect();
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(index),
            None => groups.push((key, vec![index])),
        }
    }
    groups
}

/// The baseline of a variant: the first member matching the rule's baseline overrides.
pub fn baseline(configs: &[Config], members: &[usize], rule: &RecommendRule) -> usize {
    members
        .iter()
        .copied()
        .find(|&i| {
            rule.baseline
                .iter()
                .all(|(axis, value)| configs[i].iter().any(|(a, v)| a == axis && v == value))
        })
        .unwrap_or(members[0])
}

fn value_of<'a>(config: &'a Config, axis: &str) -> Option<&'a Value> {
    config.iter().find(|(a, _)| a == axis).map(|(_, v)| v)
}

fn compare_values(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    match (a, b) {
        (Some(Value::Number(x)), Some(Value::Number(y))) => x
            .as_f64()
            .unwrap_or(0.0)
            .total_cmp(&y.as_f64().unwrap_or(0.0)),
        (Some(x), Some(y)) => x.to_string().cmp(&y.to_string()),
        _ => Ordering::Equal,
    }
}

/// What a device measured of one config beyond its verdict, for `no-spills` and
/// `max:occupancy` (unknown without `--resources full`, which ranks as no preference).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Measured {
    /// The kernel spills registers.
    pub spills: Option<bool>,
    /// Resident warps over the SM's maximum, in percent.
    pub occupancy_percent: Option<u32>,
}

/// Pick among `fitting` (sweep order) by the preference rules; ties keep the first listed.
/// `keep` counts the axes on which a config equals the baseline, over the axes that no `max:`/
/// `min:` rule names and that are not workload (`per`) axes.
pub fn best(
    configs: &[Config],
    fitting: &[usize],
    baseline: usize,
    rule: &RecommendRule,
    measured: &dyn Fn(usize) -> Measured,
) -> Option<usize> {
    let ranked_axes: Vec<&str> = rule.prefer.iter().filter_map(Preference::axis).collect();
    let kept = |i: usize| {
        configs[i]
            .iter()
            .filter(|(axis, _)| !ranked_axes.contains(&axis.as_str()) && !rule.per.contains(axis))
            .filter(|(axis, value)| value_of(&configs[baseline], axis) == Some(value))
            .count()
    };
    let mut ranked = fitting.to_vec();
    ranked.sort_by(|&a, &b| {
        for preference in &rule.prefer {
            let order = match preference {
                Preference::Max(axis) => {
                    compare_values(value_of(&configs[a], axis), value_of(&configs[b], axis))
                        .reverse()
                }
                Preference::Min(axis) => {
                    compare_values(value_of(&configs[a], axis), value_of(&configs[b], axis))
                }
                Preference::Keep => kept(b).cmp(&kept(a)),
                // false < true, and unknown ranks with "does not spill" (no evidence either way).
                Preference::NoSpills => measured(a)
                    .spills
                    .unwrap_or(false)
                    .cmp(&measured(b).spills.unwrap_or(false)),
                Preference::MaxOccupancy => measured(b)
                    .occupancy_percent
                    .cmp(&measured(a).occupancy_percent),
            };
            if order != Ordering::Equal {
                return order;
            }
        }
        Ordering::Equal
    });
    ranked.first().copied()
}

/// Choose for one variant on one device, given which members fit there.
pub fn choose(
    configs: &[Config],
    members: &[usize],
    fits: impl Fn(usize) -> bool,
    rule: &RecommendRule,
) -> Choice {
    choose_measured(configs, members, fits, &|_| Measured::default(), rule)
}

/// [`choose`], with what the device measured of each config for the resource preferences.
pub fn choose_measured(
    configs: &[Config],
    members: &[usize],
    fits: impl Fn(usize) -> bool,
    measured: &dyn Fn(usize) -> Measured,
    rule: &RecommendRule,
) -> Choice {
    let baseline = baseline(configs, members, rule);
    let fitting: Vec<usize> = members.iter().copied().filter(|&i| fits(i)).collect();
    Choice {
        recommended: best(configs, &fitting, baseline, rule, measured),
        baseline,
        baseline_fits: fits(baseline),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, Value)]) -> Config {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    #[test]
    fn verdicts_from_bytes() {
        let v = judge(CompileStatus::Ok, Some(102_400), "rtx", 101_376);
        assert_eq!(
            (v.verdict, v.over_by, v.headroom),
            (VerdictCode::OverBudget, Some(1024), None)
        );
        let v = judge(CompileStatus::Ok, Some(101_376), "rtx", 101_376);
        assert_eq!((v.verdict, v.headroom), (VerdictCode::Fits, Some(0)));
        let v = judge(CompileStatus::UnsupportedOnTarget, None, "a100", 166_912);
        assert_eq!(v.verdict, VerdictCode::UnsupportedOnTarget);
    }

    #[test]
    fn deepest_fitting_stage_per_variant_and_the_baseline() {
        let configs: Vec<Config> = ["bf16", "fp8"]
            .iter()
            .flat_map(|dtype| {
                (1..=4).map(move |stages| {
                    config(&[
                        ("kv", Value::from(*dtype)),
                        ("num_stages", Value::from(stages)),
                    ])
                })
            })
            .collect();
        let rule = RecommendRule {
            per: vec!["kv".into()],
            prefer: vec![Preference::Keep, Preference::Max("num_stages".into())],
            baseline: vec![("num_stages".into(), Value::from(2))],
        };
        let groups = variants(&configs, &rule);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[1].1, vec![4, 5, 6, 7]);
        // fp8 fits only at one stage on this device: the baseline (2 stages) needs a change.
        let choice = choose(&configs, &groups[1].1, |i| i == 4, &rule);
        assert_eq!(
            choice,
            Choice {
                recommended: Some(4),
                baseline: 5,
                baseline_fits: false
            }
        );
        assert!(choice.changed());
        // bf16 fits at every depth: deepest wins, the baseline fits.
        let choice = choose(&configs, &groups[0].1, |_| true, &rule);
        assert_eq!(
            choice,
            Choice {
                recommended: Some(3),
                baseline: 1,
                baseline_fits: true
            }
        );
        // Nothing fits.
        let choice = choose(&configs, &groups[0].1, |_| false, &rule);
        assert_eq!(choice.recommended, None);
    }

    #[test]
    fn keep_prefers_the_baseline_s_other_axes_before_depth() {
        // BLOCK_N x num_stages; baseline BLOCK_N=64, 2 stages. BLOCK_N=64 fits only at 1 stage,
        // BLOCK_N=32 fits at every depth: the default rule keeps BLOCK_N=64 and drops a stage.
        let configs: Vec<Config> = [32, 64]
            .iter()
            .flat_map(|n| {
                (1..=3).map(move |s| {
                    config(&[("BLOCK_N", Value::from(*n)), ("num_stages", Value::from(s))])
                })
            })
            .collect();
        let rule = RecommendRule {
            per: vec![],
            prefer: vec![Preference::Keep, Preference::Max("num_stages".into())],
            baseline: vec![
                ("BLOCK_N".into(), Value::from(64)),
                ("num_stages".into(), Value::from(2)),
            ],
        };
        let members: Vec<usize> = (0..configs.len()).collect();
        let choice = choose(&configs, &members, |i| i <= 3, &rule);
        assert_eq!(choice.recommended, Some(3), "BLOCK_N=64 num_stages=1");
        assert!(!choice.baseline_fits);
        // With depth first, the wider tile gives way.
        let depth_first = RecommendRule {
            prefer: vec![Preference::Max("num_stages".into()), Preference::Keep],
            ..rule
        };
        let choice = choose(&configs, &members, |i| i <= 3, &depth_first);
        assert_eq!(choice.recommended, Some(2), "BLOCK_N=32 num_stages=3");
    }

    #[test]
    fn resource_preferences_rank_by_what_the_binary_said() {
        // Three stage depths that all fit; the deepest spills, the middle one has the most
        // resident warps.
        let configs: Vec<Config> = (1..=3)
            .map(|s| config(&[("num_stages", Value::from(s))]))
            .collect();
        let measured = |i: usize| Measured {
            spills: Some(i == 2),
            occupancy_percent: Some([25, 50, 12][i]),
        };
        let members = [0, 1, 2];
        let rule = |prefer: Vec<Preference>| RecommendRule {
            per: vec![],
            prefer,
            baseline: vec![],
        };
        let depth = rule(vec![Preference::Max("num_stages".into())]);
        let no_spills = rule(vec![
            Preference::NoSpills,
            Preference::Max("num_stages".into()),
        ]);
        let occupancy = rule(vec![Preference::MaxOccupancy]);
        let pick = |r: &RecommendRule| choose_measured(&configs, &members, |_| true, &measured, r);
        assert_eq!(pick(&depth).recommended, Some(2));
        assert_eq!(pick(&no_spills).recommended, Some(1));
        assert_eq!(pick(&occupancy).recommended, Some(1));
        // Without resources (unknown), the resource rules express no preference.
        let unknown = choose(&configs, &members, |_| true, &no_spills);
        assert_eq!(unknown.recommended, Some(2));
    }
}
