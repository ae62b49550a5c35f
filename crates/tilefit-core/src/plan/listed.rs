//! Sweeps from where configs already live: a kernel's `@triton.autotune(configs=[...])` list, or
//! per-device config files. Either becomes [`ListedConfigs`] that the spec crosses with its own
//! axes. For config files this is where the engine's launcher is reproduced: each file's variant
//! from its name, the launcher's edits to each entry, entries a launch would refuse left out, and
//! the archs each entry is compiled for. `prepare_listed` makes the spec and the fleet a probe
//! runs once the kernel is inspected.

use serde_json::Value;

use crate::device::{DeviceTable, TargetDevice};
use crate::input::config_files::{ConfigFile, FileProblem};
use crate::input::spec::{
    EntryEdits, ListKind, ListedConfig, ListedConfigs, OPTION_AXES, SpecError, Sweep, VARIANT_KEY,
};
use crate::vocab::AutotuneConfig;
use crate::vocab::Config;
use crate::vocab::KernelInterface;

/// Why listed configs could not be prepared: the spec, or the device table.
#[derive(Debug, thiserror::Error)]
pub enum ListedError {
    /// The spec is wrong.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The embedded device table does not load (a build defect).
    #[error(transparent)]
    Table(#[from] crate::device::TableError),
}

/// The autotune list as listed configs; `Err` names a config whose values tilefit cannot pass
/// (a meta-parameter that is not a number, boolean or string).
pub fn from_autotune(configs: &[AutotuneConfig]) -> Result<ListedConfigs, String> {
    let mut listed: Vec<ListedConfig> = Vec::new();
    for (index, config) in configs.iter().enumerate() {
        if let Some((name, value)) = config
            .kwargs
            .iter()
            .find(|(_, v)| v.is_object() || v.is_array())
        {
            return Err(format!(
                "autotune config #{index} sets `{name}` to {}, which tilefit cannot pass to the compiler",
                value.get("unsupported").unwrap_or(value)
            ));
        }
        let values = config.values();
        let origin = crate::vocab::Listing::Autotune(index);
        match listed.iter_mut().find(|c| c.values == values) {
            Some(existing) => existing.origins.push(origin),
            None => listed.push(ListedConfig {
                values,
                origins: vec![origin],
                archs: None,
            }),
        }
    }
    Ok(ListedConfigs {
        kind: ListKind::Autotune,
        configs: listed,
    })
}

/// A config file as the sweep uses it: its device in the fleet, the kernel variant its name
/// selects, and each entry as the engine's launcher would pass it.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedFile {
    /// The file as read.
    pub file: ConfigFile,
    /// The fleet device it maps to.
    pub device: Option<TargetDevice>,
    /// The variant label (`dtype=fp8_w8a8`; empty for the plain kernel), or why the spec does
    /// not describe its variant (then it is not judged).
    pub variant: Result<String, String>,
    /// Its entries after the launcher's edits: key, values, what was edited.
    pub entries: Vec<(String, Config, Vec<String>)>,
}

/// The file's variant label, when the spec's `[files.variants]` describe every part of it.
pub(crate) fn describe_variant(spec: &Sweep, file: &ConfigFile) -> Result<String, String> {
    let parts = &file.variant_parts;
    if parts.is_empty() {
        return Ok(String::new());
    }
    let covered: Vec<&String> = spec
        .files
        .variants
        .iter()
        .filter(|v| v.parts.iter().all(|p| parts.contains(p)))
        .flat_map(|v| v.parts.iter())
        .collect();
    let missing: Vec<&String> = parts.iter().filter(|p| !covered.contains(p)).collect();
    if missing.is_empty() {
        Ok(file.variant())
    } else {
        Err(format!(
            "its name's {} {} {} no kernel variant in [files.variants]",
            if missing.len() == 1 { "part" } else { "parts" },
            missing
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", "),
            if missing.len() == 1 { "has" } else { "have" },
        ))
    }
}

