//! A spec's `[recommend]`: the workload axes, the ranking rule among configs that fit, and the
//! baseline (the config shipped today).

use serde_json::Value;

use super::error::{FieldError, SpecError};
use super::values::{Axis, RawRecommend, scalar};

/// How the best config per device is chosen.
#[derive(Debug, Clone, PartialEq)]
pub enum Preference {
    /// Prefer larger values of the axis.
    Max(String),
    /// Prefer smaller values of the axis.
    Min(String),
    /// Prefer configs equal to the baseline on more of the axes no other rule names
    /// (`keep`): change as little as possible.
    Keep,
    /// Prefer configs that spill no registers (`no-spills`; needs `--resources full`).
    NoSpills,
    /// Prefer configs with more resident warps per SM (`max:occupancy`; needs
    /// `--resources full`).
    MaxOccupancy,
}

impl Preference {
    /// The axis it ranks by, for `max:` and `min:` rules.
    pub fn axis(&self) -> Option<&str> {
        match self {
            Preference::Max(axis) | Preference::Min(axis) => Some(axis),
            Preference::Keep | Preference::NoSpills | Preference::MaxOccupancy => None,
        }
    }

    /// `max:num_stages`, `keep`.
    pub fn describe(&self) -> String {
        match self {
            Preference::Max(axis) => format!("max:{axis}"),
            Preference::Min(axis) => format!("min:{axis}"),
            Preference::Keep => "keep".to_owned(),
            Preference::NoSpills => "no-spills".to_owned(),
            Preference::MaxOccupancy => "max:occupancy".to_owned(),
        }
    }
}

/// The recommendation rule.
#[derive(Debug, Clone, PartialEq)]
pub struct RecommendRule {
    /// Axes that describe the workload rather than a choice (a dtype the model dictates): one
    /// recommendation per device and per value of these. Default: the dtype placeholders.
    pub per: Vec<String>,
    /// Ranking among the configs that fit, first rule first; then `keep` (fewest changes from the
    /// baseline) if not listed; ties go to the config listed first. Default: `keep`, then
    /// `max:num_stages`: keep every other axis as the baseline has it, take the deepest pipeline
    /// that fits.
    pub prefer: Vec<Preference>,
    /// Overrides of the first listed config that make the baseline (the config shipped today).
    pub baseline: Vec<(String, Value)>,
}

pub(super) fn recommend_rule(
    raw: Option<RawRecommend>,
    sweep: &[Axis],
    placeholders: &[String],
    field_error: &FieldError<'_>,
) -> Result<RecommendRule, SpecError> {
    let raw = raw.unwrap_or(RawRecommend {
        per: None,
        prefer: None,
        baseline: toml::Table::new(),
    });
    let axis_names: Vec<&str> = sweep.iter().map(|a| a.name.as_str()).collect();
    let check_axis = |field: &str, axis: &str| -> Result<(), SpecError> {
        if axis_names.contains(&axis) {
            Ok(())
        } else {
            Err(field_error(
                field,
                format!("names `{axis}`, which is not a [sweep] axis"),
                format!("swept axes: {}", axis_names.join(", ")),
            ))
        }
    };
    let per = match raw.per {
        Some(per) => {
            for axis in &per {
                check_axis("[recommend].per", axis)?;
            }
            per
        }
        None => placeholders
            .iter()
            .filter(|p| axis_names.contains(&p.as_str()))
            .cloned()
            .collect(),
    };
    let prefer = match raw.prefer {
        Some(rules) => rules
            .iter()
            .map(|rule| {
                match rule.as_str() {
                    "keep" => return Ok(Preference::Keep),
                    "no-spills" => return Ok(Preference::NoSpills),
                    "max:occupancy" => return Ok(Preference::MaxOccupancy),
                    _ => {}
                }
                let (direction, axis) = rule.split_once(':').unwrap_or(("max", rule.as_str()));
                check_axis("[recommend].prefer", axis)?;
                match direction {
                    "max" => Ok(Preference::Max(axis.to_owned())),
                    "min" => Ok(Preference::Min(axis.to_owned())),
                    other => Err(field_error(
                        "[recommend].prefer",
                        format!("has the direction `{other}`"),
                        "write `max:AXIS` or `min:AXIS`".to_owned(),
                    )),
                }
            })
            .collect::<Result<_, _>>()?,
        None if axis_names.contains(&"num_stages") => {
            vec![Preference::Keep, Preference::Max("num_stages".to_owned())]
        }
        None => vec![Preference::Keep],
    };
    let mut prefer = prefer;
    if !prefer.contains(&Preference::Keep) {
        prefer.push(Preference::Keep);
    }
    let mut baseline = Vec::new();
    for (axis, value) in &raw.baseline {
        let field = format!("[recommend].baseline.{axis}");
        check_axis(&field, axis)?;
        let value = scalar(value).unwrap_or(Value::Null);
        let swept = &sweep
            .iter()
            .find(|a| &a.name == axis)
            .expect("checked above")
            .values;
        if !swept.contains(&value) {
            return Err(field_error(
                &field,
                format!("is `{value}`, which the sweep does not include"),
                "the baseline must be one of the swept configs".to_owned(),
            ));
        }
        baseline.push((axis.clone(), value));
    }
    Ok(RecommendRule {
        per,
        prefer,
        baseline,
    })
}
