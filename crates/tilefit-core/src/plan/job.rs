//! One compile job and its stable key. A job is everything the worker needs to compile one
//! config for one target arch: the kernel, the arguments with their example values (so Triton's
//! own specializer sees what a real launch passes), constexprs, options and the target. Binding a
//! spec config to the kernel's real parameter list happens here, and so does the check that every
//! name in the spec means something to the kernel.

use serde_json::Value;
use std::collections::BTreeMap;

use crate::input::spec::{self, OPTION_AXES, SpecError, Sweep};
use crate::vocab::{self, Config, JobArg, KernelParam};

/// A config bound to the kernel: what goes where.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundConfig {
    /// Arguments with filled types.
    pub args: BTreeMap<String, JobArg>,
    /// Constexprs.
    pub constexprs: BTreeMap<String, Value>,
    /// Options.
    pub options: BTreeMap<String, Value>,
}

/// Check every name in the spec against the kernel's parameters, then bind one config. Called for
/// every config before anything compiles, so a bad spec fails fast with the field to fix.
pub fn bind(
    spec: &Sweep,
    params: &[KernelParam],
    config: &Config,
) -> Result<BoundConfig, SpecError> {
    // A config file's variant changes arguments and constexprs ([files.variants]).
    let variants = spec.variant_of(config);
    let mut arg_templates = spec.args.clone();
    let mut fixed = spec.constexprs.clone();
    for variant in &variants {
        for (name, template) in &variant.args {
            match arg_templates.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = template.clone(),
                None => arg_templates.push((name.clone(), template.clone())),
            }
        }
        for (name, value) in &variant.constexprs {
            match fixed.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = value.clone(),
                None => fixed.push((name.clone(), value.clone())),
            }
        }
    }
    let binder = Binder {
        spec,
        params,
        arg_templates: &arg_templates,
        fixed: &fixed,
    };
    let args = binder.args(config)?;
    let mut constexprs = binder.constexprs()?;
    let options = binder.axes(config, &args, &mut constexprs)?;
    binder.nothing_missing(&args, &constexprs)?;
    Ok(BoundConfig {
        args,
        constexprs,
        options,
    })
}

/// A spec checked against one kernel's parameter list.
struct Binder<'a> {
    spec: &'a Sweep,
    params: &'a [KernelParam],
    /// [args], with the config's variant applied.
    arg_templates: &'a [(String, spec::ArgTemplate)],
    /// [constexprs], with the config's variant applied.
    fixed: &'a [(String, Value)],
}