/// Apply the launcher's edits to one entry: `force` sets, `at_most` clamps. Returns what changed.
fn edit_entry(values: &mut Config, edits: &[&EntryEdits]) -> Vec<String> {
    let mut changed = Vec::new();
    for edit in edits {
        for name in &edit.drop {
            if let Some(at) = values.iter().position(|(k, _)| k == name) {
                let (_, value) = values.remove(at);
                changed.push(format!("{name}={value} dropped"));
            }
        }
        for (name, forced) in &edit.force {
            match values.iter_mut().find(|(k, _)| k == name) {
                Some(slot) if slot.1 != *forced => {
                    changed.push(format!("{name} {} -> {forced} (forced)", slot.1));
                    slot.1 = forced.clone();
                }
                Some(_) => {}
                None => values.push((name.clone(), forced.clone())),
            }
        }
        for (name, limit) in &edit.at_most {
            if let Some(slot) = values.iter_mut().find(|(k, _)| k == name)
                && let (Some(value), Some(bound)) = (slot.1.as_f64(), limit.as_f64())
                && value > bound
            {
                changed.push(format!("{name} {} -> {limit} (at most)", slot.1));
                slot.1 = limit.clone();
            }
        }
    }
    changed
}

/// Prepare every file: variant, edits, device.
pub fn prepare_files(
    spec: &Sweep,
    files: Vec<(ConfigFile, Option<TargetDevice>)>,
) -> Vec<PreparedFile> {
    files
        .into_iter()
        .map(|(file, device)| {
            let variant = describe_variant(spec, &file);
            let mut edits: Vec<&EntryEdits> = vec![&spec.files.edits];
            if let Ok(label) = &variant {
                let probe = vec![(VARIANT_KEY.to_owned(), Value::from(label.as_str()))];
                edits.extend(spec.variant_of(&probe).into_iter().map(|v| &v.edits));
            }
            let entries = file
                .entries
                .iter()
                .map(|(key, config)| {
                    let mut values: Config =
                        config.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                    let changed = edit_entry(&mut values, &edits);
                    (key.clone(), values, changed)
                })
                .collect();
            PreparedFile {
                file,
                device,
                variant,
                entries,
            }
        })
        .collect()
}

/// Entries that set a name the kernel does not take and no backend's compile options include
/// would make the launch fail (Triton refuses unknown keyword arguments): each is left out and
/// listed as a problem of its file, and the rest of the file is judged.
fn leave_out_unlaunchable(
    files: &mut [PreparedFile],
    interface: &KernelInterface,
    function: &str,
    problems: &mut Vec<FileProblem>,
) {
    let known = |key: &str| {
        key == VARIANT_KEY
            || OPTION_AXES.contains(&key)
            || interface.params.iter().any(|p| p.name == key)
            || interface.backend_options.values().any(|o| o.iter().any(|n| n == key))
            // A worker that did not list options (an older one): take every key.
            || interface.backend_options.is_empty()
    };
    // Files that are not judged (a variant the spec does not describe, a GPU tilefit cannot
    // compile for) are listed as such; their entries are not checked either.
    for file in files
        .iter_mut()
        .filter(|f| f.variant.is_ok() && f.file.unsupported.is_none())
    {
        file.entries.retain(|(key, values, _)| {
            let unknown: Vec<String> = values
                .iter()
                .filter(|(name, _)| !known(name))
                .map(|(name, _)| format!("`{name}`"))
                .collect();
            if unknown.is_empty() {
                return true;
            }
            problems.push(FileProblem {
                path: file.file.path.clone(),
                entry: Some(key.clone()),
                problem: format!(
                    "entry `{key}` is left out: {} {} neither a parameter of `{function}` nor a compile option, so its launch would fail",
                    unknown.join(", "),
                    if unknown.len() == 1 { "is" } else { "are" }
                ),
            });
            false
        });
    }
}

