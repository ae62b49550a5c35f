//! A spec's `[files]`: what an engine's launcher does to a config file's entry before the launch
//! (`force`, `at_most`, `drop`), and the kernel variant each part of a file's name selects
//! (`[files.variants."dtype=fp8_w8a8"]`); and the config files themselves as values
//! ([`ConfigSet`]), read once.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::input::config_files::{ConfigFile, FileProblem};

use super::args::{ArgTemplate, arg_template};
use super::error::{FieldError, SpecError};
use super::values::fixed_values;

/// A sweep's config files as values: read once from `[sweep] from_files`
/// (`Sweep::read_config_files`), or made in memory (`--emit-files`' candidates, and the
/// files it read back), never a folder written to be read again.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConfigSet {
    /// The usable files.
    pub files: Vec<ConfigFile>,
    /// What could not be used: files, and entries left out of usable files.
    pub problems: Vec<FileProblem>,
}

/// `[files]`: how an engine's launcher turns a config file's entry into a launch.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FilesSpec {
    /// Edits for every file.
    pub edits: EntryEdits,
    /// Per variant part of a file name (`dtype=fp8_w8a8`, `block_shape=[128,128]`, `down`), in
    /// the order written.
    pub variants: Vec<FileVariant>,
}

/// What the launcher does to an entry before the launch.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EntryEdits {
    /// `force`: set whatever the entry says (vLLM: `SPLIT_K = 1`).
    pub force: Vec<(String, Value)>,
    /// `at_most`: the smaller of the entry's value and this (vLLM clamps `BLOCK_SIZE_K` to the
    /// quantization block).
    pub at_most: Vec<(String, Value)>,
    /// `drop`: keys the launcher removes before the launch (SGLang pops `USE_TMA`).
    pub drop: Vec<String>,
}

/// `[files.variants."dtype=fp8_w8a8"]`: the kernel variant files with these name parts use.
#[derive(Debug, Clone, PartialEq)]
pub struct FileVariant {
    /// The key as written.
    pub key: String,
    /// Its name parts (a key may combine several with `,`), spaces removed.
    pub parts: Vec<String>,
    /// Arguments that change (types, values; `"none"`).
    pub args: Vec<(String, ArgTemplate)>,
    /// Constexprs that change.
    pub constexprs: Vec<(String, Value)>,
    /// Launcher edits for these files.
    pub edits: EntryEdits,
}

/// The name parts of a variant key: `dtype=fp8_w8a8,block_shape=[128, 128]` ->
/// `["dtype=fp8_w8a8", "block_shape=[128,128]"]`.
pub fn variant_key_parts(key: &str) -> Vec<String> {
    crate::input::config_files::parse_name(&format!("{key}.json")).variant
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFiles {
    #[serde(default)]
    pub(super) force: toml::Table,
    #[serde(default)]
    pub(super) at_most: toml::Table,
    #[serde(default)]
    pub(super) drop: Vec<String>,
    #[serde(default)]
    pub(super) variants: toml::Table,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVariant {
    #[serde(default)]
    pub(super) args: toml::Table,
    #[serde(default)]
    pub(super) constexprs: toml::Table,
    #[serde(default)]
    pub(super) force: toml::Table,
    #[serde(default)]
    pub(super) at_most: toml::Table,
    #[serde(default)]
    pub(super) drop: Vec<String>,
}

pub(super) fn edits(
    force: &toml::Table,
    at_most: &toml::Table,
    drop: &[String],
    section: &str,
    field_error: &FieldError<'_>,
) -> Result<EntryEdits, SpecError> {
    let force = fixed_values(force, &format!("{section}.force"), &[], field_error)?;
    let at_most = fixed_values(at_most, &format!("{section}.at_most"), &[], field_error)?;
    if let Some((name, value)) = at_most.iter().find(|(_, v)| !v.is_number()) {
        return Err(field_error(
            &format!("[{section}.at_most].{name}"),
            format!("is `{value}`, not a number"),
            format!("write `at_most = {{ {name} = 128 }}`"),
        ));
    }
    Ok(EntryEdits {
        force,
        at_most,
        drop: drop.to_vec(),
    })
}

pub(super) fn files_spec(
    raw: &RawFiles,
    axes: &[&str],
    field_error: &FieldError<'_>,
) -> Result<FilesSpec, SpecError> {
    let mut variants = Vec::new();
    for (key, value) in &raw.variants {
        let section = format!("files.variants.\"{key}\"");
        let raw: RawVariant = value.clone().try_into().map_err(|e: toml::de::Error| {
            field_error(
                &format!("[{section}]"),
                e.message().to_owned(),
                "a variant has `args`, `constexprs`, `force` and `at_most` tables".to_owned(),
            )
        })?;
        let parts = variant_key_parts(key);
        if parts.is_empty() {
            return Err(field_error(
                &format!("[{section}]"),
                "names no variant part of a file name".to_owned(),
                "key a variant by a name part: `[files.variants.\"dtype=fp8_w8a8\"]`".to_owned(),
            ));
        }
        let mut args = Vec::new();
        for (name, value) in &raw.args {
            args.push((name.clone(), arg_template(name, value, axes, field_error)?));
        }
        variants.push(FileVariant {
            key: key.clone(),
            parts,
            args,
            constexprs: fixed_values(
                &raw.constexprs,
                &format!("{section}.constexprs"),
                &[],
                field_error,
            )?,
            edits: edits(&raw.force, &raw.at_most, &raw.drop, &section, field_error)?,
        });
    }
    Ok(FilesSpec {
        edits: edits(&raw.force, &raw.at_most, &raw.drop, "files", field_error)?,
        variants,
    })
}
