//! A capture's report drawn for a terminal and as Markdown: per target, one row per launch (the
//! kernel, where the host code launched it, the config it chose, the bytes, the verdict), then
//! the calls that stopped and the script's errors. Every value that came from the script's
//! process is escaped before it is drawn.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::exporter::Exporter;
use super::markdown::{Markdown, escape as md};
use super::terminal::{Terminal, table};
use crate::escape::control;
use crate::judge::capture::{config_of, crash_count, crashes_by_kernel, file_name};
use crate::judge::selection::{SelectionOutcome, judge_selection, over_count};
use crate::model::capture::{
    CaptureReport, CompileReport, FailureCode, LaunchReport, LaunchVerdict, TargetCapture,
};
use crate::units::{counted, format_count};
use crate::vocab::describe_config;

/// Per kernel, the constexprs whose values differ between its compiles (on any target): with the
/// options, what a row shows of a config.
fn varying(report: &CaptureReport) -> BTreeMap<String, BTreeSet<String>> {
    let mut values: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for compile in report.targets.iter().flat_map(|t| &t.compiles) {
        for (key, value) in &compile.constexprs {
            values
                .entry((compile.kernel.function.clone(), key.clone()))
                .or_default()
                .insert(value.to_string());
        }
    }
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for ((kernel, key), seen) in values {
        let entry = out.entry(kernel).or_default();
        if seen.len() > 1 {
            entry.insert(key);
        }
    }
    out
}

