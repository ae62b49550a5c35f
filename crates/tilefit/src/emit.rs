//! Where a report goes, and what it exits with: one list of (format, destination) built from the
//! output flags (hyperfine's `ExportManager`), each drawn by the library's exporters and written
//! here; the gate judged by the library (`judge::gate`) and worded on stderr; the one exit-code
//! policy of probe, replay, merge and report.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use tilefit_core::hint::Hinted;
use tilefit_core::judge::findings::Findings;
use tilefit_core::judge::gate::{Gate, Outcome};
use tilefit_core::model::identity::{Comparison, Subject};
use tilefit_core::model::saved::SavedReport;
use tilefit_core::model::shard::ShardFile;
use tilefit_core::render::{Exporter, GithubAnnotations, Html, Json, Markdown, Terminal};

use crate::cli::{OutputArgs, OutputFormat};
use crate::exit_codes;
use crate::output;

/// A format a report is drawn in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Terminal,
    Markdown,
    Json,
    Html,
}

/// Where a drawn report goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    Stdout,
    File(PathBuf),
    /// Appended (`$GITHUB_STEP_SUMMARY`).
    Append(PathBuf),
}

/// The (format, destination) list of the output flags: JSON to a file or to stdout (`-`, then
/// stdout carries only JSON), HTML to a file, the terminal table or Markdown to stdout, and the
/// Markdown appended to the step summary.
pub fn plan(args: &OutputArgs, html: bool) -> anyhow::Result<Vec<(Format, Destination)>> {
    let mut plan = Vec::new();
    match args.json.as_deref() {
        Some("-") => plan.push((Format::Json, Destination::Stdout)),
        Some(path) => plan.push((Format::Json, Destination::File(path.into()))),
        None => {}
    }
    if let (Some(path), true) = (&args.html, html) {
        plan.push((Format::Html, Destination::File(path.clone())));
    }
    if args.json.as_deref() != Some("-") {
        let format = if args.format() == OutputFormat::Markdown {
            Format::Markdown
        } else {
            Format::Terminal
        };
        plan.push((format, Destination::Stdout));
    }
    if args.summary {
        let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY") else {
            return Err(Hinted::new(
                "`--summary` appends to `$GITHUB_STEP_SUMMARY`, which is not set",
                "use it in a GitHub Actions step, or set GITHUB_STEP_SUMMARY to a file",
            )
            .into());
        };
        plan.push((Format::Markdown, Destination::Append(path.into())));
    }
    Ok(plan)
}

/// Draw `report` in every format of the plan and write each where it goes.
pub fn emit<R>(report: &R, args: &OutputArgs) -> anyhow::Result<()>
where
    Json: Exporter<R>,
    Terminal: Exporter<R>,
    Markdown: Exporter<R>,
    Html: Exporter<R>,
{
    write_all(report, &plan(args, true)?, &|format, report| match format {
        Format::Html => Html.export(report),
        other => draw(other, report),
    })
}

/// [`emit`] for a report without a cliff map (a version matrix: `--html` is refused up front).
pub fn emit_without_html<R>(report: &R, args: &OutputArgs) -> anyhow::Result<()>
where
    Json: Exporter<R>,
    Terminal: Exporter<R>,
    Markdown: Exporter<R>,
{
    write_all(report, &plan(args, false)?, &|format, report| {
        draw(format, report)
    })
}

fn draw<R>(format: Format, report: &R) -> String
where
    Json: Exporter<R>,
    Terminal: Exporter<R>,
    Markdown: Exporter<R>,
{
    match format {
        Format::Json => Json.export(report),
        Format::Markdown => Markdown.export(report),
        Format::Terminal | Format::Html => Terminal.export(report),
    }
}

