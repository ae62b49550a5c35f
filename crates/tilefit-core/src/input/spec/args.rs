//! A spec's `[args]`: argument templates (Triton types with `{placeholder}`s, example values,
//! alignment), `"none"` arguments and host-side tensor descriptors, and their checks.

use serde_json::Value;

use super::error::{FieldError, SpecError};
use super::values::{TRITON_DTYPES, scalar};
use crate::vocab::{DESCRIPTOR_TYPE, Descriptor, NONE_TYPE};

/// A kernel argument as the spec writes it, before placeholders are filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgTemplate {
    /// Triton type, possibly with `{placeholder}`s: `*bf16`, `*{kv_dtype}`, `i32`.
    pub type_template: String,
    /// Example value (ints must have one; floats and bools default).
    pub value: Option<Value>,
    /// Whether a pointer is 16-byte aligned at launch (Triton then marks it divisible by 16).
    pub aligned: bool,
    /// For `type = "tensordesc"`: the host-side `TensorDescriptor` a launch passes.
    pub descriptor: Option<Descriptor>,
}

pub(super) fn placeholders_in(template: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let Some(end) = rest[start..].find('}') else {
            break;
        };
        found.push(rest[start + 1..start + end].to_owned());
        rest = &rest[start + end + 1..];
    }
    found
}

/// Fill `{placeholder}`s from a config's values.
pub fn fill_placeholders(template: &str, values: &[(String, Value)]) -> String {
    let mut out = template.to_owned();
    for (name, value) in values {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out = out.replace(&format!("{{{name}}}"), &text);
    }
    out
}

/// Whether a (filled) Triton type string is valid, and if not, the closest valid one.
pub fn check_type(type_string: &str) -> Result<(), Option<String>> {
    if type_string == NONE_TYPE || type_string == DESCRIPTOR_TYPE {
        return Ok(());
    }
    let element = type_string
        .strip_prefix("*k")
        .or_else(|| type_string.strip_prefix('*'))
        .unwrap_or(type_string);
    if TRITON_DTYPES.contains(&element) {
        return Ok(());
    }
    let closest = TRITON_DTYPES
        .iter()
        .map(|d| (strsim::normalized_damerau_levenshtein(element, d), *d))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .filter(|(score, _)| *score >= 0.4)
        .map(|(_, d)| type_string.replace(element, d));
    Err(closest)
}

pub(super) fn is_int_type(type_string: &str) -> bool {
    matches!(
        type_string,
        "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64"
    )
}

pub(super) fn arg_template(
    name: &str,
    value: &toml::Value,
    axes: &[&str],
    field_error: &FieldError<'_>,
) -> Result<ArgTemplate, SpecError> {
    let field = format!("[args].{name}");
    let template = match value {
        toml::Value::String(type_template) => ArgTemplate {
            type_template: if type_template.eq_ignore_ascii_case(NONE_TYPE) {
                NONE_TYPE.to_owned()
            } else {
                type_template.clone()
            },
            value: None,
            aligned: true,
            descriptor: None,
        },
        toml::Value::Table(table)
            if table.get("type").and_then(toml::Value::as_str) == Some(DESCRIPTOR_TYPE) =>
        {
            return descriptor_template(name, table, axes, field_error);
        }
        toml::Value::Table(table) => {
            for key in table.keys() {
                if !["type", "value", "aligned"].contains(&key.as_str()) {
                    return Err(field_error(
                        &format!("{field}.{key}"),
                        "is not a known key".to_owned(),
                        "an argument table has `type`, `value` and (for pointers) `aligned`; a tensor descriptor has `type = \"tensordesc\"`, `dtype`, `shape`, `strides` and `block_shape`"
                            .to_owned(),
                    ));
                }
            }
            let Some(toml::Value::String(type_template)) = table.get("type") else {
                return Err(field_error(
                    &field,
                    "has no `type`".to_owned(),
                    format!("write `{name} = {{ type = \"i32\", value = 16 }}`"),
                ));
            };
            let aligned = match table.get("aligned") {
                None => true,
                Some(toml::Value::Boolean(b)) => *b,
                Some(_) => {
                    return Err(field_error(
                        &format!("{field}.aligned"),
                        "must be true or false".to_owned(),
                        "`aligned = false` compiles as if the pointer were not 16-byte aligned"
                            .to_owned(),
                    ));
                }
            };
            ArgTemplate {
                type_template: type_template.clone(),
                value: table.get("value").and_then(scalar),
                aligned,
                descriptor: None,
            }
        }
        _ => {
            return Err(field_error(
                &field,
                "must be a type string or a table".to_owned(),
                format!(
                    "write `{name} = \"*bf16\"` or `{name} = {{ type = \"i32\", value = 16 }}`"
                ),
            ));
        }
    };
    check_template(name, &template, axes, field_error)?;
    Ok(template)
}