/// A compile's config as a row shows it: the kernel's varying constexprs, then its options.
fn shown_config(compile: &CompileReport, varying: &BTreeMap<String, BTreeSet<String>>) -> String {
    let keys = varying.get(&compile.kernel.function);
    // What varies between the kernel's compiles, and its tile sizes (`BLOCK_*`, `TILE_*`), which
    // a reader looks for first.
    let tile = |k: &str| {
        let upper = k.to_ascii_uppercase();
        upper.starts_with("BLOCK") || upper.starts_with("TILE")
    };
    let mut config: Vec<(String, serde_json::Value)> = compile
        .constexprs
        .iter()
        .filter(|(k, _)| {
            keys.is_some_and(|keys| keys.contains(*k))
                || (tile(k) && keys.is_none_or(BTreeSet::is_empty))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    config.extend(compile.options.iter().map(|(k, v)| (k.clone(), v.clone())));
    if config.is_empty() {
        config = config_of(compile).into_iter().collect();
    }
    describe_config(&config)
}

/// A compile's bytes on `device`, with how far over when over.
fn shown_bytes(compile: &CompileReport, device: &str) -> String {
    match (&compile.result, &compile.error) {
        (Some(r), _) => {
            let Some(bytes) = r.shared_bytes else {
                return serde_json::to_value(r.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
            };
            let over = r
                .verdicts
                .iter()
                .find(|v| v.device == device)
                .and_then(|v| v.over_by);
            match over {
                Some(by) => format!("{} (+{})", format_count(bytes), format_count(by)),
                None => format_count(bytes),
            }
        }
        (None, Some(_)) => "not compiled".to_owned(),
        (None, None) => "-".to_owned(),
    }
}

/// The rows of one target's launches.
fn rows(target: &TargetCapture, varying: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for launch in &target.launches {
        let site = launch.caller.as_ref().map_or_else(
            || "?".to_owned(),
            |s| format!("{}:{}", file_name(&s.file), s.line),
        );
        // Under pytest, the test that made it.
        let site = match (target.tests.is_empty(), launch.calls.as_slice()) {
            (false, [test]) => format!("{site} ({})", test_name(test)),
            (false, [test, more @ ..]) => {
                format!("{site} ({} +{})", test_name(test), more.len())
            }
            _ => site,
        };
        let site = match super::capture_run::places(launch) {
            Some(places) => format!("{site} [{places}]"),
            None => site,
        };
        let mut configs: Vec<String> = Vec::new();
        let mut bytes: Vec<String> = Vec::new();
        let mut sizes: Vec<u64> = Vec::new();
        for &i in &launch.compiles {
            let Some(compile) = target.compiles.get(i) else {
                continue;
            };
            configs.push(shown_config(compile, varying));
            bytes.push(shown_bytes(compile, &target.device.device));
            if let Some(result) = &compile.result {
                sizes.extend(result.shared_bytes);
            }
        }
        let over = over_count(target, launch);
        let selection = launch.inductor.as_ref().and_then(|i| i.choices.as_ref());
        let retry = launch.inductor.as_ref().and_then(|i| i.retry.as_ref());
        let config = match (&launch.autotune, configs.len()) {
            (Some(_), 2) if retry.is_some() => format!(
                "{}, retried at num_stages={}",
                configs[0],
                retry.map_or(1, |r| r.num_stages)
            ),
            (Some(a), _) if selection.is_some() => {
                let fallback = selection
                    .and_then(|c| c.fallback.as_deref())
                    .map_or_else(String::new, |f| format!(" + {f}"));
                format!("max-autotune: {} Triton choices{fallback}", a.configs)
            }
            (Some(a), _) => format!(
                "autotuned: {} of {} configs tried",
                a.tried.max(configs.len() as u64),
                a.configs
            ),
            (None, 1) => configs.remove(0),
            (None, _) => configs.join("; "),
        };
        let shown_bytes = if launch.autotune.is_some() && bytes.len() > 3 {
            // The range of the configs tried, and how many are over.
            let (low, high) = (
                sizes.iter().min().copied().unwrap_or(0),
                sizes.iter().max().copied().unwrap_or(0),
            );
            let over = if over > 0 {
                format!(" ({over} over)")
            } else {
                String::new()
            };
            format!("{} .. {}{over}", format_count(low), format_count(high))
        } else {
            bytes.join(", ")
        };
        let verdict = match (&launch.unsupported, launch.verdict) {
            (Some(why), LaunchVerdict::NotJudged) => format!("not judged: {why}"),
            (_, v) => v.as_str().to_owned(),
        };
        let verdict = match super::capture_run::assumed(launch) {
            Some(assumed) => format!("{verdict} ({assumed})"),
            None => verdict,
        };
        let count = if launch.count > 1 {
            format!("{} x{}", launch.kernel.function, launch.count)
        } else {
            launch.kernel.function.clone()
        };
        rows.push(
            [count, site, config, shown_bytes, verdict]
                .into_iter()
                .map(|c| control(&c).into_owned())
                .collect(),
        );
    }
    rows
}

/// A pytest node id as a row shows it: the test, without its file (the row has the line).
fn test_name(nodeid: &str) -> &str {
    nodeid.rsplit("::").next().unwrap_or(nodeid)
}

fn heading(target: &TargetCapture) -> String {
    let name = target
        .emulated
        .name
        .as_deref()
        .unwrap_or("no reported name");
    format!(
        "{} ({}, {} bytes per block): {}, {}, {}",
        target.device.device,
        name,
        format_count(u64::from(target.emulated.smem_per_block_optin)),
        counted(
            target.launches.iter().map(|l| l.count).sum::<u64>(),
            "launch",
            "launches"
        ),
        counted(target.stopped.len() as u64, "stop", "stops"),
        counted(target.failures.len() as u64, "failure", "failures")
    )
}

/// For a crashing kernel `torch.compile` generated: which kernel, and how its compile fails.
fn inductor_note(launch: &LaunchReport, out: &mut String, prefix: &str) {
    let (Some(inductor), true) = (&launch.inductor, launch.verdict.crashes()) else {
        return;
    };
    let fails = inductor.no_valid_configs.as_deref().map_or_else(
        || "torch.compile fails here".to_owned(),
        |why| format!("torch.compile fails here with {why}"),
    );
    // The module's name (the run's Inductor cache is gone; its text is in the JSON report's
    // scopes).
    let module = inductor.source.rsplit('/').next().unwrap_or_default();
    let _ = writeln!(
        out,
        "{prefix}{} is torch.compile's {} kernel (generated module {}): {}",
        control(&inductor.kernel),
        control(&inductor.kind),
        control(module),
        control(&fails)
    );
}

/// For a kernel torch retried at `num_stages=1` (none of its configs loaded): whether the retry
/// rescues it on the device.
fn retry_note(target: &TargetCapture, launch: &LaunchReport, out: &mut String, prefix: &str) {
    let Some(retry) = launch
        .inductor
        .as_ref()
        .filter(|i| i.choices.is_none())
        .and_then(|i| i.retry.as_ref())
    else {
        // A selection's retries are its note's.
        return;
    };
    let device = &target.device.device;
    let compiles: Vec<&CompileReport> = launch
        .compiles
        .iter()
        .filter_map(|&i| target.compiles.get(i))
        .collect();
    let (Some(first), Some(last)) = (compiles.first(), compiles.last()) else {
        return;
    };
    let outcome = if launch.verdict.crashes() {
        "which does not fit either: torch.compile fails here"
    } else {
        "which fits: the kernel runs, without software pipelining"
    };
    let _ = writeln!(
        out,
        "{prefix}{}: Inductor's config does not fit on {} ({}); torch retries it at num_stages={} ({}), {outcome}",
        control(&crate::judge::capture::launch_text(launch)),
        control(device),
        control(&shown_bytes(first, device)),
        retry.num_stages,
        control(&shown_bytes(last, device)),
    );
}

/// For a reduction whose configs Inductor extends once they are loaded: each config it adds (R
/// blocks halved because the config's registers leave too few resident blocks for its grid),
/// judged beside the configs it listed.
fn rescale_note(target: &TargetCapture, launch: &LaunchReport, out: &mut String, prefix: &str) {
    let added: Vec<String> = launch
        .compiles
        .iter()
        .filter_map(|&i| target.compiles.get(i))
        .filter_map(|compile| {
            let rescale = compile.inductor_rescaled.as_ref()?;
            let tiles: Vec<(String, serde_json::Value)> = compile
                .constexprs
                .iter()
                .filter(|(k, _)| k.ends_with("BLOCK"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .chain(
                    compile
                        .options
                        .iter()
                        .filter(|(k, _)| *k == "num_warps")
                        .map(|(k, v)| (k.clone(), v.clone())),
                )
                .collect();
            let from: Vec<String> = rescale
                .from
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let registers = rescale
                .registers
                .map_or_else(String::new, |r| format!(", {r} registers per thread"));
            Some(format!(
                "{} (from {}{registers}): {}",
                describe_config(&tiles),
                from.join(" "),
                shown_bytes(compile, &target.device.device)
            ))
        })
        .collect();
    if added.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "{prefix}{}: once its configs are loaded, Inductor adds {} with R blocks halved for \
         registers (each judged beside the others): {}",
        control(&crate::judge::capture::launch_text(launch)),
        counted(added.len() as u64, "config", "configs"),
        control(&added.join("; "))
    );
}

/// A template choice's config: its tiles (`BLOCK_*`, `GROUP_*`), then its warps and stages.
fn choice_config(compile: &CompileReport) -> String {
    if let Some(description) = &compile.inductor_choice {
        // Inductor's words, without the accumulator type and flags every choice shares.
        return description
            .split(", ")
            .filter(|part| {
                let key = part.split('=').next().unwrap_or_default();
                key.starts_with("BLOCK") || key.starts_with("GROUP") || key.starts_with("num_")
            })
            .collect::<Vec<_>>()
            .join(" ");
    }
    let mut config: Vec<(String, serde_json::Value)> = compile
        .constexprs
        .iter()
        .filter(|(k, _)| k.starts_with("BLOCK") || k.starts_with("GROUP"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    config.extend(compile.options.iter().map(|(k, v)| (k.clone(), v.clone())));
    describe_config(&config)
}

/// For a max-autotune selection with choices over the budget: how many fit, the ones the
/// autotuner skips (by their config), and what runs where none fits.
fn selection_note(target: &TargetCapture, launch: &LaunchReport, out: &mut String, prefix: &str) {
    let Some(choices) = launch.inductor.as_ref().and_then(|i| i.choices.as_ref()) else {
        return;
    };
    let device = &target.device.device;
    let Some(judged) = judge_selection(target, launch) else {
        return;
    };
    let over: Vec<String> = judged
        .over
        .iter()
        .map(|first| format!("{} ({})", choice_config(first), shown_bytes(first, device)))
        .collect();
    let rescued: Vec<String> = judged
        .rescued
        .iter()
        .map(|(first, retry)| {
            format!(
                "{} ({} -> {})",
                choice_config(first),
                shown_bytes(first, device),
                shown_bytes(retry, device)
            )
        })
        .collect();
    let (fit, total) = (judged.fit, judged.total);
    let op = choices.op.as_deref().unwrap_or("template");
    let then = match &judged.outcome {
        SelectionOutcome::Fallback(fallback) => {
            format!("; no Triton choice fits: {fallback} runs instead")
        }
        SelectionOutcome::Fails => {
            "; no choice fits and there is no ATen fallback: the compile fails".to_owned()
        }
        SelectionOutcome::Chooses => String::new(),
    };
    let site = launch.caller.as_ref().map_or_else(String::new, |s| {
        format!(
            " at {}:{}",
            crate::judge::capture::file_name(&s.file),
            s.line
        )
    });
    let skips = if over.is_empty() {
        String::new()
    } else {
        format!("; the autotuner skips {}", over.join("; "))
    };
    let retried = if rescued.is_empty() {
        String::new()
    } else {
        format!(
            "; torch retries {} at num_stages=1, where {}: {}",
            if rescued.len() == 1 {
                "one"
            } else {
                "the rest"
            },
            if rescued.len() == 1 {
                "it fits"
            } else {
                "they fit"
            },
            rescued.join("; ")
        )
    };
    let _ = writeln!(
        out,
        "{prefix}max-autotune's {}{} on {}: {fit} of {total} Triton choices fit{}{}{} (the capture takes the first choice that fits where the device takes the fastest)",
        control(op),
        control(&site),
        control(device),
        control(&retried),
        control(&skips),
        control(&then)
    );
}

fn notes(target: &TargetCapture, out: &mut String, prefix: &str) {
    super::capture_run::notes(target, out, prefix);
    for launch in &target.launches {
        inductor_note(launch, out, prefix);
        retry_note(target, launch, out, prefix);
        rescale_note(target, launch, out, prefix);
        selection_note(target, launch, out, prefix);
        let Some(fix) = &launch.fix else { continue };
        let fits: Vec<String> = fix
            .fits
            .iter()
            .map(|f| {
                format!(
                    "{} ({} bytes)",
                    f.changes.join(", "),
                    format_count(f.shared_bytes)
                )
            })
            .collect();
        if fix.fits.is_empty() {
            let _ = writeln!(
                out,
                "{prefix}no fix for {} on {}: {}",
                control(&crate::judge::capture::launch_text(launch)),
                control(&target.device.device),
                control(&fix.pass)
            );
            continue;
        }
        let _ = writeln!(
            out,
            "{prefix}fix for {}: {}; fits on {}: {}",
            control(&crate::judge::capture::launch_text(launch)),
            control(&fix.pass),
            control(&target.device.device),
            control(&fits.join("; "))
        );
    }
    let mut errors = target.errors.iter();
    for failure in &target.failures {
        let _ = writeln!(
            out,
            "{prefix}FAILED ({}): {}",
            failure.code.as_str(),
            control(&failure.message)
        );
        if failure.code != FailureCode::ScriptError {
            continue;
        }
        // The traceback's last frames, the user's file and line among them.
        let Some(error) = errors.next() else { continue };
        let frames: Vec<&str> = error
            .traceback
            .lines()
            .filter(|l| l.trim_start().starts_with("File "))
            .collect();
        for frame in frames.iter().rev().take(3).rev() {
            let _ = writeln!(out, "{prefix}  {}", control(frame.trim()));
        }
    }
    for stop in &target.stopped {
        match (&stop.file, stop.line) {
            (Some(f), Some(l)) => {
                let place = format!("{}:{l}", file_name(f));
                let _ = writeln!(
                    out,
                    "{prefix}stopped at {}: {}",
                    control(&place),
                    control(&stop.reason)
                );
            }
            // A stand-in tool the script ran as a subprocess: no line of the script's own.
            _ => {
                let _ = writeln!(
                    out,
                    "{prefix}stopped in a subprocess: {}",
                    control(&stop.reason)
                );
            }
        }
    }
    for compile in &target.compiles {
        if let Some(error) = &compile.error {
            let _ = writeln!(
                out,
                "{prefix}{} not compiled: {}",
                control(&compile.kernel.function),
                control(error)
            );
        }
    }
}

const HEADER: [&str; 5] = ["kernel", "launched at", "config", "shared bytes", "verdict"];

/// Per kernel, the devices where a launch of it would crash the engine.
fn misses(report: &CaptureReport) -> Vec<String> {
    crashes_by_kernel(report)
        .into_iter()
        .map(|(kernel, devices)| format!("{kernel} would miss {}", devices.join(", ")))
        .collect()
}

fn summary(report: &CaptureReport) -> String {
    let launches: Vec<&LaunchReport> = report.targets.iter().flat_map(|t| &t.launches).collect();
    let failed = report
        .targets
        .iter()
        .filter(|t| !t.failures.is_empty())
        .count();
    format!(
        "{} captured on {} ({}); {} would crash the engine; {} failed{}",
        counted(
            launches.iter().map(|l| l.count).sum::<u64>(),
            "launch",
            "launches"
        ),
        counted(report.targets.len() as u64, "target", "targets"),
        super::capture_run::summary_counts(&report.targets),
        crash_count(report),
        counted(failed as u64, "target", "targets"),
        if report.incomplete {
            "; interrupted: the report is incomplete"
        } else {
            ""
        }
    )
}

impl Exporter<CaptureReport> for Terminal {
    fn export(&self, report: &CaptureReport) -> String {
        let varying = varying(report);
        let mut out = format!(
            "tilefit capture: {} (Triton {})\n",
            control(&report.script),
            control(&report.triton_label())
        );
        for target in &report.targets {
            let _ = writeln!(out, "\n{}", control(&heading(target)));
            if !target.launches.is_empty() {
                out.push_str(&table(&HEADER, &rows(target, &varying), &[3], "  "));
            }
            notes(target, &mut out, "  ");
        }
        let _ = writeln!(out);
        for line in misses(report) {
            let _ = writeln!(out, "{}", control(&line));
        }
        let _ = writeln!(out, "{}", summary(report));
        out
    }
}

impl Exporter<CaptureReport> for Markdown {
    fn export(&self, report: &CaptureReport) -> String {
        let varying = varying(report);
        let mut out = format!(
            "## tilefit capture: `{}` (Triton {})\n",
            md(&report.script),
            md(&report.triton_label())
        );
        for target in &report.targets {
            let _ = writeln!(out, "\n### {}\n", md(&heading(target)));
            if !target.launches.is_empty() {
                let _ = writeln!(out, "| {} |", HEADER.join(" | "));
                let _ = writeln!(out, "|{}", "---|".repeat(HEADER.len()));
                for row in rows(target, &varying) {
                    let cells: Vec<String> = row.iter().map(|c| md(c)).collect();
                    let _ = writeln!(out, "| {} |", cells.join(" | "));
                }
            }
            let mut text = String::new();
            notes(target, &mut text, "- ");
            // One note a line: a value's newline is an escape inside its line, never a line.
            for line in text.lines() {
                let _ = writeln!(out, "{}", md(line));
            }
            out.push_str(&super::capture_run::failing_tests_markdown(target, &|t| {
                md(t)
            }));
        }
        let _ = writeln!(out);
        for line in misses(report) {
            let _ = writeln!(out, "- {}", md(&line));
        }
        let _ = writeln!(out, "\n{}", summary(report));
        out
    }
}
