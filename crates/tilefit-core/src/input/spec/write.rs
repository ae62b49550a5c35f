//! A sweep written as a spec file (`--emit-spec`): each of its parts as the section a user
//! would write for it, so that reading the text back ([`super::parse`]) gives the same sweep.

use serde_json::Value;

use super::files::{RawFiles, RawVariant};
use super::{
    AutotuneUse, FilesSpec, KernelDocument, LaunchSettings, RawLaunch, SpecDocument, Sweep,
    TargetsDocument,
};
use crate::vocab::LoadMode;

/// `sweep` as a spec file's TOML, after `comment`'s lines as `#` comments; `kernel_file` is the
/// kernel's file as the spec names it (relative to where the spec is written, or absolute).
pub fn to_toml(
    sweep: &Sweep,
    kernel_file: &str,
    comment: &str,
) -> Result<String, toml_edit::ser::Error> {
    document(sweep, kernel_file).to_toml(comment)
}

/// The document of `sweep`: what [`to_toml`] serializes.
fn document(sweep: &Sweep, kernel_file: &str) -> SpecDocument {
    let mut doc = SpecDocument {
        kernel: KernelDocument {
            file: sweep
                .source
                .module
                .is_none()
                .then(|| kernel_file.to_owned()),
            module: sweep.source.module.clone(),
            function: sweep.function.clone(),
            triton: sweep.triton.clone(),
            load: match sweep.source.load {
                LoadMode::Auto => None,
                LoadMode::Import => Some("import".to_owned()),
                LoadMode::Extract => Some("extract".to_owned()),
            },
        },
        targets: (!sweep.targets.is_empty()).then(|| TargetsDocument {
            devices: sweep.targets.clone(),
        }),
        recommend: sweep.raw_recommend.clone(),
        files: raw_files(&sweep.files),
        ..SpecDocument::default()
    };
    for (name, value) in &sweep.source.globals {
        insert(&mut doc.globals, name, value);
    }
    for (name, template) in &sweep.args {
        doc.args.insert(name.clone(), arg_value(template));
    }
    for (name, value) in &sweep.constexprs {
        insert(&mut doc.constexprs, name, value);
    }
    for (name, value) in &sweep.options {
        insert(&mut doc.options, name, value);
    }
    match sweep.autotune {
        AutotuneUse::Auto => {}
        AutotuneUse::Required => {
            doc.sweep
                .insert("autotune".to_owned(), toml::Value::Boolean(true));
        }
        AutotuneUse::Ignored => {
            doc.sweep
                .insert("autotune".to_owned(), toml::Value::Boolean(false));
        }
    }
    if let Some(pattern) = &sweep.config_files {
        doc.sweep.insert(
            "from_files".to_owned(),
            toml::Value::String(pattern.display().to_string()),
        );
    }
    for axis in &sweep.sweep {
        let values = axis.values.iter().filter_map(toml_value).collect();
        doc.sweep
            .insert(axis.name.clone(), toml::Value::Array(values));
    }
    if sweep.launch != LaunchSettings::default() {
        doc.launch = Some(RawLaunch {
            grid: Some(sweep.launch.grid.clone()),
            buffer_bytes: Some(sweep.launch.buffer_bytes),
        });
    }
    doc
}

/// `[files]` as a spec file writes it; `None` when it says nothing.
fn raw_files(files: &FilesSpec) -> Option<RawFiles> {
    if *files == FilesSpec::default() {
        return None;
    }
    let table = |values: &[(String, Value)]| -> toml::Table {
        values
            .iter()
            .filter_map(|(name, value)| Some((name.clone(), toml_value(value)?)))
            .collect()
    };
    let mut variants = toml::Table::new();
    for variant in &files.variants {
        let raw = RawVariant {
            args: variant
                .args
                .iter()
                .map(|(name, template)| (name.clone(), arg_value(template)))
                .collect(),
            constexprs: table(&variant.constexprs),
            force: table(&variant.edits.force),
            at_most: table(&variant.edits.at_most),
            drop: variant.edits.drop.clone(),
        };
        // A table of tables and scalars: always TOML.
        if let Ok(value) = toml::Value::try_from(raw) {
            variants.insert(variant.key.clone(), value);
        }
    }
    Some(RawFiles {
        force: table(&files.edits.force),
        at_most: table(&files.edits.at_most),
        drop: files.edits.drop.clone(),
        variants,
    })
}

fn insert(table: &mut toml::Table, name: &str, value: &Value) {
    if let Some(value) = toml_value(value) {
        table.insert(name.to_owned(), value);
    }
}

/// A spec's value as TOML: the inverse of how a spec file's scalars are read.
fn toml_value(value: &Value) -> Option<toml::Value> {
    Some(match value {
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => toml::Value::Integer(i),
            (None, Some(f)) => toml::Value::Float(f),
            _ => return None,
        },
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Object(o) if o.len() == 1 => {
            toml::Value::Float(o.get("float")?.as_str()?.parse::<f64>().ok()?)
        }
        Value::Null | Value::Array(_) | Value::Object(_) => return None,
    })
}

/// An argument as `[args]` writes it: its type alone, or a table with its value, its alignment
/// or its tensor descriptor.
fn arg_value(template: &super::ArgTemplate) -> toml::Value {
    let ty = toml::Value::String(template.type_template.clone());
    let mut table = toml::Table::new();
    table.insert("type".to_owned(), ty.clone());
    if let Some(descriptor) = &template.descriptor {
        let list = |v: &[u64]| {
            toml::Value::Array(
                v.iter()
                    .map(|n| toml::Value::Integer(i64::try_from(*n).unwrap_or(i64::MAX)))
                    .collect(),
            )
        };
        table.insert(
            "dtype".to_owned(),
            toml::Value::String(descriptor.dtype.clone()),
        );
        table.insert("shape".to_owned(), list(&descriptor.shape));
        table.insert("strides".to_owned(), list(&descriptor.strides));
        table.insert("block_shape".to_owned(), list(&descriptor.block_shape));
        return toml::Value::Table(table);
    }
    if let Some(value) = template.value.as_ref().and_then(toml_value) {
        table.insert("value".to_owned(), value);
    }
    if !template.aligned {
        table.insert("aligned".to_owned(), toml::Value::Boolean(false));
    }
    if table.len() == 1 {
        return ty;
    }
    toml::Value::Table(table)
}
