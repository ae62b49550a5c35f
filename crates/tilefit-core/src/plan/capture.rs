//! A capture's launches as compiles: the distinct compiles of one target's launches, each launch
//! (an autotuned one with every config it would try) pointing at its compiles, and the [`Sweep`]
//! of a compile or of a kernel's compiles (what the capture compiles through the probe pipeline,
//! and what `--emit-spec` writes, so the two cannot disagree).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde_json::Value;

use crate::input::capture::{
    CapturedArg, CapturedKernel, Frame, InductorKernel, InductorRescale, Launch, Records, Site,
};
use crate::input::spec::made::{SweepParts, spec_scalar};
use crate::input::spec::{ArgTemplate, Axis, SpecError, Sweep, SweepOrigin};
use crate::vocab::{DESCRIPTOR_TYPE, Descriptor, KernelSource, LoadMode, NONE_TYPE};

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
    /// For a kernel `torch.compile` generated: the bytes Inductor's own compile for the emulated
    /// arch reported (not part of the compile's identity).
    pub inductor_shared: Option<u64>,
    /// For a choice of a max-autotune selection: Inductor's description of its config (its tiles
    /// are constants of its generated source, not constexpr arguments).
    pub inductor_choice: Option<String>,
    /// A config Inductor added after the load, its R blocks halved for registers.
    pub inductor_rescaled: Option<InductorRescale>,
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
    /// A kernel `torch.compile` generated: Inductor's part.
    pub inductor: Option<InductorKernel>,
    /// The processes and threads that made it (`main / MainThread`), sorted.
    pub places: Vec<String>,
    /// The first value assumed before it was launched, where one was.
    pub assumed: Option<Site>,
}

/// `Process-1 (spawn) / MainThread`: where a launch was made.
fn place_of(launch: &Launch) -> String {
    let process = launch.process.as_deref().unwrap_or("main");
    let thread = launch.thread.as_deref().unwrap_or("MainThread");
    format!("{process} / {thread}")
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
        inductor_shared: launch.inductor.as_ref().and_then(|i| i.shared),
        inductor_choice: launch.inductor.as_ref().and_then(|i| i.choice.clone()),
        inductor_rescaled: launch.inductor.as_ref().and_then(|i| i.rescaled.clone()),
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
            inductor: launch.inductor.as_ref().map(|i| i.kernel.clone()),
            places: vec![place_of(launch)],
            assumed: launch.assumed.clone(),
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
            for place in launch.places {
                if !l.places.contains(&place) {
                    l.places.push(place);
                }
            }
            if l.assumed.is_none() {
                l.assumed = launch.assumed;
            }
        } else {
            merged_index.insert(key, merged.len());
            merged.push((launch, count));
        }
    }
    // Which worker of a pool made a launch is the scheduler's choice: the places are listed in
    // order, so two runs list them alike.
    for (launch, _) in &mut merged {
        launch.places.sort();
    }
    planned.launches = merged;
    planned
}

/// An argument as the sweep holds it: its type, its value, its alignment, or its tensor
/// descriptor. A bare type reads `none` in any case as the `none` type, as a spec file's does.
fn arg_template(arg: &CapturedArg) -> ArgTemplate {
    if arg.ty == DESCRIPTOR_TYPE {
        return ArgTemplate {
            type_template: DESCRIPTOR_TYPE.to_owned(),
            value: None,
            aligned: true,
            descriptor: Some(Descriptor {
                dtype: arg.dtype.clone().unwrap_or_default(),
                shape: arg.shape.clone().unwrap_or_default(),
                strides: arg.strides.clone().unwrap_or_default(),
                block_shape: arg.block_shape.clone().unwrap_or_default(),
            }),
        };
    }
    let value = arg.value.as_ref().and_then(spec_scalar);
    let aligned = arg.aligned != Some(false);
    let bare = value.is_none() && aligned;
    ArgTemplate {
        type_template: if bare && arg.ty.eq_ignore_ascii_case(NONE_TYPE) {
            NONE_TYPE.to_owned()
        } else {
            arg.ty.clone()
        },
        value,
        aligned,
        descriptor: None,
    }
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

/// The sweep of `compiles` (one kernel's, with the same arguments and scope) for `device`: what
/// every compile shares is fixed, what differs is an axis (so it sweeps at least the captured
/// configs and is ready to sweep more), checked as a spec file's parts are. `scope_file` is the
/// kernel's scope file. The capture compiles it; `--emit-spec` writes it.
pub fn sweep_of(
    compiles: &[&Compile],
    device: &str,
    scope_file: &Path,
) -> Result<Sweep, SpecError> {
    let function = compiles
        .first()
        .map(|c| c.kernel.function.clone())
        .unwrap_or_default();
    let args = compiles.first().map_or_else(Vec::new, |first| {
        first
            .args
            .iter()
            .map(|(name, arg)| (name.clone(), arg_template(arg)))
            .collect()
    });
    // One value in every compile is fixed; two or more are an axis of them in first-seen order.
    let mut constexprs = Vec::new();
    let mut options = Vec::new();
    let mut axes = Vec::new();
    let mut split = |values: &dyn Fn(&Compile) -> Option<&Value>,
                     name: &str,
                     fixed: &mut Vec<(String, Value)>| {
        let mut seen: Vec<Value> = Vec::new();
        for compile in compiles {
            if let Some(v) = values(compile).and_then(spec_scalar)
                && !seen.contains(&v)
            {
                seen.push(v);
            }
        }
        match seen.len() {
            0 => {}
            1 => fixed.push((name.to_owned(), seen.remove(0))),
            _ => axes.push(Axis {
                name: name.to_owned(),
                values: seen,
            }),
        }
    };
    if let Some(first) = compiles.first() {
        for name in first.constexprs.keys() {
            split(&|c| c.constexprs.get(name), name, &mut constexprs);
        }
    }
    let mut option_names: Vec<&String> = compiles.iter().flat_map(|c| c.options.keys()).collect();
    option_names.sort();
    option_names.dedup();
    for name in option_names {
        split(&|c| c.options.get(name), name, &mut options);
    }
    // The scope file defines the kernel from its own source with the values its names had at
    // the launch; it imports only Triton, so the engine's import-time code (which reads the
    // device) never runs outside the emulation.
    Sweep::of_parts(SweepParts {
        origin: SweepOrigin::Captured {
            function: function.clone(),
            device: device.to_owned(),
        },
        kernel_file: scope_file.to_path_buf(),
        function,
        source: KernelSource {
            load: LoadMode::Import,
            ..KernelSource::default()
        },
        args,
        constexprs,
        options,
        axes,
        targets: vec![device.to_owned()],
    })
}

/// Where a compile's kernel was defined, for a spec's header: `file line N`, one line.
pub fn defined_at(compile: &Compile) -> String {
    format!(
        "{} line {}",
        crate::escape::control(&compile.kernel.file),
        compile.kernel.line
    )
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