/// The config files' entries as listed configs: kernel meta-parameters first in the kernel's
/// parameter order (`param_order`), options (`num_warps`, `num_stages`, ...) after, each distinct
/// (config, variant) once with every place it appears. With `[files.variants]`, the variant is
/// the first value (`variant`). Each is compiled for its files' devices and for the fleet's
/// (`fleet`) archs of the same backend; files of a variant the spec does not describe are left
/// out.
pub fn from_files(
    files: &[PreparedFile],
    param_order: &[String],
    with_variants: bool,
    fleet: &[TargetDevice],
) -> ListedConfigs {
    let rank = |key: &str| {
        if key == VARIANT_KEY && with_variants {
            return 0;
        }
        1 + param_order
            .iter()
            .position(|p| p == key)
            .or_else(|| {
                OPTION_AXES
                    .iter()
                    .position(|o| *o == key)
                    .map(|i| param_order.len() + 1 + i)
            })
            .unwrap_or(param_order.len())
    };
    let mut listed: Vec<ListedConfig> = Vec::new();
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for prepared in files {
        let Ok(label) = &prepared.variant else {
            continue;
        };
        if prepared.file.unsupported.is_some() {
            continue;
        }
        let archs: Vec<String> = match &prepared.device {
            Some(device) => std::iter::once(device.arch.clone())
                .chain(
                    fleet
                        .iter()
                        .filter(|d| d.backend == device.backend)
                        .map(|d| d.arch.clone()),
                )
                .collect(),
            None => fleet.iter().map(|d| d.arch.clone()).collect(),
        };
        for (key, entry, _) in &prepared.entries {
            let mut values = entry.clone();
            if with_variants {
                values.push((
                    VARIANT_KEY.to_owned(),
                    Value::from(if label.is_empty() { "base" } else { label }),
                ));
            }
            values.sort_by_key(|(k, _)| rank(k));
            let origin = crate::vocab::Listing::Entry {
                file: prepared.file.name.clone(),
                key: key.clone(),
            };
            // Each distinct (config, variant) once: an index instead of a scan per entry, for
            // folders of thousands of entries.
            let identity = serde_json::to_string(&values).unwrap_or_default();
            let slot = *seen.entry(identity).or_insert_with(|| {
                listed.push(ListedConfig {
                    values,
                    origins: Vec::new(),
                    archs: Some(Vec::new()),
                });
                listed.len() - 1
            });
            let config = &mut listed[slot];
            config.origins.push(origin);
            let known = config.archs.get_or_insert_with(Vec::new);
            for arch in &archs {
                if !known.contains(arch) {
                    known.push(arch.clone());
                }
            }
        }
    }
    ListedConfigs {
        kind: ListKind::ConfigFiles,
        configs: listed,
    }
}

/// The listed configs' inputs that the report needs after the run.
pub(crate) struct ListedInputs {
    pub(crate) files: Vec<PreparedFile>,
    pub(crate) file_problems: Vec<FileProblem>,
    pub(crate) autotune: Vec<AutotuneConfig>,
    /// The devices the user named, before the config files' devices joined the fleet.
    pub(crate) explicit: Vec<String>,
}

/// The spec and fleet a probe runs: with the autotune list or the config files crossed into the
/// sweep, and the config files' devices added to the fleet.
pub(crate) struct Prepared {
    pub(crate) spec: Sweep,
    pub(crate) targets: Vec<TargetDevice>,
    pub(crate) listed: Option<ListedInputs>,
}

/// Each file with the device its name maps to, and the fleet with those devices added.
fn map_to_devices(
    files: Vec<ConfigFile>,
    targets: &[TargetDevice],
    table: &DeviceTable,
) -> Result<MappedFiles, crate::device::LookupError> {
    let mut fleet = targets.to_vec();
    let mut mapped = Vec::new();
    for file in files {
        let device = match &file.device {
            Ok(name) => {
                if !fleet.iter().any(|d| d.name == *name) {
                    fleet.extend(TargetDevice::resolve(table, std::slice::from_ref(name))?);
                }
                fleet.iter().find(|d| d.name == *name).cloned()
            }
            Err(_) => None,
        };
        mapped.push((file, device));
    }
    Ok((fleet, mapped))
}

/// The fleet, and each file with its device.
type MappedFiles = (Vec<TargetDevice>, Vec<(ConfigFile, Option<TargetDevice>)>);

/// The spec's config files: as the caller read them (or made them), else read now (a library
/// caller's spec, a merge).
fn config_set(
    spec: &Sweep,
    cancel: &crate::cancel::Cancel,
) -> Result<crate::input::spec::ConfigSet, SpecError> {
    if let Some(set) = &spec.config_set {
        return Ok(set.clone());
    }
    let mut read = spec.clone();
    read.read_config_files(cancel)?;
    Ok(read.config_set.unwrap_or_default())
}