fn write_all<R>(
    report: &R,
    plan: &[(Format, Destination)],
    draw: &dyn Fn(Format, &R) -> String,
) -> anyhow::Result<()> {
    for (format, destination) in plan {
        let text = draw(*format, report);
        match destination {
            Destination::Stdout => output::print(&text)?,
            Destination::File(path) => {
                tilefit_core::write::write_file(path, &text)?;
                if *format == Format::Html {
                    output::note(&format!(
                        "tilefit: wrote the cliff map to {}",
                        path.display()
                    ));
                }
            }
            Destination::Append(path) => {
                tilefit_core::write::append_file(path, &format!("{text}\n"))?;
            }
        }
    }
    Ok(())
}

/// Write the recommended config per arch (`--emit-configs`): JSON, or Python for an autotuned
/// kernel's pruned lists (`.py`).
pub fn emit_configs(
    report: &tilefit_core::model::probe::ProbeReport,
    path: &Path,
) -> anyhow::Result<()> {
    let table = tilefit_core::device::DeviceTable::builtin()
        .context("loading the embedded device table")?;
    let export = tilefit_core::fix::ConfigExport::from_probe(report, table);
    let python = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("py"));
    let (text, what) = if python {
        let text = export.python().ok_or_else(|| {
            Hinted::new(
                format!(
                    "`{}` asks for Python, which only an autotuned kernel's pruned configs are written as",
                    path.display()
                ),
                "write the recommended configs as JSON: `--emit-configs configs.json`",
            )
        })?;
        (text, "the autotune configs that fit, per arch, as Python")
    } else if export.autotune.is_some() {
        (
            serde_json::to_string_pretty(&export)? + "\n",
            "the recommended configs and the pruned autotune lists per arch and device",
        )
    } else {
        (
            serde_json::to_string_pretty(&export)? + "\n",
            "the recommended configs per arch",
        )
    };
    tilefit_core::write::write_file(path, &text)?;
    output::note(&format!("tilefit: wrote {what} to {}", path.display()));
    Ok(())
}

/// A version matrix's exit code: each version gated as its own run would be; the worst wins (2
/// over 1 over 0).
pub fn finish_matrix(
    report: &tilefit_core::model::matrix::MatrixReport,
    args: &OutputArgs,
) -> anyhow::Result<u8> {
    let gate = gate_of(args)?;
    let mut code = exit_codes::OK;
    for version in &report.versions {
        code = code.max(finish_with(&gate, version, args)?);
    }
    Ok(code)
}

/// The end of a single probe: the report printed (whatever became of the files), the configs
/// and files written, and the exit code: the gate's (with `unreadable-files` on under
/// `--emit-files`, which cannot fix what it could not read), and 2 for a run an interrupt cut
/// short, whatever its cells say.
pub fn finish_probe(
    report: &mut tilefit_core::model::probe::ProbeReport,
    fixed: Option<(
        Result<
            tilefit_core::model::fix_files::FixedFiles,
            tilefit_core::run::fix_files::FixFilesError,
        >,
        &Path,
    )>,
    outputs: &crate::session::probe::ProbeOutputs,
) -> anyhow::Result<u8> {
    use tilefit_core::judge::gate::Rule;
    if let Some((files, _)) = &fixed {
        report.stats.complete &= files.as_ref().is_ok_and(|f| f.complete);
    }
    emit(report, &outputs.output)?;
    // The report is out: a file that cannot be written now is reported and fails the run, and
    // the gate still says its piece.
    let mut written = exit_codes::OK;
    if let Some(path) = &outputs.emit_configs {
        written = written.max(reported(emit_configs(report, path)));
    }
    // `emit_files` says itself when the files were interrupted.
    let emitted = fixed.is_some();
    if let Some((files, dir)) = fixed {
        let files = files.map_err(anyhow::Error::from);
        written = written.max(reported(files.and_then(|files| emit_files(&files, dir))));
    }
    let mut output = outputs.output.clone();
    if outputs.emit_files.is_some() && !output.fail_on.contains(&Rule::UnreadableFiles) {
        output.fail_on.push(Rule::UnreadableFiles);
    }
    let code = finish(report, &output)?.max(written);
    if report.stats.complete {
        return Ok(code);
    }
    output::note(
        "tilefit: the run was interrupted: the report is incomplete (a job an interrupt kept from running says FAILED)",
    );
    if outputs.emit_files.is_some() && !emitted {
        output::note("tilefit: --emit-files was interrupted: no config file was written");
    }
    Ok(code.max(exit_codes::BAD_INPUT_OR_TOOL_FAILURE))
}