impl Binder<'_> {
    fn error(&self, field: String, problem: String, fix: String) -> SpecError {
        SpecError::Field {
            path: self.spec.origin.shown(),
            field,
            problem,
            fix,
        }
    }

    fn param(&self, name: &str) -> Option<&KernelParam> {
        self.params.iter().find(|p| p.name == name)
    }

    /// "did you mean `X`?" for a near miss, else the parameter list.
    fn closest(&self, name: &str) -> String {
        let best = self
            .params
            .iter()
            .map(|p| {
                (
                    strsim::normalized_damerau_levenshtein(name, &p.name),
                    p.name.as_str(),
                )
            })
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .filter(|(score, _)| *score >= 0.5);
        match best {
            Some((_, name)) => format!("did you mean `{name}`?"),
            None => format!(
                "the kernel's parameters are {}",
                self.params
                    .iter()
                    .map(|p| format!("`{}`", p.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    fn not_a_param(&self, field: String, name: &str) -> SpecError {
        self.error(
            field,
            format!("is not a parameter of `{}`", self.spec.function),
            self.closest(name),
        )
    }

    /// [args]: non-constexpr parameters, types with placeholders filled from the config.
    fn args(&self, config: &Config) -> Result<BTreeMap<String, JobArg>, SpecError> {
        let mut args = BTreeMap::new();
        for (name, template) in self.arg_templates {
            match self.param(name) {
                None => return Err(self.not_a_param(format!("[args].{name}"), name)),
                Some(p) if p.constexpr => {
                    return Err(self.error(
                        format!("[args].{name}"),
                        "is a tl.constexpr parameter".to_owned(),
                        format!("move it to [constexprs]: `{name} = ...`"),
                    ));
                }
                Some(_) => {}
            }
            let ty = spec::fill_placeholders(&template.type_template, config);
            if let Err(suggestion) = spec::check_type(&ty) {
                return Err(self.error(
                    format!("[args].{name}"),
                    format!(
                        "becomes the unknown type `{ty}` in the config `{}`",
                        vocab::describe_config(config)
                    ),
                    suggestion.map_or_else(
                        || format!("Triton types are {}", spec::TRITON_DTYPES.join(", ")),
                        |s| format!("did you mean `{s}`?"),
                    ),
                ));
            }
            let swept = config
                .iter()
                .find(|(axis, _)| axis == name)
                .map(|(_, v)| v.clone());
            let value = swept
                .or_else(|| template.value.clone())
                .or_else(|| default_value(&ty));
            let descriptor = template.descriptor.as_ref().map(|d| vocab::Descriptor {
                dtype: spec::fill_placeholders(&d.dtype, config),
                ..d.clone()
            });
            args.insert(
                name.clone(),
                JobArg {
                    ty,
                    value,
                    aligned: template.aligned,
                    descriptor,
                },
            );
        }
        Ok(args)
    }

    /// [constexprs]: constexpr parameters only.
    fn constexprs(&self) -> Result<BTreeMap<String, Value>, SpecError> {
        let mut constexprs = BTreeMap::new();
        for (name, value) in self.fixed {
            let field = format!("[constexprs].{name}");
            match self.param(name) {
                Some(p) if p.constexpr => {
                    constexprs.insert(name.clone(), value.clone());
                }
                Some(_) => {
                    return Err(self.error(
                        field,
                        "is not a tl.constexpr parameter".to_owned(),
                        format!(
                            "move it to [args] with its type: `{name} = {{ type = \"i32\", value = {value} }}`"
                        ),
                    ));
                }
                None if OPTION_AXES.contains(&name.as_str()) => {
                    return Err(self.error(
                        field,
                        "is a compile option, not a kernel parameter".to_owned(),
                        format!("move it to [options] or [sweep]: `{name} = {value}`"),
                    ));
                }
                None => return Err(self.not_a_param(field, name)),
            }
        }
        Ok(constexprs)
    }

    /// [options] and the sweep axes: each axis is a placeholder, a constexpr, a swept argument
    /// value or a compile option. Returns the options.
    fn axes(
        &self,
        config: &Config,
        args: &BTreeMap<String, JobArg>,
        constexprs: &mut BTreeMap<String, Value>,
    ) -> Result<BTreeMap<String, Value>, SpecError> {
        for (name, _) in &self.spec.options {
            if let Some(p) = self.param(name) {
                return Err(self.error(
                    format!("[options].{name}"),
                    format!(
                        "is a parameter of `{}`, not a compile option",
                        self.spec.function
                    ),
                    if p.constexpr {
                        "move it to [constexprs]"
                    } else {
                        "move it to [args]"
                    }
                    .to_owned(),
                ));
            }
        }
        let placeholders = self.spec.placeholders();
        let mut options: BTreeMap<String, Value> = self.spec.options.iter().cloned().collect();
        for (name, value) in config {
            if placeholders.contains(name)
                || (name == spec::VARIANT_KEY && !self.spec.files.variants.is_empty())
            {
                continue;
            }
            match self.param(name) {
                Some(p) if p.constexpr => {
                    constexprs.insert(name.clone(), value.clone());
                }
                Some(_) if args.contains_key(name) => {}
                Some(_) => {
                    return Err(self.error(
                        format!("[sweep].{name}"),
                        "sweeps a non-constexpr argument that [args] does not type".to_owned(),
                        format!("add `{name} = \"i32\"` (its Triton type) to [args]"),
                    ));
                }
                None => {
                    let suggestion = self.closest(name);
                    if !OPTION_AXES.contains(&name.as_str())
                        && suggestion.starts_with("did you mean")
                    {
                        return Err(self.error(
                            format!("[sweep].{name}"),
                            format!(
                                "is neither a parameter of `{}` nor a compile option",
                                self.spec.function
                            ),
                            suggestion,
                        ));
                    }
                    options.insert(name.clone(), value.clone());
                }
            }
        }
        Ok(options)
    }

    /// Every parameter without a default has a value.
    fn nothing_missing(
        &self,
        args: &BTreeMap<String, JobArg>,
        constexprs: &BTreeMap<String, Value>,
    ) -> Result<(), SpecError> {
        let missing: Vec<&str> = self
            .params
            .iter()
            .filter(|p| {
                !p.has_default
                    && !p.heuristic
                    && !args.contains_key(&p.name)
                    && !constexprs.contains_key(&p.name)
            })
            .map(|p| p.name.as_str())
            .collect();
        let Some(first) = missing.first() else {
            return Ok(());
        };
        let section = if self.param(first).is_some_and(|p| p.constexpr) {
            "constexprs"
        } else {
            "args"
        };
        Err(self.error(
            format!("[{section}]"),
            format!(
                "gives no value for the kernel parameter{} {}",
                if missing.len() > 1 { "s" } else { "" },
                missing
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!("add them, e.g. `{first} = ...` under [{section}] (or sweep them in [sweep])"),
        ))
    }
}

/// Floats and bools are never value-specialized by Triton, so any example does.
fn default_value(ty: &str) -> Option<Value> {
    match ty {
        "fp16" | "bf16" | "fp32" | "fp64" => Some(Value::from(1.0)),
        "i1" | "u1" => Some(Value::from(true)),
        _ => None,
    }
}