pub(crate) fn prepare_listed(
    spec: &Sweep,
    interface: &KernelInterface,
    targets: &[TargetDevice],
    cancel: &crate::cancel::Cancel,
) -> Result<Prepared, ListedError> {
    use crate::input::spec::AutotuneUse;
    let path = spec.origin.shown();
    let field_error = |field: &str, problem: String, fix: String| {
        ListedError::Spec(SpecError::Field {
            path: path.clone(),
            field: field.to_owned(),
            problem,
            fix,
        })
    };
    if spec.config_files.is_some() || spec.config_set.is_some() {
        let table = DeviceTable::builtin()?;
        let crate::input::spec::ConfigSet { files, problems } = config_set(spec, cancel)?;
        if files.is_empty() {
            let reasons: Vec<String> = problems
                .iter()
                .map(|p| format!("{} {}", p.path.display(), p.problem))
                .collect();
            return Err(field_error(
                "[sweep].from_files",
                format!("matches no usable config file: {}", reasons.join("; ")),
                "each file maps batch sizes to configs: `{\"16\": {\"BLOCK_SIZE_M\": 64, ...}}`"
                    .to_owned(),
            ));
        }
        if targets.is_empty() && files.iter().all(|f| f.device.is_err()) {
            return Err(field_error(
                "[sweep].from_files",
                "matches files of which none names a known device, and [targets] names none"
                    .to_owned(),
                "name the devices to judge them on in [targets] (or --targets)".to_owned(),
            ));
        }
        let (fleet, mapped) = map_to_devices(files, targets, table)
            .map_err(|e| field_error("[sweep].from_files", e.to_string(), e.hint()))?;
        let order: Vec<String> = interface.params.iter().map(|p| p.name.clone()).collect();
        let mut mapped = prepare_files(spec, mapped);
        let mut problems = problems;
        leave_out_unlaunchable(&mut mapped, interface, &spec.function, &mut problems);
        let with_variants = !spec.files.variants.is_empty();
        let listed = from_files(&mapped, &order, with_variants, targets);
        if listed.configs.is_empty() {
            return Err(field_error(
                "[sweep].from_files",
                "matches only files of kernel variants the spec does not describe".to_owned(),
                "describe them: `[files.variants.\"dtype=fp8_w8a8\"]` with the `args` and `constexprs` that change".to_owned(),
            ));
        }
        let spec = spec.with_listed(listed)?;
        return Ok(Prepared {
            spec,
            targets: fleet,
            listed: Some(ListedInputs {
                files: mapped,
                file_problems: problems,
                autotune: Vec::new(),
                explicit: targets.iter().map(|d| d.device.clone()).collect(),
            }),
        });
    }
    match (&interface.autotune, spec.autotune) {
        (Some(configs), AutotuneUse::Auto | AutotuneUse::Required) => {
            let list = from_autotune(configs)
                .map_err(|problem| field_error("[kernel].function", problem, "give the autotune config plain values, or write `autotune = false` in [sweep] and sweep your own".to_owned()))?;
            Ok(Prepared {
                spec: spec.with_listed(list)?,
                targets: targets.to_vec(),
                listed: Some(ListedInputs {
                    files: Vec::new(),
                    file_problems: Vec::new(),
                    autotune: configs.clone(),
                    explicit: targets.iter().map(|d| d.device.clone()).collect(),
                }),
            })
        }
        (None, AutotuneUse::Required) => Err(field_error(
            "[sweep].autotune",
            format!(
                "is true, but `{}` has no @triton.autotune configs",
                spec.function
            ),
            "remove `autotune = true`, or probe the @triton.autotune-wrapped function".to_owned(),
        )),
        _ => Ok(Prepared {
            spec: spec.clone(),
            targets: targets.to_vec(),
            listed: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::Listing;

    fn config(kwargs: &[(&str, Value)], warps: u64, stages: u64) -> AutotuneConfig {
        AutotuneConfig {
            kwargs: kwargs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
            num_warps: warps,
            num_stages: stages,
            num_ctas: 1,
            maxnreg: None,
            pre_hook: false,
        }
    }

    #[test]
    fn autotune_configs_keep_their_order_and_places() {
        let list = [
            config(
                &[("BLOCK_N", Value::from(64)), ("BLOCK_M", Value::from(32))],
                4,
                3,
            ),
            config(
                &[("BLOCK_N", Value::from(128)), ("BLOCK_M", Value::from(32))],
                8,
                4,
            ),
            // A repeat of #0: compiled once, listed at both places.
            config(
                &[("BLOCK_N", Value::from(64)), ("BLOCK_M", Value::from(32))],
                4,
                3,
            ),
        ];
        let listed = from_autotune(&list).unwrap();
        assert_eq!(listed.configs.len(), 2);
        assert_eq!(
            listed.configs[0].origins,
            [Listing::Autotune(0), Listing::Autotune(2)]
        );
        assert_eq!(listed.configs[0].origins[1].to_string(), "autotune #2");
        let names: Vec<&str> = listed.configs[0]
            .values
            .iter()
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(names, ["BLOCK_N", "BLOCK_M", "num_warps", "num_stages"]);
        assert_eq!(
            list[1].python(),
            "triton.Config({\"BLOCK_N\": 128, \"BLOCK_M\": 32}, num_warps=8, num_stages=4)"
        );
    }

    #[test]
    fn a_value_tilefit_cannot_pass_names_the_config() {
        let list = [config(
            &[(
                "ACTIVATION",
                serde_json::json!({"unsupported": "<function relu>"}),
            )],
            4,
            3,
        )];
        let error = from_autotune(&list).unwrap_err();
        assert!(
            error.contains("autotune config #0 sets `ACTIVATION`"),
            "{error}"
        );
        assert!(error.contains("<function relu>"), "{error}");
    }

    #[test]
    fn file_configs_follow_the_kernel_s_parameter_order() {
        let entries: Config = [
            ("num_stages", 3),
            ("BLOCK_SIZE_K", 64),
            ("num_warps", 4),
            ("BLOCK_SIZE_M", 16),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), Value::from(v)))
        .collect();
        let file = PreparedFile {
            file: ConfigFile {
                path: "x.json".into(),
                name: "x.json".into(),
                device_name: None,
                device: Err("none".into()),
                unsupported: None,
                variant_parts: Vec::new(),
                tuned_with: None,
                metadata: Vec::new(),
                entries: vec![("16".into(), entries.iter().cloned().collect())],
                repeated_keys: Vec::new(),
            },
            device: None,
            variant: Ok(String::new()),
            entries: vec![("16".into(), entries, Vec::new())],
        };
        let order = ["BLOCK_SIZE_M".to_owned(), "BLOCK_SIZE_K".to_owned()];
        let listed = from_files(&[file], &order, false, &[]);
        let names: Vec<&str> = listed.configs[0]
            .values
            .iter()
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(
            names,
            ["BLOCK_SIZE_M", "BLOCK_SIZE_K", "num_warps", "num_stages"]
        );
        assert_eq!(
            listed.configs[0].origins,
            [Listing::Entry {
                file: "x.json".to_owned(),
                key: "16".to_owned()
            }]
        );
        assert_eq!(listed.configs[0].origins[0].to_string(), "x.json: 16");
    }

    #[test]
    fn the_launcher_s_edits_apply_and_are_recorded() {
        let mut values: Config = vec![
            ("BLOCK_SIZE_K".into(), Value::from(256)),
            ("USE_TMA".into(), Value::from(true)),
            ("SPLIT_K".into(), Value::from(2)),
        ];
        let edits = EntryEdits {
            force: vec![("SPLIT_K".into(), Value::from(1))],
            at_most: vec![("BLOCK_SIZE_K".into(), Value::from(128))],
            drop: vec!["USE_TMA".into()],
        };
        let changed = edit_entry(&mut values, &[&edits]);
        assert_eq!(
            values,
            [
                ("BLOCK_SIZE_K".to_owned(), Value::from(128)),
                ("SPLIT_K".to_owned(), Value::from(1))
            ]
        );
        assert_eq!(
            changed,
            [
                "USE_TMA=true dropped",
                "SPLIT_K 2 -> 1 (forced)",
                "BLOCK_SIZE_K 256 -> 128 (at most)"
            ]
        );
        // An entry without the forced key gets it; one under the bound keeps its value.
        let mut small: Config = vec![("BLOCK_SIZE_K".into(), Value::from(64))];
        assert!(edit_entry(&mut small, &[&edits]).is_empty());
        assert_eq!(small[1], ("SPLIT_K".to_owned(), Value::from(1)));
        assert_eq!(small[0].1, Value::from(64));
    }
}
