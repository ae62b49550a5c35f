//! The fix for a captured launch over budget: the nearest configs to try (the same ranking as the
//! config files': fewer stages first, then a smaller tile along the largest edge), each as a
//! compile of the same kernel, and the words of the way out once the compiles are judged.

use std::collections::BTreeMap;

use serde_json::Value;

use super::files::{Candidate, candidates_over, launch_tile_keys, within_warps};
use crate::input::capture::InductorKernel;
use crate::model::capture::{CompileReport, FixChoice, LaunchFix, LaunchReport, TargetCapture};
use crate::plan::capture::Compile;

/// The most candidates compiled per launch.
pub const MAX_CANDIDATES: usize = 12;

/// The most fitting configs a fix names.
pub const MAX_FITS: usize = 3;

/// Triton's default `num_stages` per backend, where a launch passes none (`CUDAOptions`: 3,
/// `HIPOptions`: 2).
fn default_stages(backend: &str) -> u64 {
    if backend == "hip" { 2 } else { 3 }
}

/// The candidates nearest to `compile`, each as the compile it makes; with a `num_warps` over
/// `max_warps` (the device's threads per block over its warp size), each lowers it.
pub fn candidates(
    compile: &Compile,
    backend: &str,
    max_warps: Option<u64>,
) -> Vec<(Candidate, Compile)> {
    let mut config: BTreeMap<String, Value> = compile.constexprs.clone();
    config.extend(compile.options.clone());
    config
        .entry("num_stages".to_owned())
        .or_insert_with(|| Value::from(default_stages(backend)));
    let tiles = launch_tile_keys(&compile.constexprs);
    let found = candidates_over(&config, &tiles);
    within_warps(&config, found, max_warps)
        .into_iter()
        .take(MAX_CANDIDATES)
        .map(|candidate| {
            let mut next = compile.clone();
            for (key, value) in &candidate.entry {
                if next.constexprs.contains_key(key) {
                    next.constexprs.insert(key.clone(), value.clone());
                } else {
                    next.options.insert(key.clone(), value.clone());
                }
            }
            (candidate, next)
        })
        .collect()
}

/// The candidates nearest to a template kernel's `compile` whose tiles are constants of its
/// generated source (`tiles`, Inductor's `BLOCK_M : tl.constexpr = 64`): as [`candidates`], with
/// those tiles among the keys a candidate may halve; each with the tiles it changes, which
/// [`edit_tiles`] writes into the kernel's scope.
pub fn template_candidates(
    compile: &Compile,
    backend: &str,
    tiles: &BTreeMap<String, u64>,
    max_warps: Option<u64>,
) -> Vec<(Candidate, Compile, BTreeMap<String, u64>)> {
    let mut config: BTreeMap<String, Value> = compile.constexprs.clone();
    config.extend(compile.options.clone());
    config
        .entry("num_stages".to_owned())
        .or_insert_with(|| Value::from(default_stages(backend)));
    for (key, value) in tiles {
        config.insert(key.clone(), Value::from(*value));
    }
    let tile_keys = launch_tile_keys(&config);
    let paired = paired_tile_candidates(&config);
    let candidates = if paired.is_empty() {
        candidates_over(&config, &tile_keys)
    } else {
        paired
    };
    within_warps(&config, candidates, max_warps)
        .into_iter()
        .take(MAX_CANDIDATES)
        .map(|candidate| {
            let mut next = compile.clone();
            let mut edits = BTreeMap::new();
            for (key, value) in &candidate.entry {
                if let Some(old) = tiles.get(key) {
                    if let Some(new) = value.as_u64().filter(|new| new != old) {
                        edits.insert(key.clone(), new);
                    }
                } else if next.constexprs.contains_key(key) {
                    next.constexprs.insert(key.clone(), value.clone());
                } else {
                    next.options.insert(key.clone(), value.clone());
                }
            }
            (candidate, next, edits)
        })
        .collect()
}

/// The smallest tile a candidate takes.
const MIN_PAIRED_TILE: u64 = 16;

