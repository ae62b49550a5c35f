//! A capture's launches as compiles: the distinct compiles of one target's launches, each launch
//! (an autotuned one with every config it would try) pointing at its compiles, and the probe spec
//! of a compile or of a kernel's compiles, written as TOML (what `--emit-spec` writes, and what the
//! capture itself compiles through the probe pipeline, so the two cannot disagree).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use serde_json::Value;

use crate::input::capture::{CapturedArg, CapturedKernel, Frame, Launch, Records, Site};

/// One distinct compile: what decides the compiled kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct Compile {
    /// The kernel.
    pub kernel: CapturedKernel,
    /// Non-constexpr arguments as the JIT specializes them.
    pub args: BTreeMap<String, CapturedArg>,
    /// Constexprs.
    pub constexprs: BTreeMap<String, Value>,
    /// Compile options the launch passed.
    pub options: BTreeMap<String, Value>,
    /// Module-level values the kernel reads.
    pub globals: BTreeMap<String, Value>,
}

/// One launch of the host code: a fixed config, or an autotuned launch with every config the
/// autotuner would try after pruning.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedLaunch {
    /// The kernel.
    pub kernel: CapturedKernel,
    /// The user's call.
    pub caller: Option<Site>,
    /// From the user's call down to the launch.
    pub chain: Vec<Frame>,
    /// The script's calls (tests) that made it.
    pub calls: Vec<String>,
    /// `Some((configs in the list, configs tried))` for an autotuned launch.
    pub autotune: Option<(u64, u64)>,
    /// The names the autotune list's entries set.
    pub autotune_keys: Vec<String>,
    /// The compiles it makes (indexes into [`Planned::compiles`]); empty when unsupported.
    pub compiles: Vec<usize>,
    /// The grid (of the first config).
    pub grid: Option<Vec<u64>>,
    /// Why it cannot be compiled, when it cannot.
    pub unsupported: Option<String>,
}

/// One target's launches, planned.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Planned {
    /// Distinct compiles, in first-launched order.
    pub compiles: Vec<Compile>,
    /// Launches, in order; repeated identical launches once (with a count).
    pub launches: Vec<(PlannedLaunch, u64)>,
}

/// Why a captured launch cannot be compiled: what the emulated run said (the records' reader adds
/// a kernel with no scope file). A kernel is compiled from its scope file, wherever its module
/// lived, so where it was defined does not matter.
fn not_loadable(launch: &Launch) -> Option<String> {
    launch.unsupported.clone()
}

fn compile_of(launch: &Launch) -> Compile {
    Compile {
        kernel: launch.kernel.clone(),
        args: launch.args.clone(),
        constexprs: launch.constexprs.clone(),
        options: launch.options.clone(),
        globals: launch.globals.clone(),
    }
}

/// What the JIT specializes an int argument on: the value 1 (a constant), divisibility by 16,
/// or neither. Two launches whose ints fall in the same classes make the same compile.
fn int_class(arg: &CapturedArg) -> Value {
    let int = matches!(arg.ty.as_str(), "i32" | "i64" | "u64");
    let value = arg.value.as_ref();
    let number = value.and_then(|v| {
        v.as_i64()
            .map(i128::from)
            .or_else(|| v.as_u64().map(i128::from))
    });
    match number {
        Some(1) if int => Value::from("=1"),
        Some(v) if int && v % 16 == 0 => Value::from("%16"),
        Some(_) if int => Value::from("other"),
        _ => arg.value.clone().unwrap_or(Value::Null),
    }
}

/// The identity of a compile, as the JIT sees it: everything but the int arguments' values,
/// which count only by [`int_class`].
fn compile_key(compile: &Compile) -> String {
    let args: BTreeMap<&String, Value> = compile
        .args
        .iter()
        .map(|(name, arg)| {
            let class = serde_json::json!([arg.ty, int_class(arg), arg.aligned, arg.dtype]);
            (name, class)
        })
        .collect();
    let descriptors: Vec<_> = compile
        .args
        .values()
        .map(|a| (&a.shape, &a.strides, &a.block_shape))
        .collect();
    serde_json::to_string(&(
        &compile.kernel,
        args,
        descriptors,
        &compile.constexprs,
        &compile.options,
        &compile.globals,
    ))
    .unwrap_or_default()
}

