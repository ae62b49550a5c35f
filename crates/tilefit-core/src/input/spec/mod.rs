//! Probe specs: the TOML a user writes to say which kernel to compile, with which arguments,
//! over which sweep, for which devices. Parsed and validated once into a [`Sweep`]; every
//! error names the spec file, the field, and the fix. Binding the spec to the kernel's real
//! parameter list (known only after Triton imports the kernel) happens in `plan::job`.

mod args;
mod error;
mod files;
pub mod made;
mod recommend;
mod sweep;
mod values;
pub mod write;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::vocab::Config;
pub use args::{ArgTemplate, check_type, fill_placeholders};
use args::{arg_template, check_against_axes, placeholders_in};
use error::FieldError;
pub use error::SpecError;
pub use files::{ConfigSet, EntryEdits, FileVariant, FilesSpec, variant_key_parts};
use files::{RawFiles, files_spec};
use recommend::recommend_rule;
pub use recommend::{Preference, RecommendRule};
pub use values::{Axis, TRITON_DTYPES};
use values::{RawRecommend, check_function, check_targets, empty_axis, fixed_values, scalar};

/// Axes that are compile options rather than kernel parameters.
pub const OPTION_AXES: &[&str] = &["num_warps", "num_stages", "num_ctas", "maxnreg"];

/// One sweep: a kernel (its file, function and how its module loads), its arguments, the
/// configs to compile (the axes, and the configs listed elsewhere with where each was listed),
/// the targets and how to pick per device. Made by its typed entry points only: a spec file
/// ([`load`], [`parse`]), a captured compile (`plan::capture::sweep_of`, through [`made`]), and, for the configs
/// listed elsewhere, an autotune list or config files ([`Sweep::with_listed`], with the files
/// read from disk or made in memory). Every entry point gives it the same checks.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// What it was made from: a spec file or a captured compile.
    pub origin: SweepOrigin,
    /// The kernel source file, absolute.
    pub kernel_file: PathBuf,
    /// The `@triton.jit` function's name.
    pub function: String,
    /// Triton version the spec asks for.
    pub triton: Option<String>,
    /// How the kernel's module is loaded (`[kernel] load`) and the names `[globals]` gives.
    pub source: crate::vocab::KernelSource,
    /// Non-constexpr arguments, in the order written.
    pub args: Vec<(String, ArgTemplate)>,
    /// Fixed constexprs.
    pub constexprs: Vec<(String, Value)>,
    /// Fixed compile options.
    pub options: Vec<(String, Value)>,
    /// Sweep axes, outermost first.
    pub sweep: Vec<Axis>,
    /// Device names as written; empty means the default fleet.
    pub targets: Vec<String>,
    /// How to pick the config per device.
    pub recommend: RecommendRule,
    /// How `tilefit verify --launch` launches a config on a real GPU.
    pub launch: LaunchSettings,
    /// Whether the kernel's `@triton.autotune` list joins the sweep (`[sweep] autotune`).
    pub autotune: AutotuneUse,
    /// Per-device config files to sweep (`[sweep] from_files`), a glob relative to the spec.
    pub config_files: Option<PathBuf>,
    /// The config files as values: read from `config_files` once, or made in memory.
    pub config_set: Option<ConfigSet>,
    /// `[files]`: what the engine's launcher does to an entry, and the kernel variant each
    /// variant part of a file name selects.
    pub files: FilesSpec,
    /// Configs listed outside the axes (an autotune list, config files), crossed with the axes;
    /// filled by [`Sweep::with_listed`] once they are known.
    pub listed: Option<ListedConfigs>,
    /// `[recommend]` as written, for the rule over the listed configs' axes.
    raw_recommend: Option<RawRecommend>,
}

/// What a [`Sweep`] was made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SweepOrigin {
    /// A spec file: the paths it names are relative to its folder.
    SpecFile(PathBuf),
    /// A kernel's compile captured for a device by `tilefit capture`.
    Captured {
        /// The `@triton.jit` function's name.
        function: String,
        /// The device the capture emulated.
        device: String,
    },
}