/// Flex attention's backward tiles come in two pairs that must keep their ratios (its template
/// computes dK/dV over `BLOCK_N1` keys in steps of `BLOCK_M1` queries, and dQ over `BLOCK_M2`
/// queries in steps of `BLOCK_N2` keys: each the outer tile a multiple of the inner). Its
/// candidates, fewest changes first: the two inner tiles halved, then all four, then the
/// inner ones again; each at every stage count from the kernel's own down. None for a kernel
/// without those four tiles.
fn paired_tile_candidates(config: &BTreeMap<String, Value>) -> Vec<Candidate> {
    let get = |k: &str| config.get(k).and_then(Value::as_u64);
    let (Some(m1), Some(n1), Some(m2), Some(n2)) = (
        get("BLOCK_M1"),
        get("BLOCK_N1"),
        get("BLOCK_M2"),
        get("BLOCK_N2"),
    ) else {
        return Vec::new();
    };
    let stages = get("num_stages").unwrap_or(1).max(1);
    let shapes = [
        (m1 / 2, n1, m2, n2 / 2),
        (m1 / 2, n1 / 2, m2 / 2, n2 / 2),
        (m1 / 4, n1 / 2, m2 / 2, n2 / 4),
        (m1 / 4, n1 / 4, m2 / 4, n2 / 4),
    ];
    let mut out = Vec::new();
    for (a, b, c, d) in shapes {
        if [a, b, c, d].iter().any(|&t| t < MIN_PAIRED_TILE) || b % a != 0 || c % d != 0 {
            continue;
        }
        for s in (1..=stages).rev() {
            let mut entry = config.clone();
            let mut changes = Vec::new();
            for (key, old, new) in [
                ("BLOCK_M1", m1, a),
                ("BLOCK_N1", n1, b),
                ("BLOCK_M2", m2, c),
                ("BLOCK_N2", n2, d),
                ("num_stages", stages, s),
            ] {
                if old != new {
                    entry.insert(key.to_owned(), Value::from(new));
                    changes.push(format!("{key} {old} -> {new}"));
                }
            }
            out.push(Candidate { entry, changes });
        }
    }
    out
}

/// A kernel's scope text with its source's tile constants (`tiles`, as captured) set to
/// `edits`; None where one is not found there as Inductor writes it, or a name is not a tile's
/// (`BLOCK_` and capitals, digits, underscores: the name goes into code that is compiled).
pub fn edit_tiles(
    scope: &str,
    tiles: &BTreeMap<String, u64>,
    edits: &BTreeMap<String, u64>,
) -> Option<String> {
    let mut text = scope.to_owned();
    for (key, new) in edits {
        let tile_name = key.starts_with("BLOCK_")
            && key
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if !tile_name {
            return None;
        }
        let old = tiles.get(key)?;
        // The source is a Python string literal in the scope: its newlines are `\n`.
        let from = format!(" {key} : tl.constexpr = {old}\\n");
        if !text.contains(&from) {
            return None;
        }
        text = text.replace(&from, &format!(" {key} : tl.constexpr = {new}\\n"));
    }
    Some(text)
}

/// A JSON value as a Python literal (`True`, `None`, `'bf16'`).
fn python(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::String(s) => crate::escape::python_str(s),
        other => other.to_string(),
    }
}