/// An argument's own checks, however it was made: a descriptor's ranks and element type, or a
/// type that is Triton's (an int with an integer value) whose placeholders are axes.
pub(super) fn check_template(
    name: &str,
    template: &ArgTemplate,
    axes: &[&str],
    field_error: &FieldError<'_>,
) -> Result<(), SpecError> {
    if let Some(descriptor) = &template.descriptor {
        return check_descriptor(name, descriptor, axes, field_error);
    }
    placeholders_are_axes(
        &format!("[args].{name}"),
        &template.type_template,
        axes,
        field_error,
    )?;
    check_arg_type(name, template, axes, field_error)
}

/// Every `{placeholder}` in a type names a [sweep] axis.
pub(super) fn placeholders_are_axes(
    field: &str,
    template: &str,
    axes: &[&str],
    field_error: &FieldError<'_>,
) -> Result<(), SpecError> {
    match placeholders_in(template)
        .into_iter()
        .find(|p| !axes.contains(&p.as_str()))
    {
        None => Ok(()),
        Some(placeholder) => Err(field_error(
            field,
            format!("uses the placeholder `{{{placeholder}}}`, which is not a [sweep] axis"),
            format!("add `{placeholder} = [\"bf16\", \"fp8e4nv\"]` to [sweep]"),
        )),
    }
}

/// `a_desc = { type = "tensordesc", dtype = "bf16", shape = [4096, 4096], strides = [4096, 1],
/// block_shape = [64, 64] }`.
pub(super) fn descriptor_template(
    name: &str,
    table: &toml::Table,
    axes: &[&str],
    field_error: &FieldError<'_>,
) -> Result<ArgTemplate, SpecError> {
    let field = format!("[args].{name}");
    let example = format!(
        "write `{name} = {{ type = \"tensordesc\", dtype = \"bf16\", shape = [4096, 4096], strides = [4096, 1], block_shape = [64, 64] }}`"
    );
    for key in table.keys() {
        if !["type", "dtype", "shape", "strides", "block_shape"].contains(&key.as_str()) {
            return Err(field_error(
                &format!("{field}.{key}"),
                "is not a key of a tensor descriptor".to_owned(),
                example,
            ));
        }
    }
    let Some(dtype) = table.get("dtype").and_then(toml::Value::as_str) else {
        return Err(field_error(
            &format!("{field}.dtype"),
            "is missing or not a string".to_owned(),
            example,
        ));
    };
    let list = |key: &str| -> Result<Vec<u64>, SpecError> {
        let items = table.get(key).and_then(toml::Value::as_array);
        items
            .and_then(|items| {
                items
                    .iter()
                    .map(|v| v.as_integer().and_then(|i| u64::try_from(i).ok()))
                    .collect::<Option<Vec<u64>>>()
            })
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                field_error(
                    &format!("{field}.{key}"),
                    "is missing or not a list of non-negative integers".to_owned(),
                    example.clone(),
                )
            })
    };
    let descriptor = Descriptor {
        dtype: dtype.to_owned(),
        shape: list("shape")?,
        strides: list("strides")?,
        block_shape: list("block_shape")?,
    };
    check_descriptor(name, &descriptor, axes, field_error)?;
    Ok(ArgTemplate {
        type_template: DESCRIPTOR_TYPE.to_owned(),
        value: None,
        aligned: true,
        descriptor: Some(descriptor),
    })
}

