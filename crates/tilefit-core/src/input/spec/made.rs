//! A sweep made from values rather than read from a spec file (`tilefit capture`'s compiles):
//! its parts as typed values, given the checks a spec file's sections get, with the same field
//! names and fixes in their errors. Nothing goes through TOML to become a [`Sweep`].

use std::path::PathBuf;

use serde_json::Value;

use super::args::{check_arg_type, check_descriptor, placeholders_are_axes, placeholders_in};
use super::error::FieldError;
use super::recommend::recommend_rule;
use super::{
    ArgTemplate, AutotuneUse, Axis, DEFAULT_LAUNCH_BUFFER_BYTES, FilesSpec, LaunchSettings,
    SpecError, Sweep, SweepOrigin,
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
        if parts.function.trim().is_empty() {
            return Err(field_error(
                "[kernel].function",
                "is empty".to_owned(),
                "name the @triton.jit function to compile".to_owned(),
            ));
        }
        let axis_names: Vec<&str> = parts.axes.iter().map(|a| a.name.as_str()).collect();
        for axis in &parts.axes {
            if axis.values.is_empty() {
                return Err(field_error(
                    &format!("[sweep].{}", axis.name),
                    "is an empty list, so the sweep has no configs".to_owned(),
                    format!("give `{}` at least one value, or remove it", axis.name),
                ));
            }
        }
        for (section, fixed) in [
            ("constexprs", &parts.constexprs),
            ("options", &parts.options),
        ] {
            if let Some((name, value)) = fixed
                .iter()
                .find(|(name, _)| axis_names.contains(&name.as_str()))
            {
                return Err(field_error(
                    &format!("[{section}].{name}"),
                    "is fixed here and also swept in [sweep]".to_owned(),
                    format!(
                        "remove one: a single value can be a one-value sweep, `{name} = [{value}]`"
                    ),
                ));
            }
        }
        let placeholders = check_args(&parts.args, &axis_names, &field_error)?;
        if let Some(empty) = parts.targets.iter().position(|t| t.trim().is_empty()) {
            return Err(field_error(
                &format!("[targets].devices[{empty}]"),
                "is empty".to_owned(),
                "name a device (`rtx-pro-6000`) or an arch (`sm_120`)".to_owned(),
            ));
        }
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
            launch: LaunchSettings {
                grid: vec![1],
                buffer_bytes: DEFAULT_LAUNCH_BUFFER_BYTES,
            },
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
        let field = format!("[args].{name}");
        if let Some(descriptor) = &template.descriptor {
            check_descriptor(name, descriptor, axis_names, field_error)?;
        } else {
            placeholders_are_axes(&field, &template.type_template, axis_names, field_error)?;
            check_arg_type(name, template, axis_names, field_error)?;
        }
        if axis_names.contains(&name.as_str()) && template.value.is_some() {
            return Err(field_error(
                &field,
                "has a value and is also a [sweep] axis".to_owned(),
                "keep the value in one place: the sweep".to_owned(),
            ));
        }
        for placeholder in placeholders_in(&template.type_template) {
            if !placeholders.contains(&placeholder) {
                placeholders.push(placeholder);
            }
        }
    }
    Ok(placeholders)
}

/// A value as a spec holds it: a JSON scalar, a non-finite float as `{"float": "inf"}` (JSON has
/// none), an integer too large for TOML as the float it is. `None` for what a spec cannot hold
/// (null, lists, tables).
pub fn spec_scalar(value: &Value) -> Option<Value> {
    let float = |f: f64| {
        if f.is_finite() {
            Value::from(f)
        } else {
            serde_json::json!({ "float": f.to_string() })
        }
    };
    Some(match value {
        Value::Bool(_) | Value::String(_) => value.clone(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Value::from(i),
            (None, Some(f)) => float(f),
            _ => return None,
        },
        Value::Object(o) if o.len() == 1 => float(o.get("float")?.as_str()?.parse::<f64>().ok()?),
        Value::Null | Value::Array(_) | Value::Object(_) => return None,
    })
}