/// Write `--emit-files`: the config files, the summary and the provenance, under `dir`, never
/// through a link. An interrupted run writes nothing.
pub fn emit_files(
    fixed: &tilefit_core::model::fix_files::FixedFiles,
    dir: &Path,
) -> anyhow::Result<()> {
    if !fixed.complete {
        output::note(
            "tilefit: --emit-files was interrupted: no config file was written (a file is written only once every entry in it is judged)",
        );
        return Ok(());
    }
    for (name, text) in tilefit_core::render::fix_files_outputs(fixed) {
        tilefit_core::write::write_below(dir, &name, &text)?;
    }
    let patched = fixed.files.iter().filter(|f| f.kind == "patched").count();
    output::note(&format!(
        "tilefit: wrote {patched} patched and {} new config files, SUMMARY.md and tilefit-provenance.json to {} (each entry read back as the engine reads it and judged again: {} entries)",
        fixed.files.len() - patched,
        dir.display(),
        fixed.rejudged
    ));
    // Names and reasons hold what the folder named: each one line.
    let line = |text: &str| tilefit_core::escape::control(text).into_owned();
    for (device, why) in &fixed.skipped {
        output::note(&format!(
            "tilefit: no config files for {}: {}",
            line(device),
            line(why)
        ));
    }
    for (file, why) in &fixed.not_judged {
        output::note(&format!(
            "tilefit: not judged: {}: {}",
            line(file),
            line(why)
        ));
    }
    Ok(())
}

/// The gate of `--fail-on`, `--shipped` and `--baseline`, with the files read.
pub fn gate_of(args: &OutputArgs) -> anyhow::Result<Gate> {
    let shipped = match &args.shipped {
        None => None,
        Some(path) => Some(tilefit_core::fix::ConfigExport::read(path)?),
    };
    let baseline = match &args.baseline {
        None => None,
        Some(path) => Some(Box::<dyn Findings>::from(SavedReport::read(path)?)),
    };
    Ok(Gate {
        rules: args.fail_on.clone(),
        shipped,
        baseline,
    })
}

/// Whether two reports are about the same thing (`--baseline`, `diff`): an edited kernel is a
/// note on stderr; another subject is `Err` with what differs.
pub fn same_subject(old: &Subject, new: &Subject) -> Result<(), String> {
    match old.compare(new) {
        Comparison::Same => Ok(()),
        Comparison::Edited(note) => {
            output::note(&format!("tilefit: note: {note}"));
            Ok(())
        }
        Comparison::Different(what) => Err(what),
    }
}

/// The one exit-code policy of probe, replay, merge and report: FAILED cells (worker faults, an
/// interrupt) are exit 2 whatever the gate says, then the gate's findings exit 1. A saved report
/// read back exits as the run that wrote it did. Under `--output-format github` the findings are
/// also annotations.
pub fn finish(report: &dyn Findings, args: &OutputArgs) -> anyhow::Result<u8> {
    finish_with(&gate_of(args)?, report, args)
}

/// [`finish`] with the gate's files already read (a version matrix gates each version with one
/// gate).
pub fn finish_with(gate: &Gate, report: &dyn Findings, args: &OutputArgs) -> anyhow::Result<u8> {
    if let (Some(old), Some(path)) = (&gate.baseline, &args.baseline) {
        same_subject(&old.subject(), &report.subject()).map_err(|what| {
            Hinted::new(
                format!(
                    "`--baseline {}` is not a report of what this run judged: {what}",
                    path.display()
                ),
                "pass the report a run of the same spec (or the same caches) saved with `--json`",
            )
        })?;
    }
    if args.format() == OutputFormat::Github {
        let roots = [
            std::env::var_os("GITHUB_WORKSPACE").map(PathBuf::from),
            std::env::current_dir().ok(),
        ];
        let annotations = GithubAnnotations {
            roots: roots.into_iter().flatten().collect(),
        };
        let text = annotations.export(&gate.annotated(report));
        if !text.is_empty() {
            // Every value in them is escaped by the exporter with GitHub's own rules.
            output::print_raw(&text)?;
        }
    }
    Ok(exit_code(&gate.judge(report)))
}