/// Group one target's records into launches and their distinct compiles, in time linear in the
/// launches: compiles and repeated launches are found by key, not by search.
pub fn plan(records: &Records) -> Planned {
    let mut planned = Planned::default();
    let mut compile_index: HashMap<String, usize> = HashMap::new();
    let mut index_of = |planned: &mut Planned, launch: &Launch| -> usize {
        let compile = compile_of(launch);
        let key = compile_key(&compile);
        *compile_index.entry(key).or_insert_with(|| {
            planned.compiles.push(compile);
            planned.compiles.len() - 1
        })
    };
    let mut groups: BTreeMap<u64, usize> = BTreeMap::new();
    for launch in &records.launches {
        let why = not_loadable(launch);
        let compile = why.is_none().then(|| index_of(&mut planned, launch));
        if let Some(role) = &launch.autotune {
            if let Some(&at) = groups.get(&role.group) {
                let (entry, _) = &mut planned.launches[at];
                entry
                    .compiles
                    .extend(compile.filter(|c| !entry.compiles.contains(c)));
                if entry.unsupported.is_none() {
                    entry.unsupported = why;
                }
                continue;
            }
            groups.insert(role.group, planned.launches.len());
        }
        let entry = PlannedLaunch {
            kernel: launch.kernel.clone(),
            caller: launch.caller.clone(),
            chain: launch.chain.clone(),
            calls: launch.call.iter().cloned().collect(),
            autotune: launch.autotune.as_ref().map(|r| (r.configs, r.tried)),
            autotune_keys: launch
                .autotune
                .as_ref()
                .map(|r| r.keys.clone())
                .unwrap_or_default(),
            compiles: compile.into_iter().collect(),
            grid: launch.grid.clone(),
            unsupported: why,
        };
        planned.launches.push((entry, 1));
    }
    // The same launch made again (a loop, a second layer, another test) is one row with a
    // count and the calls that made it.
    let mut merged: Vec<(PlannedLaunch, u64)> = Vec::new();
    let mut merged_index: HashMap<String, usize> = HashMap::new();
    for (launch, count) in planned.launches.drain(..) {
        let key = serde_json::to_string(&(
            &launch.kernel,
            &launch.caller,
            launch.autotune,
            &launch.compiles,
            &launch.grid,
            &launch.unsupported,
        ))
        .unwrap_or_default();
        if let Some((l, n)) = merged_index.get(&key).map(|&i| &mut merged[i]) {
            *n += count;
            for call in launch.calls {
                if !l.calls.contains(&call) {
                    l.calls.push(call);
                }
            }
        } else {
            merged_index.insert(key, merged.len());
            merged.push((launch, count));
        }
    }
    planned.launches = merged;
    planned
}

/// A JSON value as TOML, where TOML can say it (TOML has no null).
fn toml_value(value: &Value) -> Option<String> {
    let converted: toml::Value = match value {
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => toml::Value::Integer(i),
            (None, Some(f)) => toml::Value::Float(f),
            _ => return None,
        },
        Value::String(s) => toml::Value::String(s.clone()),
        // A non-finite float, as the records carry it (JSON has none).
        Value::Object(o) if o.len() == 1 => match o.get("float").and_then(Value::as_str) {
            Some(text) => toml::Value::Float(text.parse::<f64>().ok()?),
            None => return None,
        },
        Value::Null | Value::Array(_) | Value::Object(_) => return None,
    };
    Some(converted.to_string())
}

fn key(name: &str) -> String {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        name.to_owned()
    } else {
        toml::Value::String(name.to_owned()).to_string()
    }
}

fn arg_toml(arg: &CapturedArg) -> String {
    let ty = toml::Value::String(arg.ty.clone()).to_string();
    if arg.ty == "tensordesc" {
        let list = |v: &Option<Vec<u64>>| {
            let items: Vec<String> = v.iter().flatten().map(u64::to_string).collect();
            format!("[{}]", items.join(", "))
        };
        return format!(
            "{{ type = {ty}, dtype = {}, shape = {}, strides = {}, block_shape = {} }}",
            toml::Value::String(arg.dtype.clone().unwrap_or_default()),
            list(&arg.shape),
            list(&arg.strides),
            list(&arg.block_shape)
        );
    }
    if let Some(value) = arg.value.as_ref().and_then(toml_value) {
        return format!("{{ type = {ty}, value = {value} }}");
    }
    if arg.aligned == Some(false) {
        return format!("{{ type = {ty}, aligned = false }}");
    }
    ty
}

/// The file name of a kernel's scope file: `{function}.{digest prefix}.py`, the function's name
/// kept to what a file name may safely hold.
pub fn scope_file_name(kernel: &CapturedKernel) -> String {
    let function: String = kernel
        .function
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(80)
        .collect();
    let digest: String = kernel
        .scope
        .as_deref()
        .unwrap_or_default()
        .chars()
        .filter(char::is_ascii_hexdigit)
        .take(12)
        .collect();
    let function = if function.is_empty() {
        "kernel".to_owned()
    } else {
        function
    };
    format!("{function}.{digest}.py")
}

