//! `tilefit probe SPEC.toml`: the mode resolved from the flags, then one library call (a run, a
//! version matrix, a shard or a job dump) with progress on stderr; the report printed and gated.

use anyhow::Context as _;
use tilefit_core::compile::Event;
use tilefit_core::input::spec;
use tilefit_core::model::shard::Invocation;
use tilefit_core::run::{fix_files, fleet, matrix, probe, toolchains};

use crate::cli::ProbeArgs;
use crate::emit;
use crate::progress::Progress;
use crate::settings::{self, ProbeMode};

pub fn run(args: &ProbeArgs) -> anyhow::Result<u8> {
    let mode = ProbeMode::of(args)?;
    let mut spec = spec::load(&args.spec)?;
    let targets = fleet::of_spec(&spec, &args.targets)?;
    let settings = settings::from_compile_args(&args.compile, args.worker_script.clone())?;
    let progress = Progress::new();
    let mut on_note = |line: String| progress.note(&line);
    if let ProbeMode::Matrix(versions) = &mode {
        return run_matrix(args, (&spec, &targets), versions, &settings, &progress);
    }
    let wanted = settings::wanted(&args.compile.python);
    let toolchain = toolchains::select(&wanted, spec.triton.as_deref(), &mut on_note)?;
    spec.resolve_module(&toolchain.python)?;
    let mut on_event = |event: Event| {
        progress.event_noting_plans(event, &toolchain.triton_version, settings.jobs);
    };
    match mode {
        ProbeMode::DumpJobs(path) => {
            let jobs = probe::plan(&spec, &targets, &toolchain, &settings)?;
            std::fs::write(&path, serde_json::to_string_pretty(&jobs)? + "\n")
                .with_context(|| format!("writing `{}`", path.display()))?;
            let note = format!("tilefit: wrote {} jobs to {}", jobs.len(), path.display());
            crate::output::note(&note);
            Ok(crate::exit_codes::OK)
        }
        ProbeMode::Shard(shard) => {
            let invocation = Invocation {
                spec: args.spec.display().to_string(),
                targets: args.targets.clone(),
                full_compile: settings.full_compile,
                read_resources: settings.read_resources,
            };
            let written = probe::probe_shard(
                &spec,
                invocation,
                &targets,
                &toolchain,
                &settings,
                shard,
                &mut on_event,
            );
            progress.finish();
            emit::emit_shard(&written?, &args.output)
        }
        ProbeMode::Single | ProbeMode::Matrix(_) => {
            let mut report = probe::probe(&spec, &targets, &toolchain, &settings, &mut on_event)?;
            if args.triton_from_files {
                let python = args.compile.python.python.as_deref();
                matrix::judge_under_tuned(
                    &mut report,
                    &spec,
                    &targets,
                    python,
                    &settings,
                    &mut on_note,
                    &mut on_event,
                );
            }
            // Files first: an interrupt while they are made marks the report incomplete.
            let fixed = match &args.emit_files {
                Some(dir) if report.stats.complete => {
                    let fixed = fix_files::fix_files(
                        &spec,
                        &report,
                        &targets,
                        &toolchain,
                        &settings,
                        &mut on_note,
                        &mut on_event,
                    );
                    Some((fixed, dir.as_path()))
                }
                _ => None,
            };
            progress.finish();
            emit::finish_probe(&mut report, fixed, args)
        }
    }
}

/// A version matrix: every version judged, each gated as its own run would be.
fn run_matrix(
    args: &ProbeArgs,
    (spec, targets): (&spec::ProbeSpec, &[tilefit_core::device::TargetDevice]),
    versions: &[String],
    settings: &tilefit_core::compile::Settings,
    progress: &Progress,
) -> anyhow::Result<u8> {
    let mut on_note = |line: String| progress.note(&line);
    let python = args.compile.python.python.as_deref();
    let mut on_event = |event: Event| progress.event(event);
    let report = matrix::probe_matrix(
        spec,
        targets,
        versions,
        python,
        settings,
        &mut on_note,
        &mut on_event,
    );
    progress.finish();
    let report = report?;
    emit::emit_without_html(&report, &args.output)?;
    emit::finish_matrix(&report, &args.output)
}