fn exit_code(outcome: &Outcome) -> u8 {
    if outcome.known > 0 {
        output::note(&format!(
            "tilefit: {} findings are in the baseline report and do not fail the gate",
            outcome.known
        ));
    }
    if let Some(summary) = outcome.summary() {
        output::note(&format!("tilefit: {summary}"));
    }
    let (failed, total) = outcome.failed_jobs;
    if failed > 0 {
        output::note(&format!(
            "tilefit: {failed} of {total} jobs failed (worker faults, an interrupt, or a shipped kernel that could not be read, listed under Skipped): nothing was judged there"
        ));
        return exit_codes::BAD_INPUT_OR_TOOL_FAILURE;
    }
    if outcome.failed() {
        exit_codes::GATE_FAILED
    } else {
        exit_codes::OK
    }
}

/// An output written after the report: its error, if any, shown as a failed command's is
/// (`error:`, its causes, its hint) and turned into the exit code of a tool failure.
fn reported(result: anyhow::Result<()>) -> u8 {
    match result {
        Ok(()) => exit_codes::OK,
        Err(error) => {
            crate::failure::report(&error);
            exit_codes::BAD_INPUT_OR_TOOL_FAILURE
        }
    }
}

/// `--emit-spec DIR`: the probe specs a capture's launches make, written below `DIR`, and a note.
/// Called once the report is out; a file that cannot be written is reported and the others are
/// written: the exit code says whether all were.
pub fn emit_specs<E>(specs: Result<Vec<(String, String)>, E>, dir: &std::path::Path) -> u8
where
    E: std::error::Error + Send + Sync + 'static,
{
    let specs = match specs {
        Ok(specs) => specs,
        Err(e) => {
            return reported(Err(anyhow::Error::from(e).context(format!(
                "--emit-spec: the probe specs cannot be written as TOML, nothing written to `{}`",
                dir.display()
            ))));
        }
    };
    // A folder that cannot be had is one error, not one per file.
    if !specs.is_empty()
        && let Err(e) = tilefit_core::write::prepare_dir(dir)
    {
        reported(Err(e.into()));
        crate::output::note(&format!(
            "tilefit: --emit-spec: nothing written to {} (the report above is whole)",
            dir.display()
        ));
        return exit_codes::BAD_INPUT_OR_TOOL_FAILURE;
    }
    let mut failed = 0;
    for (name, text) in &specs {
        if let Err(e) = tilefit_core::write::write_below(dir, name, text) {
            failed += 1;
            reported(Err(e.into()));
        }
    }
    let toml = specs
        .iter()
        .filter(|(n, _)| {
            std::path::Path::new(n)
                .extension()
                .is_some_and(|e| e == "toml")
        })
        .count();
    if failed > 0 {
        crate::output::note(&format!(
            "tilefit: --emit-spec: {failed} of {} files were not written to {} (the report above is whole)",
            specs.len(),
            dir.display()
        ));
        return exit_codes::BAD_INPUT_OR_TOOL_FAILURE;
    }
    if toml == 0 {
        // Nothing was written, so no folder was made: say so instead of naming one.
        crate::output::note(&format!(
            "tilefit: --emit-spec: no probe spec to write (no launch was compiled), nothing written to {}",
            dir.display()
        ));
        return exit_codes::OK;
    }
    crate::output::note(&format!(
        "tilefit: wrote {toml} probe specs (per device, each kernel's captured configs) to {}",
        dir.display()
    ));
    exit_codes::OK
}

