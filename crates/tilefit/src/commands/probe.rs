//! `tilefit probe SPEC.toml`: resolve the fleet and the toolchain, run the probe with a progress
//! bar on stderr, print the report (terminal, Markdown, JSON).

use anyhow::Context as _;
use tilefit_core::compile::Event;
use tilefit_core::device::DeviceTable;
use tilefit_core::device::TargetDevice;
use tilefit_core::input::spec;
use tilefit_core::model::shard::Invocation;
use tilefit_core::plan::shard::Shard;
use tilefit_core::run::probe::{self, ProbeError};

use super::output;
use crate::cli::ProbeArgs;
use crate::failure::hinted;

pub fn run(args: &ProbeArgs) -> anyhow::Result<u8> {
    let mut spec = spec::load(&args.spec).map_err(|e| hinted(e.to_string(), e.hint()))?;
    let targets = fleet(&spec, &args.targets)?;
    let shard = shard_of(args)?;
    if let Some(why) = args
        .compile
        .python
        .triton
        .as_deref()
        .filter(|v| !v.contains(','))
        .and_then(super::matrix::unsupported_version)
    {
        return Err(hinted(
            format!("--triton: {why}"),
            "judge with 3.5.1 or later",
        ));
    }
    if let Some(versions) = super::matrix::versions(args)? {
        return super::matrix::run(args, &spec, &targets, &versions);
    }
    let toolchain = super::toolchain::select(&args.compile.python, spec.triton.as_deref())?;
    spec.resolve_module(&toolchain.python)
        .map_err(|e| hinted(e.to_string(), e.hint()))?;
    let settings = crate::settings::from_compile_args(&args.compile, args.worker_script.clone())?;

    if let Some(path) = &args.dump_jobs {
        let jobs = probe::plan(&spec, &targets, &toolchain, &settings)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        std::fs::write(path, serde_json::to_string_pretty(&jobs)? + "\n")
            .with_context(|| format!("writing `{}`", path.display()))?;
        crate::output::note(&format!(
            "tilefit: wrote {} jobs to {}",
            jobs.len(),
            path.display()
        ));
        return Ok(crate::exit_codes::OK);
    }
    let progress = output::Progress::new();
    let mut on_event = |event: Event| {
        if let Event::Planned {
            jobs,
            cached,
            to_compile,
        } = &event
            && *to_compile > 0
        {
            crate::output::note(&format!(
                "tilefit: {jobs} jobs ({cached} cached); compiling {to_compile} with Triton {} on {} workers",
                toolchain.triton_version, settings.jobs
            ));
        }
        progress.event(event);
    };
    if let Some(shard) = shard {
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
        let written = written.map_err(probe_error)?;
        return super::merge::emit_shard(&written, args.output.json.as_deref().unwrap_or("-"));
    }
    let report = probe::probe(&spec, &targets, &toolchain, &settings, &mut on_event);
    progress.finish();
    let mut report = report.map_err(probe_error)?;
    if args.triton_from_files {
        judge_under_tuned(args, &spec, &targets, &settings, &mut report);
    }

    output::emit(&report, &args.output)?;
    if let Some(path) = &args.emit_configs {
        output::emit_configs(&report, path)?;
    }
    output::finish(&report, &args.output)
}

/// The fleet: `--targets`, else the spec's `[targets]`, else (without config files, which name
/// their own devices) the default fleet.
pub(crate) fn fleet(spec: &spec::ProbeSpec, given: &[String]) -> anyhow::Result<Vec<TargetDevice>> {
    let table = DeviceTable::builtin().context("loading the embedded device table")?;
    let names = if given.is_empty() {
        &spec.targets
    } else {
        given
    };
    Ok(if names.is_empty() && spec.config_files.is_some() {
        // Config files name their own devices; without [targets] each is judged on its own.
        Vec::new()
    } else if names.is_empty() {
        TargetDevice::default_fleet(table)
    } else {
        TargetDevice::resolve(table, names).map_err(|e| {
            let field = if given.is_empty() {
                "[targets].devices"
            } else {
                "--targets"
            };
            hinted(format!("{field}: {e}"), e.hint())
        })?
    })
}

