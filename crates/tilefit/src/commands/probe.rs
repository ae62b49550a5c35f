//! `tilefit probe SPEC.toml`: resolve the fleet and the toolchain, run the probe with a progress
//! bar on stderr, print the report (terminal, Markdown, JSON).

use std::time::Duration;

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use tilefit_core::device::DeviceTable;
use tilefit_core::probe::{self, ProbeError, ProbeEvent, ProbeSettings, TargetDevice};
use tilefit_core::report::{Exporter, Json, Markdown, Terminal};
use tilefit_core::spec;
use tilefit_core::toolchain;
use tilefit_core::verdict::CompileStatus;

use crate::cli::ProbeArgs;
use crate::exit_codes;
use crate::failure::hinted;
use crate::output;

pub fn run(args: &ProbeArgs) -> anyhow::Result<u8> {
    let spec = spec::load(&args.spec).map_err(|e| hinted(e.to_string(), e.hint()))?;
    let table = DeviceTable::builtin().context("loading the embedded device table")?;
    let names = if args.targets.is_empty() {
        &spec.targets
    } else {
        &args.targets
    };
    let targets = if names.is_empty() {
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
    let toolchain = super::toolchain::select(&args.python, spec.triton.as_deref())?;
    let settings = ProbeSettings {
        jobs: args
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, usize::from)),
        use_cache: !args.no_cache,
        job_timeout: Duration::from_secs(args.timeout.max(1)),
        cache_dir: toolchain::default_cache_dir(),
        worker_script: args.worker_script.clone(),
    };

    let bar = ProgressBar::hidden();
    let mut on_event = |event: ProbeEvent| match event {
        ProbeEvent::Planned {
            jobs,
            cached,
            to_compile,
        } => {
            if to_compile > 0 {
                eprintln!(
                    "tilefit: {jobs} jobs ({cached} cached); compiling {to_compile} with Triton {} on {} workers",
                    toolchain.triton_version, settings.jobs
                );
                bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                bar.set_length(to_compile as u64);
                bar.set_style(
                    ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {wide_msg}")
                        .expect("a literal template")
                        .progress_chars("=> "),
                );
            }
        }
        ProbeEvent::Compiled { done, label, .. } => {
            bar.set_position(done as u64);
            bar.set_message(label);
        }
    };
    let report = probe::probe(&spec, &targets, &toolchain, &settings, &mut on_event);
    bar.finish_and_clear();
    let report = report.map_err(|e| match e {
        ProbeError::Spec(e) => hinted(e.to_string(), e.hint()),
        ProbeError::Kernel { .. } => {
            hinted(e.to_string(), "check the kernel file imports on its own and the function is decorated with @triton.jit")
        }
        other => anyhow::Error::new(other),
    })?;

    match args.json.as_deref() {
        Some("-") => output::print(&Json.export(&report))?,
        Some(path) => {
            std::fs::write(path, Json.export(&report))
                .with_context(|| format!("writing `{path}`"))?;
        }
        None => {}
    }
    if args.json.as_deref() != Some("-") {
        let text = if args.markdown {
            Markdown.export(&report)
        } else {
            Terminal.export(&report)
        };
        output::print(&text)?;
    }
    let failed = report
        .results
        .iter()
        .filter(|r| r.status == CompileStatus::Failed)
        .count();
    if failed > 0 {
        eprintln!(
            "tilefit: {failed} of {} jobs failed (worker faults); their cells say FAILED",
            report.results.len()
        );
        return Ok(exit_codes::BAD_INPUT_OR_TOOL_FAILURE);
    }
    Ok(exit_codes::OK)
}