fn words(config: &BTreeMap<String, Value>) -> String {
    config
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The way out, from the candidates' bytes on the device (`None`: it did not compile or does not
/// fit): the first [`MAX_FITS`] that fit, and what to pass; when none fits, says so.
pub fn fix_of(
    autotuned: Option<&[String]>,
    inductor: Option<&InductorKernel>,
    candidates: &[(Candidate, Compile)],
    fits: &[Option<u64>],
) -> Option<LaunchFix> {
    let chosen: Vec<FixChoice> = candidates
        .iter()
        .zip(fits)
        .filter_map(|((candidate, compile), bytes)| {
            let mut config = compile.constexprs.clone();
            config.extend(compile.options.clone());
            Some(FixChoice {
                changes: candidate.changes.clone(),
                config: words(&config),
                shared_bytes: (*bytes)?,
            })
        })
        .take(MAX_FITS)
        .collect();
    let Some((first_candidate, first_compile)) = candidates
        .iter()
        .zip(fits)
        .find(|(_, b)| b.is_some())
        .map(|(c, _)| c)
    else {
        if let Some(inductor) = inductor.filter(|i| !i.tiles.is_empty()) {
            // A template's tiles are constants of its generated source: tilefit compiles the
            // captured source, so it cannot try smaller ones.
            let tiles: Vec<String> = inductor
                .tiles
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let tried = if candidates.is_empty() {
                "it is at one stage already, and tilefit does not halve these tiles".to_owned()
            } else {
                format!(
                    "none of the {} nearest configs tilefit compiled fits",
                    candidates.len()
                )
            };
            return Some(LaunchFix {
                fits: Vec::new(),
                pass: format!(
                    "no fix compiled for the template's tiles ({}): {tried}; smaller tiles that keep their ratios are the way out (for flex attention's backward, kernel_options with bwd_BLOCK_M1, bwd_BLOCK_N1, bwd_BLOCK_M2, bwd_BLOCK_N2)",
                    tiles.join(" ")
                ),
            });
        }
        return Some(LaunchFix {
            fits: Vec::new(),
            pass: format!(
                "none of the {} nearest configs (fewer stages, then smaller BLOCK_M/N/K tiles) fits: the kernel's tiling itself must change",
                candidates.len()
            ),
        });
    };
    let pass = if let Some(inductor) = inductor {
        inductor_pass(inductor, first_candidate)
    } else if let Some(keys) = autotuned {
        // What a list entry sets (not what a heuristic computes), as Python.
        let kwargs: Vec<String> = first_compile
            .constexprs
            .iter()
            .filter(|(k, _)| keys.is_empty() || keys.contains(k))
            .map(|(k, v)| format!("{}: {}", python(&Value::from(k.clone())), python(v)))
            .collect();
        let options: Vec<String> = first_compile
            .options
            .iter()
            .map(|(k, v)| format!("{k}={}", python(v)))
            .collect();
        format!(
            "add triton.Config({{{}}}, {}) to the autotune list",
            kwargs.join(", "),
            options.join(", ")
        )
    } else {
        let changed: Vec<String> = changed(first_candidate)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("pass {} at the launch", changed.join(", "))
    };
    Some(LaunchFix { fits: chosen, pass })
}

/// The candidates of a crashing launch on its target (`report`), from `base` (its config, or
/// the smallest of its autotuned list), each as the compile it makes; a template Inductor
/// generated sets its tiles as constants of its source, and its candidates with smaller tiles
/// are compiles of an edited copy of its scope, whose text goes into `edited` by digest.
pub fn launch_candidates(
    target_report: &TargetCapture,
    launch: &LaunchReport,
    base: &CompileReport,
    edited: &mut BTreeMap<String, String>,
) -> Vec<(Candidate, Compile)> {
    let target = &target_report.device;
    let backend = target_report.emulated.backend.as_str();
    let compile = Compile {
        kernel: base.kernel.clone(),
        args: base.args.clone(),
        constexprs: base.constexprs.clone(),
        options: base.options.clone(),
        globals: base.globals.clone(),
        inductor_shared: None,
        inductor_choice: None,
        inductor_rescaled: None,
    };
    let tiles = launch
        .inductor
        .as_ref()
        .filter(|i| i.choices.is_none())
        .map(|i| i.tiles.clone())
        .unwrap_or_default();
    let max_warps = target.max_warps();
    if tiles.is_empty() {
        candidates(&compile, backend, max_warps)
    } else {
        let scope = compile
            .kernel
            .scope
            .as_ref()
            .and_then(|d| target_report.scopes.get(d));
        template_candidates(&compile, backend, &tiles, max_warps)
            .into_iter()
            .filter_map(|(candidate, mut next, edits)| {
                if edits.is_empty() {
                    return Some((candidate, next));
                }
                let text = edit_tiles(scope?, &tiles, &edits)?;
                let digest = crate::digest::sha256(text.as_bytes());
                next.kernel.scope = Some(digest.clone());
                edited.insert(digest, text);
                Some((candidate, next))
            })
            .collect()
    }
}

/// The entries a candidate changes (not the ones it keeps).
fn changed(candidate: &Candidate) -> impl Iterator<Item = (&String, &Value)> {
    candidate.entry.iter().filter(|(k, v)| {
        candidate
            .changes
            .iter()
            .any(|c| c.starts_with(&format!("{k} ")))
            && !v.is_null()
    })
}

/// The way out of a kernel `torch.compile` generated, in its own terms: flex attention's
/// template takes its config from `kernel_options` (`BLOCK_M`, `BLOCK_N`, `num_stages`,
/// `num_warps`); the configs of other generated kernels are Inductor's choice for the device,
/// with no option at the call.
fn inductor_pass(inductor: &InductorKernel, candidate: &Candidate) -> String {
    let options: Vec<String> = changed(candidate)
        .map(|(k, v)| format!("{}: {}", python(&Value::from(k.clone())), python(v)))
        .collect();
    if inductor.kind == "template-choice" {
        return format!(
            "no Triton choice of max-autotune's {} fits and it has no ATen fallback: add ATEN to torch._inductor.config.max_autotune_gemm_backends (ATen's kernel runs where no choice fits); Inductor's choices come from its table, not from an option at the call (the nearest that fits: {})",
            inductor
                .choices
                .as_ref()
                .and_then(|c| c.op.as_deref())
                .unwrap_or("template"),
            options.join(", ")
        );
    }
    if inductor.kind == "template" && inductor.kernel.contains("flex_attention") {
        // The whole config, as kernel_options sets it: the template's tiles (the candidate keeps
        // them) and the candidate's warps and stages, each for this kernel alone: a plain key
        // sets the forward and the backward alike (`fwd_`/`bwd_` set one).
        let backward = inductor.kernel.contains("flex_attention_backward");
        let prefix = if backward { "bwd_" } else { "fwd_" };
        let mut all: Vec<String> = inductor
            .tiles
            .iter()
            .map(|(k, v)| {
                let v = candidate.entry.get(k).and_then(Value::as_u64).unwrap_or(*v);
                format!("\"{prefix}{k}\": {v}")
            })
            .collect();
        for key in ["num_stages", "num_warps"] {
            if let Some(value) = candidate.entry.get(key) {
                all.push(format!("\"{prefix}{key}\": {}", python(value)));
            }
        }
        if all.is_empty() {
            all = options;
        }
        format!(
            "pass kernel_options={{{}}} to flex_attention",
            all.join(", ")
        )
    } else {
        format!(
            "torch.compile chose this {} kernel's config for the device; no option at the call sets it (the nearest that fits: {})",
            inductor.kind,
            options.join(", ")
        )
    }
}