impl SweepOrigin {
    /// The spec file's path, or a sentence naming the captured compile: what errors name.
    pub fn shown(&self) -> String {
        match self {
            Self::SpecFile(path) => path.display().to_string(),
            Self::Captured { function, device } => {
                format!("the captured compile of `{function}` for {device}")
            }
        }
    }

    /// The spec file, when the sweep was read from one.
    pub fn spec_file(&self) -> Option<&Path> {
        match self {
            Self::SpecFile(path) => Some(path),
            Self::Captured { .. } => None,
        }
    }
}

/// `[sweep] autotune`: what to do with a kernel's `@triton.autotune` configs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutotuneUse {
    /// Not written: sweep them when the kernel has them.
    Auto,
    /// `autotune = true`: the kernel must have them ([recommend] may name their keys).
    Required,
    /// `autotune = false`: sweep the axes only.
    Ignored,
}

/// Where listed configs come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ListKind {
    /// The kernel's `@triton.autotune(configs=[...])`.
    Autotune,
    /// Per-device JSON config files.
    ConfigFiles,
}

/// One listed config and where it was listed.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedConfig {
    /// Its values: meta-parameters (constexprs) first, then num_warps, num_stages and any other
    /// option.
    pub values: Config,
    /// Where it appears: `autotune #3`, `E=8,N=14336,device_name=...json: 16`.
    pub origins: Vec<crate::vocab::Listing>,
    /// The archs it is compiled for; `None`: every arch of the fleet. A config file's entry is
    /// compiled for its own device's arch and for the fleet's archs of the same backend.
    pub archs: Option<Vec<String>>,
}

/// The key a config-file sweep with `[files.variants]` uses for the variant of each entry.
pub const VARIANT_KEY: &str = "variant";

/// Configs from a list, crossed with the spec's axes.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedConfigs {
    /// Autotune list or config files.
    pub kind: ListKind,
    /// Distinct configs, in first-listed order.
    pub configs: Vec<ListedConfig>,
}

impl ListedConfigs {
    /// The keys the configs set, as axes with their distinct values (first-seen order).
    pub fn axes(&self) -> Vec<Axis> {
        let mut axes: Vec<Axis> = Vec::new();
        for config in &self.configs {
            for (name, value) in &config.values {
                match axes.iter_mut().find(|a| &a.name == name) {
                    Some(seen) => {
                        if !seen.values.contains(value) {
                            seen.values.push(value.clone());
                        }
                    }
                    None => axes.push(Axis {
                        name: name.clone(),
                        values: vec![value.clone()],
                    }),
                }
            }
        }
        axes
    }

    /// `the @triton.autotune configs of `f`` or `the config files`, for messages.
    pub fn describe(&self, function: &str) -> String {
        match self.kind {
            ListKind::Autotune => format!("the @triton.autotune configs of `{function}`"),
            ListKind::ConfigFiles => "the config files".to_owned(),
        }
    }
}

/// `[launch]`: the grid and the scratch buffers of a test launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchSettings {
    /// Program grid (one to three dimensions).
    pub grid: Vec<u64>,
    /// Bytes of each zero-filled pointer argument.
    pub buffer_bytes: u64,
}

impl Default for LaunchSettings {
    /// One program, and [`DEFAULT_LAUNCH_BUFFER_BYTES`] per pointer: a spec without `[launch]`.
    fn default() -> Self {
        LaunchSettings {
            grid: vec![1],
            buffer_bytes: DEFAULT_LAUNCH_BUFFER_BYTES,
        }
    }
}

/// Scratch bytes per pointer argument when the spec does not say: enough for the examples'
/// first program to read whole 4096 x 4096 fp16 operands.
pub const DEFAULT_LAUNCH_BUFFER_BYTES: u64 = 64 * 1024 * 1024;

