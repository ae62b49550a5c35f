//! `tilefit capture --emit-spec DIR`: the probe specs of what each device launched, beside the
//! kernels' scope files, so that `tilefit probe` on them gives the capture's bytes.

use std::collections::BTreeMap;

use crate::input::spec::SpecError;
use crate::input::spec::write::to_toml;
use crate::model::capture::CaptureReport;
use crate::plan::capture::{Compile, defined_at, scope_file_name, spec_groups, sweep_of};

/// Why `--emit-spec` writes no specs.
#[derive(Debug, thiserror::Error)]
pub enum EmitSpecError {
    /// A captured compile that makes no sweep (the capture's report names it too).
    #[error("a captured compile makes no probe spec")]
    Sweep(#[source] SpecError),
    /// A value TOML cannot hold.
    #[error("a value cannot be written as TOML")]
    Toml(#[source] toml_edit::ser::Error),
}

/// The probe specs of what each device launched (`--emit-spec DIR`): per target and per kernel
/// (per set of arguments and scope), the captured configs exactly. Where they are a whole cross
/// product of their differing values (`num_stages` 5 and 6), one spec sweeps them; otherwise each
/// config is a spec of its own, so probing never judges a config the device did not launch.
/// Each kernel's scope file is written beside its specs. Returned as (file name, text); a
/// compile that makes no sweep, or a value TOML cannot hold, fails the whole set.
pub fn specs(report: &CaptureReport) -> Result<Vec<(String, String)>, EmitSpecError> {
    let mut files: Vec<(String, String)> = Vec::new();
    let mut taken: BTreeMap<String, usize> = BTreeMap::new();
    for target in &report.targets {
        let device = &target.device.device;
        let compiles: Vec<Compile> = target
            .compiles
            .iter()
            .map(|c| Compile {
                kernel: c.kernel.clone(),
                args: c.args.clone(),
                constexprs: c.constexprs.clone(),
                options: c.options.clone(),
                globals: c.globals.clone(),
                inductor_shared: c.inductor_shared,
                inductor_choice: c.inductor_choice.clone(),
                inductor_rescaled: c.inductor_rescaled.clone(),
            })
            .collect();
        for group in spec_groups(&compiles) {
            let members: Vec<&Compile> = group.iter().map(|&i| &compiles[i]).collect();
            let scope_name = scope_file_name(&members[0].kernel);
            if let Some(scope) = members[0]
                .kernel
                .scope
                .as_ref()
                .and_then(|d| target.scopes.get(d))
                && !files.iter().any(|(n, _)| *n == scope_name)
            {
                files.push((scope_name.clone(), scope.clone()));
            }
            let parts: Vec<Vec<&Compile>> = if is_cross_product(&members) {
                vec![members]
            } else {
                members.into_iter().map(|m| vec![m]).collect()
            };
            for part in parts {
                let function: String = part[0]
                    .kernel
                    .function
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let device_part: String = device
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                    .collect();
                let stem = format!("{function}-{device_part}");
                let n = taken.entry(stem.clone()).or_default();
                *n += 1;
                let name = if *n == 1 {
                    format!("{stem}.toml")
                } else {
                    format!("{stem}-{n}.toml")
                };
                let comment = format!(
                    "`{}` as {} launched it under `tilefit capture` on {device}.\nDefined at {}.\nProbe it: tilefit probe {name}",
                    part[0].kernel.function,
                    report.script,
                    defined_at(part[0])
                );
                let sweep = sweep_of(&part, device, std::path::Path::new(&scope_name))
                    .map_err(EmitSpecError::Sweep)?;
                let text = to_toml(&sweep, &scope_name, &comment).map_err(EmitSpecError::Toml)?;
                files.push((name, text));
            }
        }
    }
    Ok(files)
}

/// Whether the compiles' differing constexprs and options form a whole cross product (so a sweep
/// of them gives exactly these compiles).
fn is_cross_product(compiles: &[&Compile]) -> bool {
    let mut values: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for compile in compiles {
        for (key, value) in compile.constexprs.iter().chain(&compile.options) {
            let seen = values.entry(key.clone()).or_default();
            let text = value.to_string();
            if !seen.contains(&text) {
                seen.push(text);
            }
        }
    }
    let product: usize = values.values().map(Vec::len).product();
    product == compiles.len()
}