/// A tensor descriptor's checks: one entry per dimension in its shape, strides and block shape,
/// and a Triton element type (or a placeholder that is an axis).
pub(super) fn check_descriptor(
    name: &str,
    descriptor: &Descriptor,
    axes: &[&str],
    field_error: &FieldError<'_>,
) -> Result<(), SpecError> {
    let field = format!("[args].{name}");
    let example = format!(
        "write `{name} = {{ type = \"tensordesc\", dtype = \"bf16\", shape = [4096, 4096], strides = [4096, 1], block_shape = [64, 64] }}`"
    );
    for (key, list) in [
        ("shape", &descriptor.shape),
        ("strides", &descriptor.strides),
        ("block_shape", &descriptor.block_shape),
    ] {
        if list.is_empty() {
            return Err(field_error(
                &format!("{field}.{key}"),
                "is missing or not a list of non-negative integers".to_owned(),
                example,
            ));
        }
    }
    let rank = descriptor.shape.len();
    if descriptor.strides.len() != rank || descriptor.block_shape.len() != rank {
        return Err(field_error(
            &field,
            format!(
                "has a shape of rank {rank}, {} strides and a block shape of rank {}",
                descriptor.strides.len(),
                descriptor.block_shape.len()
            ),
            "give `shape`, `strides` and `block_shape` one entry per dimension".to_owned(),
        ));
    }
    let dtype = descriptor.dtype.as_str();
    placeholders_are_axes(&format!("{field}.dtype"), dtype, axes, field_error)?;
    if placeholders_in(dtype).is_empty()
        && let Err(closest) = check_type(dtype)
    {
        return Err(field_error(
            &format!("{field}.dtype"),
            format!("is the unknown element type `{dtype}`"),
            closest.map_or_else(
                || format!("element types are {}", TRITON_DTYPES.join(", ")),
                |c| format!("did you mean `{c}`?"),
            ),
        ));
    }
    Ok(())
}

/// After an argument's own checks: no value both given and swept; the placeholders its type uses
/// added to `placeholders`, in first-used order.
pub(super) fn check_against_axes(
    name: &str,
    template: &ArgTemplate,
    axes: &[&str],
    placeholders: &mut Vec<String>,
    field_error: &FieldError<'_>,
) -> Result<(), SpecError> {
    for placeholder in placeholders_in(&template.type_template) {
        if !placeholders.contains(&placeholder) {
            placeholders.push(placeholder);
        }
    }
    if axes.contains(&name) && template.value.is_some() {
        return Err(field_error(
            &format!("[args].{name}"),
            "has a value and is also a [sweep] axis".to_owned(),
            "keep the value in one place: the sweep".to_owned(),
        ));
    }
    Ok(())
}

/// A type without placeholders must be a Triton type, and an int needs an integer example value.
pub(super) fn check_arg_type(
    name: &str,
    template: &ArgTemplate,
    axes: &[&str],
    field_error: &FieldError<'_>,
) -> Result<(), SpecError> {
    let field = format!("[args].{name}");
    let typed = placeholders_in(&template.type_template).is_empty();
    if typed {
        if let Err(closest) = check_type(&template.type_template) {
            return Err(field_error(
                &field,
                format!("has the unknown type `{}`", template.type_template),
                closest.map_or_else(
                    || {
                        format!(
                            "Triton types are {} (pointers start with `*`)",
                            TRITON_DTYPES.join(", ")
                        )
                    },
                    |c| format!("did you mean `{c}`?"),
                ),
            ));
        }
        let ty = template.type_template.as_str();
        if is_int_type(ty) && template.value.is_none() && !axes.contains(&name) {
            return Err(field_error(
                &field,
                "is an integer without an example value".to_owned(),
                format!(
                    "Triton specializes ints on their value (divisible by 16, equal to 1): write `{name} = {{ type = \"{ty}\", value = 4096 }}` with a value a real launch passes"
                ),
            ));
        }
        if let Some(value) = &template.value
            && is_int_type(ty)
            && !value.is_i64()
        {
            return Err(field_error(
                &format!("{field}.value"),
                format!("is `{value}`, not an integer"),
                "give an integer example value".to_owned(),
            ));
        }
    }
    Ok(())
}