/// `--shard K/N`, `auto`, or none.
fn shard_of(args: &ProbeArgs) -> anyhow::Result<Option<Shard>> {
    let shard = parse_shard(args.shard.as_deref(), args.output.json.as_deref())?;
    if shard.is_some() && (args.dump_jobs.is_some() || args.emit_configs.is_some()) {
        return Err(hinted(
            "--shard: `--dump-jobs` and `--emit-configs` need the whole run",
            "give `--emit-configs` to `tilefit merge` instead",
        ));
    }
    Ok(shard)
}

/// `--shard K/N` or `auto` (from the schedulers' variables); a shard needs `--json`.
pub(crate) fn parse_shard(text: Option<&str>, json: Option<&str>) -> anyhow::Result<Option<Shard>> {
    let Some(text) = text else {
        return Ok(None);
    };
    let shard = if text.trim() == "auto" {
        Shard::from_env(|name| std::env::var(name).ok())
    } else {
        Shard::parse(text)
    }
    .map_err(|e| {
        hinted(
            format!("--shard: {e}"),
            "give `--shard 2/3` (or TILEFIT_SHARD=2/3), one value of K per machine",
        )
    })?;
    if json.is_none() {
        return Err(hinted(
            "--shard: a shard's results go to a file, for `tilefit merge`",
            "add `--json shard-K.json`, then run `tilefit merge shard-*.json` once every shard is done",
        ));
    }
    Ok(Some(shard))
}

/// A probe error for the user: spec and kernel errors with their hint.
pub(crate) fn probe_error(error: ProbeError) -> anyhow::Error {
    match error {
        ProbeError::Spec(e) => hinted(e.to_string(), e.hint()),
        ProbeError::Kernel { .. } => hinted(
            error.to_string(),
            "check the function is decorated with @triton.jit; where the file imports what is not installed, tilefit extracts the kernel, and `[globals]` gives the names it cannot evaluate",
        ),
        ProbeError::Shards(message) => hinted(
            message,
            "merge the `--json` files of every shard of one run (`--shard 1/N` .. `N/N`), made from the same spec and Triton",
        ),
        other => anyhow::Error::new(other),
    }
}

/// `--triton-from-files`: each Triton the config files were tuned with (other than the judging
/// one) judges those files' entries again, in its own toolchain. A version tilefit cannot run is
/// noted on its files; the run goes on.
fn judge_under_tuned(
    args: &ProbeArgs,
    spec: &spec::ProbeSpec,
    targets: &[TargetDevice],
    settings: &tilefit_core::compile::Settings,
    report: &mut tilefit_core::model::probe::ProbeReport,
) {
    let mut versions: Vec<String> = Vec::new();
    for file in report.listed.iter().flat_map(|l| &l.files) {
        if let Some(version) = &file.tuned_with
            && *version != report.triton_version
            && !versions.contains(version)
        {
            versions.push(version.clone());
        }
    }
    for version in versions {
        if let Some(why) = super::matrix::unsupported_version(&version) {
            probe::tuned_unavailable(report, &version, &why);
            continue;
        }
        let toolchain = match super::matrix::toolchain_for(args, &version) {
            Ok(toolchain) => toolchain,
            Err(error) => {
                probe::tuned_unavailable(report, &version, &format!("{error:#}"));
                continue;
            }
        };
        crate::output::note(&format!(
            "tilefit: judging the files tuned with Triton {version} with it too"
        ));
        let progress = output::Progress::new();
        let mut on_event = |event: Event| progress.event(event);
        let tuned = probe::probe_tuned(spec, targets, &toolchain, settings, &mut on_event);
        progress.finish();
        match tuned {
            Ok(tuned) => probe::attach_tuned(report, &tuned),
            Err(error) => probe::tuned_unavailable(report, &version, &error.to_string()),
        }
    }
}
