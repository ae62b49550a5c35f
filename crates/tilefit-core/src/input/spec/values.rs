//! The values a spec holds, shared by its sections: Triton's dtype names, a swept axis, TOML
//! scalars as JSON, fixed `[constexprs]`/`[options]` values, and the raw `[recommend]` table; and
//! the checks a spec file and a sweep made from values share (function, targets, fixed and swept).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::{FieldError, SpecError};

/// Scalar element types Triton's signature strings use.
pub const TRITON_DTYPES: &[&str] = &[
    "i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64", "fp8e4nv", "fp8e4b8",
    "fp8e4b15", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64",
];

/// One sweep axis: a name and the values it takes, in the order written.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Constexpr name, dtype placeholder, or option (`num_warps`, `num_stages`, ...).
    pub name: String,
    /// Values, never empty.
    pub values: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRecommend {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) per: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) prefer: Option<Vec<String>>,
    #[serde(default)]
    pub(super) baseline: toml::Table,
}

/// A float as a spec's value: JSON has no infinity or NaN, so the worker reads
/// `{"float": "-inf"}` back as the float.
pub(super) fn float_value(f: f64) -> Value {
    if f.is_finite() {
        Value::from(f)
    } else {
        serde_json::json!({ "float": f.to_string() })
    }
}

pub(super) fn scalar(value: &toml::Value) -> Option<Value> {
    match value {
        toml::Value::Integer(i) => Some(Value::from(*i)),
        toml::Value::Float(f) => Some(float_value(*f)),
        toml::Value::Boolean(b) => Some(Value::from(*b)),
        toml::Value::String(s) => Some(Value::from(s.clone())),
        _ => None,
    }
}

pub(super) fn fixed_values(
    table: &toml::Table,
    section: &str,
    axes: &[&str],
    field_error: &FieldError<'_>,
) -> Result<Vec<(String, Value)>, SpecError> {
    table
        .iter()
        .map(|(name, value)| {
            let field = format!("[{section}].{name}");
            if axes.contains(&name.as_str()) {
                return Err(fixed_and_swept(section, name, value, field_error));
            }
            let value = scalar(value).ok_or_else(|| {
                field_error(
                    &field,
                    "is not a number, boolean or string".to_owned(),
                    format!("write `{name} = 32`"),
                )
            })?;
            Ok((name.clone(), value))
        })
        .collect()
}

/// A `[constexprs]` or `[options]` value whose name is also a [sweep] axis.
pub(super) fn fixed_and_swept(
    section: &str,
    name: &str,
    value: &dyn std::fmt::Display,
    field_error: &FieldError<'_>,
) -> SpecError {
    field_error(
        &format!("[{section}].{name}"),
        "is fixed here and also swept in [sweep]".to_owned(),
        format!("remove one: a single value can be a one-value sweep, `{name} = [{value}]`"),
    )
}

/// A [sweep] axis with no values.
pub(super) fn empty_axis(name: &str, field_error: &FieldError<'_>) -> SpecError {
    field_error(
        &format!("[sweep].{name}"),
        "is an empty list, so the sweep has no configs".to_owned(),
        format!("give `{name}` at least one value, or remove it"),
    )
}

/// `[kernel].function` names a function.
pub(super) fn check_function(
    function: &str,
    field_error: &FieldError<'_>,
) -> Result<(), SpecError> {
    if function.trim().is_empty() {
        return Err(field_error(
            "[kernel].function",
            "is empty".to_owned(),
            "name the @triton.jit function to compile".to_owned(),
        ));
    }
    Ok(())
}

/// No `[targets]` device is an empty name.
pub(super) fn check_targets(
    targets: &[String],
    field_error: &FieldError<'_>,
) -> Result<(), SpecError> {
    if let Some(empty) = targets.iter().position(|t| t.trim().is_empty()) {
        return Err(field_error(
            &format!("[targets].devices[{empty}]"),
            "is empty".to_owned(),
            "name a device (`rtx-pro-6000`) or an arch (`sm_120`)".to_owned(),
        ));
    }
    Ok(())
}
