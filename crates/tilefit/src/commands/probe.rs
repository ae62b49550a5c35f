//! `tilefit probe SPEC.toml`: resolve the fleet and the toolchain, run the probe with a progress
//! bar on stderr, print the report (terminal, Markdown, JSON).

use anyhow::Context as _;
use tilefit_core::compile::Event;
use tilefit_core::device::DeviceTable;
use tilefit_core::device::TargetDevice;
use tilefit_core::input::spec;
use tilefit_core::run::probe::{self, ProbeError};

use super::output;
use crate::cli::ProbeArgs;
use crate::failure::hinted;

pub fn run(args: &ProbeArgs) -> anyhow::Result<u8> {
    let spec = spec::load(&args.spec).map_err(|e| hinted(e.to_string(), e.hint()))?;
    let table = DeviceTable::builtin().context("loading the embedded device table")?;
    let names = if args.targets.is_empty() {
        &spec.targets
    } else {
        &args.targets
    };
    let targets = if names.is_empty() && spec.config_files.is_some() {
        // Config files name their own devices; without [targets] each is judged on its own.
        Vec::new()
    } else if names.is_empty() {
        TargetDevice::default_fleet(table)
    } else {
        TargetDevice::resolve(table, names).map_err(|e| {
            let field = if args.targets.is_empty() {
                "[targets].devices"
            } else {
                "--targets"
            };
            hinted(format!("{field}: {e}"), e.hint())
        })?
    };
    let toolchain = super::toolchain::select(&args.compile.python, spec.triton.as_deref())?;
    let settings = crate::settings::from_compile_args(&args.compile, args.worker_script.clone());

    if let Some(path) = &args.dump_jobs {
        let jobs = probe::plan(&spec, &targets, &toolchain, &settings)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        std::fs::write(path, serde_json::to_string_pretty(&jobs)? + "\n")
            .with_context(|| format!("writing `{}`", path.display()))?;
        eprintln!("tilefit: wrote {} jobs to {}", jobs.len(), path.display());
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
            eprintln!(
                "tilefit: {jobs} jobs ({cached} cached); compiling {to_compile} with Triton {} on {} workers",
                toolchain.triton_version, settings.jobs
            );
        }
        progress.event(event);
    };
    let report = probe::probe(&spec, &targets, &toolchain, &settings, &mut on_event);
    progress.finish();
    let report = report.map_err(|e| match e {
        ProbeError::Spec(e) => hinted(e.to_string(), e.hint()),
        ProbeError::Kernel { .. } => {
            hinted(e.to_string(), "check the kernel file imports on its own and the function is decorated with @triton.jit")
        }
        other => anyhow::Error::new(other),
    })?;

    output::emit(&report, &args.output)?;
    if let Some(path) = &args.emit_configs {
        output::emit_configs(&report, path)?;
    }
    output::finish(&report, &args.output)
}
