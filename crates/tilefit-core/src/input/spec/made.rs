//! A sweep made from values rather than read from a spec file (`tilefit capture`'s compiles):
//! its parts as typed values, given the checks a spec file's sections get, with the same field
//! names and fixes in their errors. Nothing goes through TOML to become a [`Sweep`].

use std::path::PathBuf;

use serde_json::Value;

use super::args::{check_against_axes, check_template};
use super::error::FieldError;
use super::recommend::recommend_rule;
use super::values::{check_function, check_targets, empty_axis, fixed_and_swept, float_value};
use super::{
    ArgTemplate, AutotuneUse, Axis, FilesSpec, LaunchSettings, SpecError, Sweep, SweepOrigin,
};
use crate::vocab::KernelSource;

/// The parts of a sweep made in memory: one kernel, its arguments, fixed values and axes, for
/// some targets. Its configs are its axes' cross product; a kernel's own autotune list is not
/// swept.
#[derive(Debug, Clone)]
pub struct SweepParts {
    /// What the sweep is made from (errors name it).
    pub origin: SweepOrigin,
    /// The kernel's source file (a capture's scope file).
    pub kernel_file: PathBuf,
    /// The `@triton.jit` function.
    pub function: String,
    /// How the module loads, and the module-level names given.
    pub source: KernelSource,
    /// The non-constexpr arguments, in the kernel's order.
    pub args: Vec<(String, ArgTemplate)>,
    /// Fixed constexprs.
    pub constexprs: Vec<(String, Value)>,
    /// Fixed compile options.
    pub options: Vec<(String, Value)>,
    /// The axes, outermost first.
    pub axes: Vec<Axis>,
    /// Device names or archs.
    pub targets: Vec<String>,
}

impl Sweep {
    /// A sweep of `parts`, checked as a spec file with these sections would be: every argument
    /// a Triton type (an int with an integer value), every placeholder an axis, no value both
    /// fixed and swept, no empty axis or target; the pick per device is the default rule over
    /// the axes, as for a spec without `[recommend]`.
    pub fn of_parts(parts: SweepParts) -> Result<Sweep, SpecError> {
        let shown = parts.origin.shown();
        let field_error = |field: &str, problem: String, fix: String| SpecError::Field {
            path: shown.clone(),
            field: field.to_owned(),
            problem,
            fix,
        };
        check_function(&parts.function, &field_error)?;
        let axis_names: Vec<&str> = parts.axes.iter().map(|a| a.name.as_str()).collect();
        if let Some(axis) = parts.axes.iter().find(|a| a.values.is_empty()) {
            return Err(empty_axis(&axis.name, &field_error));
        }
        for (section, fixed) in [
            ("constexprs", &parts.constexprs),
            ("options", &parts.options),
        ] {
            if let Some((name, value)) = fixed
                .iter()
                .find(|(name, _)| axis_names.contains(&name.as_str()))
            {
                return Err(fixed_and_swept(section, name, value, &field_error));
            }
        }
        let placeholders = check_args(&parts.args, &axis_names, &field_error)?;
        check_targets(&parts.targets, &field_error)?;
        let recommend = recommend_rule(None, &parts.axes, &placeholders, &field_error)?;
        Ok(Sweep {
            origin: parts.origin,
            kernel_file: parts.kernel_file,
            function: parts.function,
            triton: None,
            source: parts.source,
            args: parts.args,
            constexprs: parts.constexprs,
            options: parts.options,
            sweep: parts.axes,
            targets: parts.targets,
            recommend,
            launch: LaunchSettings::default(),
            autotune: AutotuneUse::Ignored,
            config_files: None,
            config_set: None,
            files: FilesSpec::default(),
            listed: None,
            raw_recommend: None,
        })
    }
}

/// Each argument checked as `[args]` is: a descriptor's ranks and element type, a type that is
/// Triton's (an int with an integer value), placeholders that are axes, no value both given and
/// swept. Returns the placeholders the types use, in first-used order.
fn check_args(
    args: &[(String, ArgTemplate)],
    axis_names: &[&str],
    field_error: &FieldError<'_>,
) -> Result<Vec<String>, SpecError> {
    let mut placeholders: Vec<String> = Vec::new();
    for (name, template) in args {
        check_template(name, template, axis_names, field_error)?;
        check_against_axes(name, template, axis_names, &mut placeholders, field_error)?;
    }
    Ok(placeholders)
}

/// A value as a spec holds it: a JSON scalar, a non-finite float as `{"float": "inf"}` (JSON has
/// none), an integer too large for TOML as the float it is. `None` for what a spec cannot hold
/// (null, lists, tables).
pub fn spec_scalar(value: &Value) -> Option<Value> {
    Some(match value {
        Value::Bool(_) | Value::String(_) => value.clone(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Value::from(i),
            (None, Some(f)) => float_value(f),
            _ => return None,
        },
        Value::Object(o) if o.len() == 1 => {
            float_value(o.get("float")?.as_str()?.parse::<f64>().ok()?)
        }
        Value::Null | Value::Array(_) | Value::Object(_) => return None,
    })
}