/// A spec file's text as TOML values, before it is checked: what the spec reader reads
/// ([`parse`] checks it into a [`Sweep`]) and what the writer ([`write::to_toml`]) serializes a sweep
/// as. Nothing else sees it: a run's sweeps are made and passed as values.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecDocument {
    /// `[kernel]`.
    pub kernel: KernelDocument,
    /// `[targets]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<TargetsDocument>,
    /// `[globals]`: module-level names the kernel reads.
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub globals: toml::Table,
    /// `[args]`: the non-constexpr arguments, in the kernel's order.
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub args: toml::Table,
    /// `[constexprs]`: fixed constexprs.
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub constexprs: toml::Table,
    /// `[options]`: fixed compile options.
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub options: toml::Table,
    /// `[sweep]`: the axes, `autotune`, `from_files`.
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub sweep: toml::Table,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    recommend: Option<RawRecommend>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    launch: Option<RawLaunch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    files: Option<RawFiles>,
}

impl SpecDocument {
    /// The document as a spec file's TOML, after `comment`'s lines as `#` comments: each section
    /// a table, and what a section holds one line per key (an argument's table inline).
    fn to_toml(&self, comment: &str) -> Result<String, toml_edit::ser::Error> {
        let mut document = toml_edit::ser::to_document(self)?;
        for (_, item) in document.iter_mut() {
            if let toml_edit::Item::Value(toml_edit::Value::InlineTable(table)) = item {
                let mut section = std::mem::take(table).into_table();
                section.set_implicit(false);
                *item = toml_edit::Item::Table(section);
            }
        }
        let mut text = String::new();
        for line in comment.lines() {
            text.push_str("# ");
            text.push_str(line);
            text.push('\n');
        }
        for (at, (name, item)) in document.iter().enumerate() {
            if at > 0 || !text.is_empty() {
                text.push('\n');
            }
            let mut one = toml_edit::DocumentMut::new();
            one.insert(name, item.clone());
            text.push_str(&one.to_string());
        }
        Ok(text)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLaunch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    grid: Option<Vec<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    buffer_bytes: Option<u64>,
}

/// `[kernel]`: where the kernel is and how its module loads.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KernelDocument {
    /// The kernel's source file, relative to the spec (or absolute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// An installed module instead of a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// The `@triton.jit` function.
    pub function: String,
    /// The Triton version the spec asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triton: Option<String>,
    /// How the module loads (`import`, `exec`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<String>,
}

/// `[targets]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetsDocument {
    /// Device names or archs.
    pub devices: Vec<String>,
}

impl Sweep {
    /// For `[kernel] module`: find the module's file with `python` (the toolchain that compiles),
    /// so the file is known to the cache keys and the report.
    pub fn resolve_module(&mut self, python: &Path) -> Result<(), SpecError> {
        let Some(module) = self.source.module.clone() else {
            return Ok(());
        };
        let file = crate::input::installed::module_file(python, &module).map_err(|problem| {
            SpecError::Field {
                path: self.origin.shown(),
                field: "[kernel].module".to_owned(),
                problem,
                fix: "install the package into the Python tilefit uses (`--python`), or give `file = \"path/to/module.py\"`".to_owned(),
            }
        })?;
        self.kernel_file = file;
        Ok(())
    }
}

