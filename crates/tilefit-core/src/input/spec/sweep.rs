//! A spec's sweep: its axes crossed (outermost first), crossed again with listed configs (an
//! autotune list, config files), where each config was listed and which archs it compiles for, and
//! the `[files.variants]` that apply to a config file's entry.

use serde_json::Value;

use crate::cancel::Cancel;
use crate::device::DeviceTable;
use crate::input::config_files;
use crate::vocab::Config;

use super::{
    Axis, ConfigSet, FileVariant, ListedConfigs, SpecError, Sweep, VARIANT_KEY, placeholders_in,
    recommend_rule, variant_key_parts,
};

impl Sweep {
    /// The `{placeholder}` names the argument types use.
    pub fn placeholders(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for (_, template) in &self.args {
            let descriptor = template.descriptor.as_ref().map(|d| d.dtype.as_str());
            for name in placeholders_in(&template.type_template)
                .into_iter()
                .chain(descriptor.map(placeholders_in).unwrap_or_default())
            {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        names
    }

    /// Every axis a config sets: the [sweep] axes, then the listed configs' keys.
    pub fn axes(&self) -> Vec<Axis> {
        let mut axes = self.sweep.clone();
        if let Some(listed) = &self.listed {
            axes.extend(listed.axes());
        }
        axes
    }

    /// This spec with `listed` crossed into its sweep: checks that nothing else sets their keys
    /// and makes the recommendation rule over every axis.
    pub fn with_listed(&self, listed: ListedConfigs) -> Result<Sweep, SpecError> {
        let path = self.origin.shown();
        let field_error = |field: &str, problem: String, fix: String| SpecError::Field {
            path: path.clone(),
            field: field.to_owned(),
            problem,
            fix,
        };
        let source = listed.describe(&self.function);
        let listed_axes = listed.axes();
        for axis in &listed_axes {
            let name = axis.name.as_str();
            let clash = if self.sweep.iter().any(|a| a.name == name) {
                Some("sweep")
            } else if self.constexprs.iter().any(|(k, _)| k == name) {
                Some("constexprs")
            } else if self.options.iter().any(|(k, _)| k == name) {
                Some("options")
            } else {
                None
            };
            if let Some(section) = clash {
                return Err(field_error(
                    &format!("[{section}].{name}"),
                    format!("is also set by {source}"),
                    format!("remove it from [{section}]: the listed configs set `{name}`"),
                ));
            }
        }
        let mut all_axes = self.sweep.clone();
        all_axes.extend(listed_axes);
        let placeholders = self.placeholders();
        let rule = recommend_rule(
            self.raw_recommend.clone(),
            &all_axes,
            &placeholders,
            &field_error,
        )?;
        Ok(Sweep {
            recommend: rule,
            listed: Some(listed),
            ..self.clone()
        })
    }

    /// Every config of the sweep, the first axis outermost (the order a reader expects rows in),
    /// each crossed with the listed configs when there are any (listed order inside).
    pub fn configs(&self) -> Vec<Config> {
        let crossed = self.axis_configs();
        match &self.listed {
            None => crossed,
            Some(listed) => crossed
                .into_iter()
                .flat_map(|prefix| {
                    listed.configs.iter().map(move |config| {
                        let mut values = prefix.clone();
                        values.extend(config.values.iter().cloned());
                        values
                    })
                })
                .collect(),
        }
    }

    /// Where each config of [`Sweep::configs`] was listed (empty for axis-only sweeps).
    pub fn config_origins(&self) -> Vec<Vec<crate::vocab::Listing>> {
        let crossed = self.axis_configs().len();
        match &self.listed {
            None => vec![Vec::new(); crossed],
            Some(listed) => (0..crossed)
                .flat_map(|_| listed.configs.iter().map(|c| c.origins.clone()))
                .collect(),
        }
    }

    /// The archs each config of [`Sweep::configs`] compiles for (`None`: the whole fleet).
    pub fn config_archs(&self) -> Vec<Option<Vec<String>>> {
        let crossed = self.axis_configs().len();
        match &self.listed {
            None => vec![None; crossed],
            Some(listed) => (0..crossed)
                .flat_map(|_| listed.configs.iter().map(|c| c.archs.clone()))
                .collect(),
        }
    }

    /// The `[files.variants]` that apply to a config's variant label, least specific first, or
    /// `None` for configs without a variant.
    pub fn variant_of(&self, config: &[(String, Value)]) -> Vec<&FileVariant> {
        if self.files.variants.is_empty() {
            return Vec::new();
        }
        let Some(label) = config
            .iter()
            .find(|(k, _)| k == VARIANT_KEY)
            .and_then(|(_, v)| v.as_str())
        else {
            return Vec::new();
        };
        let parts = variant_key_parts(label);
        let mut applied: Vec<&FileVariant> = self
            .files
            .variants
            .iter()
            .filter(|v| v.parts.iter().all(|p| parts.contains(p)))
            .collect();
        applied.sort_by_key(|v| v.parts.len());
        applied
    }

    /// The cartesian product of the [sweep] axes.
    fn axis_configs(&self) -> Vec<Config> {
        let mut configs: Vec<Config> = vec![Vec::new()];
        for axis in &self.sweep {
            configs = configs
                .into_iter()
                .flat_map(|prefix| {
                    axis.values.iter().map(move |value| {
                        let mut config = prefix.clone();
                        config.push((axis.name.clone(), value.clone()));
                        config
                    })
                })
                .collect();
        }
        configs
    }
}

impl Sweep {
    /// Read the files `[sweep] from_files` matches into [`Sweep::config_set`], once: a
    /// probe and the `--emit-files` that follows it judge the same values. Nothing to do when
    /// they are read (or were made in memory) or the spec has no `from_files`.
    pub fn read_config_files(&mut self, cancel: &Cancel) -> Result<(), SpecError> {
        let Some(pattern) = self
            .config_files
            .as_ref()
            .filter(|_| self.config_set.is_none())
        else {
            return Ok(());
        };
        let field_error = |problem: String, fix: &str| SpecError::Field {
            path: self.origin.shown(),
            field: "[sweep].from_files".to_owned(),
            problem,
            fix: fix.to_owned(),
        };
        let table = DeviceTable::builtin()
            .map_err(|e| field_error(e.to_string(), "a build defect: report it"))?;
        let (files, problems) = config_files::read(pattern, table, cancel).map_err(|e| {
            let hint = if matches!(e, config_files::ConfigFilesError::Interrupted(_)) {
                "run it again to the end"
            } else {
                "the pattern is relative to the spec: `from_files = \"configs/*.json\"`"
            };
            field_error(e.to_string(), hint)
        })?;
        self.config_set = Some(ConfigSet { files, problems });
        Ok(())
    }
}