/// `--dump-jobs FILE`: the jobs a probe would compile, as JSON, and a note.
pub fn emit_jobs(
    jobs: &[tilefit_core::vocab::CompileJob],
    path: &std::path::Path,
) -> anyhow::Result<u8> {
    tilefit_core::write::write_file(path, &(serde_json::to_string_pretty(jobs)? + "\n"))?;
    crate::output::note(&format!(
        "tilefit: wrote {} jobs to {}",
        jobs.len(),
        path.display()
    ));
    Ok(crate::exit_codes::OK)
}

/// Write a shard's results to `--json` (`-` for stdout) and say what to do with them; exit 2 if
/// a job failed.
pub fn emit_shard(shard: &impl ShardFile, args: &OutputArgs) -> anyhow::Result<u8> {
    let path = args.json.as_deref().unwrap_or("-");
    let (compiled, failed, total) = shard.tally();
    let shard_name = shard.describe();
    let text = format!("{}\n", serde_json::to_string_pretty(shard)?);
    if path == "-" {
        output::print(&text)?;
    } else {
        tilefit_core::write::write_file(Path::new(path), &text)?;
    }
    output::note(&format!(
        "tilefit: shard {shard_name} compiled {compiled} of the run's {total} jobs{}; merge every shard with `tilefit merge`",
        if failed > 0 {
            format!(" ({failed} FAILED)")
        } else {
            String::new()
        }
    ));
    Ok(if failed > 0 {
        exit_codes::BAD_INPUT_OR_TOOL_FAILURE
    } else {
        exit_codes::OK
    })
}

/// Print a capture's report and decide its exit code (also `tilefit report CAPTURE.json`):
/// over-budget launches fail by default, and the capture fails closed (a script that did not run
/// to its end, records not whole, a launch not judged, a compile error, nothing launched).
pub fn finish_capture(
    report: &tilefit_core::model::capture::CaptureReport,
    args: &OutputArgs,
    junit: Option<&Path>,
) -> anyhow::Result<u8> {
    if let Some(path) = junit {
        let text = tilefit_core::render::Exporter::export(&tilefit_core::render::Junit, report);
        tilefit_core::write::write_file(path, &text)?;
    }
    let mut output = args.clone();
    if output.fail_on.is_empty() {
        output.fail_on = vec![
            tilefit_core::judge::gate::Rule::Baseline,
            tilefit_core::judge::gate::Rule::NoneFits,
        ];
    }
    emit_without_html(report, &output)?;
    let code = finish(report, &output)?;
    Ok(code.max(failed_closed_code(report.failed_closed().as_ref())))
}

/// The exit code of a capture that failed closed (`capture`, `report` and `diff` of one): an
/// interrupted run is the tool's (2), a target that failed is the gate's (1).
pub fn failed_closed_code(failed: Option<&tilefit_core::model::capture::FailedClosed>) -> u8 {
    use tilefit_core::model::capture::FailedClosed;
    match failed {
        None => exit_codes::OK,
        Some(FailedClosed::Incomplete) => exit_codes::BAD_INPUT_OR_TOOL_FAILURE,
        Some(FailedClosed::Targets(_)) => exit_codes::GATE_FAILED,
    }
}

/// `diff`'s word on a new capture that failed closed, and its exit code (as
/// [`failed_closed_code`]): what it did not judge cannot be compared, and an empty diff of it
/// would read as a pass.
pub fn failed_closed_diff(
    new: &Path,
    failed: Option<&tilefit_core::model::capture::FailedClosed>,
) -> u8 {
    use tilefit_core::model::capture::FailedClosed;
    match failed {
        None => {}
        Some(FailedClosed::Incomplete) => output::note(&format!(
            "tilefit: `{}` is a capture an interrupt cut short: its missing targets were not compared",
            new.display()
        )),
        Some(FailedClosed::Targets(lines)) => {
            output::note(&format!(
                "tilefit: `{}` is a capture that failed closed: what it did not judge was not compared",
                new.display()
            ));
            for line in lines {
                output::note(&format!("tilefit:   {line}"));
            }
        }
    }
    failed_closed_code(failed)
}