/// Read and validate a spec file.
pub fn load(path: &Path) -> Result<Sweep, SpecError> {
    let text = std::fs::read_to_string(path).map_err(|e| SpecError::Read {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    parse(&text, path)
}

/// Validate spec text; `path` locates the kernel file and names the spec in errors.
pub fn parse(text: &str, path: &Path) -> Result<Sweep, SpecError> {
    let written = document(text, path)?;
    from_document(written, path)
}

/// Spec text read as a document, not yet checked; `path` names the spec in errors.
fn document(text: &str, path: &Path) -> Result<SpecDocument, SpecError> {
    toml::from_str(text).map_err(|e| SpecError::Toml {
        path: path.display().to_string(),
        reason: e.to_string().trim_end().to_owned(),
    })
}

/// A spec file's document checked into a [`Sweep`] (the kernel's file is relative to `path`'s
/// folder): every check, with the field and the fix named.
fn from_document(raw: SpecDocument, path: &Path) -> Result<Sweep, SpecError> {
    let shown = path.display().to_string();
    let field_error = |field: &str, problem: String, fix: String| SpecError::Field {
        path: shown.clone(),
        field: field.to_owned(),
        problem,
        fix,
    };

    let base = path.parent().unwrap_or(Path::new("."));
    let kernel_file = kernel_file_of(&raw.kernel, base, &field_error)?;
    check_function(&raw.kernel.function, &field_error)?;

    let source = kernel_source_of(&raw.kernel, &raw.globals, &field_error)?;
    let mut sweep_table = raw.sweep.clone();
    let autotune = match sweep_table.remove("autotune") {
        None => AutotuneUse::Auto,
        Some(toml::Value::Boolean(true)) => AutotuneUse::Required,
        Some(toml::Value::Boolean(false)) => AutotuneUse::Ignored,
        Some(other) => {
            return Err(field_error(
                "[sweep].autotune",
                format!("is `{other}`, not true or false"),
                "`autotune = true` sweeps the kernel's @triton.autotune configs, `false` ignores them"
                    .to_owned(),
            ));
        }
    };
    let config_files = match sweep_table.remove("from_files") {
        None => None,
        Some(toml::Value::String(pattern)) if !pattern.trim().is_empty() => {
            Some(base.join(pattern.trim()))
        }
        Some(other) => {
            return Err(field_error(
                "[sweep].from_files",
                format!("is `{other}`, not a file pattern"),
                "write the per-device config files' path, relative to the spec: `from_files = \"configs/*.json\"`"
                    .to_owned(),
            ));
        }
    };
    if config_files.is_some() && autotune == AutotuneUse::Required {
        return Err(field_error(
            "[sweep].autotune",
            "is true, and [sweep].from_files also lists configs".to_owned(),
            "sweep one list: the autotune configs or the config files".to_owned(),
        ));
    }
    let sweep = parse_sweep(&sweep_table, &field_error)?;
    let axis_names: Vec<&str> = sweep.iter().map(|a| a.name.as_str()).collect();

    let constexprs = fixed_values(&raw.constexprs, "constexprs", &axis_names, &field_error)?;
    let options = fixed_values(&raw.options, "options", &axis_names, &field_error)?;

    let mut args = Vec::new();
    let mut placeholders: Vec<String> = Vec::new();
    for (name, value) in &raw.args {
        let template = arg_template(name, value, &axis_names, &field_error)?;
        check_against_axes(
            name,
            &template,
            &axis_names,
            &mut placeholders,
            &field_error,
        )?;
        args.push((name.clone(), template));
    }

    let targets = raw.targets.map(|t| t.devices).unwrap_or_default();
    check_targets(&targets, &field_error)?;

    // With configs listed elsewhere (autotune, files), the rule may name their keys: it is checked
    // once they are known (`with_listed`).
    let deferred = autotune == AutotuneUse::Required || config_files.is_some();
    let recommend = if deferred {
        RecommendRule {
            per: Vec::new(),
            prefer: vec![Preference::Keep],
            baseline: Vec::new(),
        }
    } else {
        recommend_rule(raw.recommend.clone(), &sweep, &placeholders, &field_error)?
    };
    let files = match raw.files {
        None => FilesSpec::default(),
        Some(_) if config_files.is_none() => {
            return Err(field_error(
                "[files]",
                "is given, but [sweep].from_files lists no config files".to_owned(),
                "add `from_files = \"configs/**/*.json\"` to [sweep], or remove [files]".to_owned(),
            ));
        }
        Some(files) => files_spec(&files, &axis_names, &field_error)?,
    };
    let launch = match raw.launch {
        None => LaunchSettings::default(),
        Some(raw) => {
            let grid = raw.grid.unwrap_or_else(|| vec![1]);
            if grid.is_empty() || grid.len() > 3 || grid.contains(&0) {
                return Err(field_error(
                    "[launch].grid",
                    format!("is {grid:?}"),
                    "give one to three positive sizes: `grid = [4, 16, 1]`".to_owned(),
                ));
            }
            LaunchSettings {
                grid,
                buffer_bytes: raw.buffer_bytes.unwrap_or(DEFAULT_LAUNCH_BUFFER_BYTES),
            }
        }
    };
    Ok(Sweep {
        origin: SweepOrigin::SpecFile(path.to_path_buf()),
        kernel_file,
        function: raw.kernel.function,
        triton: raw.kernel.triton,
        source,
        args,
        constexprs,
        options,
        sweep,
        targets,
        recommend,
        launch,
        autotune,
        config_files,
        config_set: None,
        files,
        listed: None,
        raw_recommend: raw.recommend,
    })
}

/// `[kernel] file` (relative to the spec) or `module` (found later by the toolchain's Python).
fn kernel_file_of(
    kernel: &KernelDocument,
    base: &Path,
    field_error: &FieldError<'_>,
) -> Result<PathBuf, SpecError> {
    Ok(match (&kernel.file, &kernel.module) {
        (Some(file), None) => {
            let kernel_file = base.join(file);
            if !kernel_file.is_file() {
                return Err(field_error(
                    "[kernel].file",
                    format!("names `{}`, which does not exist", kernel_file.display()),
                    "the kernel file's path is relative to the spec file".to_owned(),
                ));
            }
            std::path::absolute(&kernel_file).unwrap_or(kernel_file)
        }
        // Found by the toolchain's Python, once one is chosen (`resolve_module`).
        (None, Some(_)) => PathBuf::new(),
        (Some(_), Some(_)) => {
            return Err(field_error(
                "[kernel]",
                "has both `file` and `module`".to_owned(),
                "give one: `file = \"kernel.py\"` (relative to the spec) or `module = \"package.module\"` (installed)".to_owned(),
            ));
        }
        (None, None) => {
            return Err(field_error(
                "[kernel]",
                "has neither `file` nor `module`".to_owned(),
                "give `file = \"kernel.py\"` (relative to the spec) or `module = \"package.module\"` (an installed package's module)".to_owned(),
            ));
        }
    })
}

/// `[kernel] load` and `[globals]`.
fn kernel_source_of(
    kernel: &KernelDocument,
    globals: &toml::Table,
    field_error: &FieldError<'_>,
) -> Result<crate::vocab::KernelSource, SpecError> {
    let load = match kernel.load.as_deref() {
        None | Some("auto") => crate::vocab::LoadMode::Auto,
        Some("import") => crate::vocab::LoadMode::Import,
        Some("extract") => crate::vocab::LoadMode::Extract,
        Some(other) => {
            return Err(field_error(
                "[kernel].load",
                format!("is `{other}`"),
                "write `load = \"import\"` (run the file as a module), `\"extract\"` (only the kernel and what it reaches) or leave it out (import, and extract where the import fails)".to_owned(),
            ));
        }
    };
    let globals = fixed_values(globals, "globals", &[], field_error)?;
    Ok(crate::vocab::KernelSource {
        load,
        globals: globals.into_iter().collect(),
        module: kernel.module.clone(),
    })
}

fn parse_sweep(table: &toml::Table, field_error: &FieldError<'_>) -> Result<Vec<Axis>, SpecError> {
    let mut sweep = Vec::new();
    for (name, value) in table {
        let field = format!("[sweep].{name}");
        let toml::Value::Array(items) = value else {
            return Err(field_error(
                &field,
                "must be a list of values".to_owned(),
                format!("write `{name} = [{value}]`"),
            ));
        };
        if items.is_empty() {
            return Err(empty_axis(name, field_error));
        }
        let values = items
            .iter()
            .map(|v| scalar(v).ok_or(()))
            .collect::<Result<Vec<_>, ()>>()
            .map_err(|()| {
                field_error(
                    &field,
                    "holds a value that is not a number, boolean or string".to_owned(),
                    "sweep values are scalars: `BLOCK_N = [32, 64]`".to_owned(),
                )
            })?;
        sweep.push(Axis {
            name: name.clone(),
            values,
        });
    }
    Ok(sweep)
}