/// The probe spec of `compiles` (one kernel's, with the same arguments and scope): what every
/// compile shares is fixed, what differs is a sweep axis (so the spec sweeps at least the captured
/// configs and is ready to sweep more). `comment` heads the file; `scope_file` is the kernel's
/// scope file as the spec names it (relative to the spec, or absolute).
pub fn spec_toml(
    compiles: &[&Compile],
    targets: &[String],
    comment: &str,
    scope_file: &str,
) -> String {
    let Some(first) = compiles.first() else {
        return String::new();
    };
    let mut text = String::new();
    for line in comment.lines() {
        let _ = writeln!(text, "# {line}");
    }
    let _ = writeln!(text, "\n[kernel]");
    // The scope file defines the kernel from its own source with the values its names had at the
    // launch; it imports only Triton, so the engine's import-time code (which reads the device)
    // never runs outside the emulation.
    let _ = writeln!(
        text,
        "# {} line {}",
        crate::escape::control(&first.kernel.file),
        first.kernel.line
    );
    let _ = writeln!(
        text,
        "file = {}",
        toml::Value::String(scope_file.to_owned())
    );
    let _ = writeln!(
        text,
        "function = {}",
        toml::Value::String(first.kernel.function.clone())
    );
    let _ = writeln!(text, "load = \"import\"");
    if !targets.is_empty() {
        let names: Vec<String> = targets
            .iter()
            .map(|t| toml::Value::String(t.clone()).to_string())
            .collect();
        let _ = writeln!(text, "\n[targets]\ndevices = [{}]", names.join(", "));
    }
    let _ = writeln!(text, "\n[args]");
    for (name, arg) in &first.args {
        let _ = writeln!(text, "{} = {}", key(name), arg_toml(arg));
    }
    let mut fixed: Vec<(String, String)> = Vec::new();
    let mut fixed_options: Vec<(String, String)> = Vec::new();
    let mut axes: Vec<(String, Vec<String>)> = Vec::new();
    let mut split = |values: &dyn Fn(&Compile) -> Option<Value>,
                     name: &str,
                     into_fixed: &mut Vec<(String, String)>| {
        let mut seen: Vec<String> = Vec::new();
        for compile in compiles {
            if let Some(v) = values(compile).as_ref().and_then(toml_value)
                && !seen.contains(&v)
            {
                seen.push(v);
            }
        }
        match seen.len() {
            0 => {}
            1 => into_fixed.push((key(name), seen.remove(0))),
            _ => axes.push((key(name), seen)),
        }
    };
    let constexpr_names: Vec<&String> = first.constexprs.keys().collect();
    for name in constexpr_names {
        split(&|c| c.constexprs.get(name).cloned(), name, &mut fixed);
    }
    let mut option_names: Vec<&String> = compiles.iter().flat_map(|c| c.options.keys()).collect();
    option_names.sort();
    option_names.dedup();
    for name in option_names {
        split(&|c| c.options.get(name).cloned(), name, &mut fixed_options);
    }
    if !fixed.is_empty() {
        let _ = writeln!(text, "\n[constexprs]");
        for (name, value) in &fixed {
            let _ = writeln!(text, "{name} = {value}");
        }
    }
    if !fixed_options.is_empty() {
        let _ = writeln!(text, "\n[options]");
        for (name, value) in &fixed_options {
            let _ = writeln!(text, "{name} = {value}");
        }
    }
    // The captured values are the launches' own: the kernel's autotune list (if any) is not swept.
    let _ = writeln!(text, "\n[sweep]\nautotune = false");
    for (name, values) in &axes {
        let _ = writeln!(text, "{name} = [{}]", values.join(", "));
    }
    text
}

/// Compiles of one kernel with the same arguments, globals and option names: one spec each.
pub fn spec_groups(compiles: &[Compile]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, compile) in compiles.iter().enumerate() {
        let same = |other: &Compile| {
            other.kernel.file == compile.kernel.file
                && other.kernel.function == compile.kernel.function
                && other.kernel.scope == compile.kernel.scope
                && other.args == compile.args
                && other.globals == compile.globals
                && other.options.keys().eq(compile.options.keys())
                && other.constexprs.keys().eq(compile.constexprs.keys())
        };
        match groups.iter_mut().find(|g| same(&compiles[g[0]])) {
            Some(group) => group.push(i),
            None => groups.push(vec![i]),
        }
    }
    groups
}
