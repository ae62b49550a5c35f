//! `tilefit verify INPUT`: on a machine with an NVIDIA GPU, compile the spec's configs (or the
//! cache's kernels, or a saved report's source) for the local arch with binaries kept, put each
//! before the driver, and report prediction against driver with the agreement rate. Exit 1 on any
//! disagreement, 2 when there is no driver.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use serde_json::Value;
use tilefit_core::compile::{Event, Pool, WorkerCommand};
use tilefit_core::cuda::{self, LiveDevice, Session};
use tilefit_core::device::DeviceTable;
use tilefit_core::device::TargetDevice;
use tilefit_core::input::cache_index;
use tilefit_core::model::probe::ToolInfo;
use tilefit_core::run::verify::{self, Case, LaunchOutcome, VerifyReport};
use tilefit_core::run::{probe, replay};
use tilefit_core::units::format_count;

use super::output::Progress;
use crate::cli::VerifyArgs;
use crate::exit_codes;
use crate::failure::hinted;
use crate::output;

/// What to compile: a spec, or caches.
enum Source {
    Spec(PathBuf),
    Caches(Vec<PathBuf>),
}

fn source_of(input: &Path) -> anyhow::Result<Source> {
    if input.is_dir() {
        return Ok(Source::Caches(vec![input.to_path_buf()]));
    }
    if input
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
    {
        let json: Value = super::output::untrusted_json(
            input,
            "pass a spec, a cache directory or a saved report",
        )?;
        return match json.get("kind").and_then(Value::as_str) {
            Some("probe") => Ok(Source::Spec(PathBuf::from(
                json["spec"].as_str().unwrap_or_default(),
            ))),
            Some("replay") => Ok(Source::Caches(
                json["caches"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(PathBuf::from)
                    .collect(),
            )),
            _ => Err(hinted(
                format!("`{}` is not a probe or replay report", input.display()),
                "pass a file written by `tilefit probe --json` or `tilefit replay --json`",
            )),
        };
    }
    Ok(Source::Spec(input.to_path_buf()))
}

pub fn run(args: &VerifyArgs) -> anyhow::Result<u8> {
    // The driver first: without a GPU there is nothing to verify, and compiling would waste minutes.
    let devices = cuda::live_devices().map_err(|e| hinted(e.to_string(), e.hint()))?;
    let device = devices
        .into_iter()
        .find(|d| d.ordinal == args.device)
        .ok_or_else(|| {
            hinted(
                format!("there is no GPU {}", args.device),
                "`tilefit devices --live` lists the GPUs",
            )
        })?;
    let table = DeviceTable::builtin().context("loading the embedded device table")?;
    let target = TargetDevice::resolve(table, std::slice::from_ref(&device.arch))
        .map_err(|e| {
            hinted(
                format!("the local GPU's arch {}: {e}", device.arch),
                "tilefit's table does not know this arch yet",
            )
        })?
        .remove(0);
    let target = TargetDevice {
        device: device.name.clone(),
        ..target
    };
    let binaries = tempdir(&tilefit_core::compile::toolchain::default_cache_dir())?;
    let compiled = compile(
        args,
        &target,
        &binaries,
        u32::try_from(device.warp_size).unwrap_or(32),
    );
    let (cases, launches, not_compiled, triton_version, source) = match compiled {
        Ok(compiled) => compiled,
        Err(error) => {
            let _ = std::fs::remove_dir_all(&binaries);
            return Err(error);
        }
    };
    let report = judge_all(
        &device,
        &target,
        &cases,
        &launches,
        not_compiled,
        triton_version,
        source,
    );
    let _ = std::fs::remove_dir_all(&binaries);
    let report = report?;
    match args.json.as_deref() {
        Some("-") => output::print_json(&report)?,
        Some(path) => std::fs::write(path, serde_json::to_string_pretty(&report)? + "\n")
            .with_context(|| format!("writing `{path}`"))?,
        None => {}
    }
    if args.json.as_deref() != Some("-") {
        output::print(&render(&report))?;
    }
    let disagreements = report.rows.len() - report.agreed;
    if disagreements > 0 {
        crate::output::note(&format!(
            "tilefit: {disagreements} predictions disagree with the driver"
        ));
        return Ok(exit_codes::GATE_FAILED);
    }
    Ok(exit_codes::OK)
}

/// What `compile` hands over: the cases, their launches (with `--launch`), what did not compile,
/// the Triton version, the source.
type Compiled = (
    Vec<Case>,
    Vec<Option<LaunchOutcome>>,
    Vec<String>,
    String,
    String,
);

/// Compile the input for the local arch, keeping binaries in `binaries`.
fn compile(
    args: &VerifyArgs,
    target: &TargetDevice,
    binaries: &Path,
    warp: u32,
) -> anyhow::Result<Compiled> {
    let settings = crate::settings::for_verify(args, binaries)?;
    let timeout = settings.job_timeout;
    let progress = Progress::new();
    let mut on_event = |event: Event| progress.event(event);

    let compiled = match source_of(&args.input)? {
        Source::Spec(path) => {
            let mut spec = tilefit_core::input::spec::load(&path)
                .map_err(|e| hinted(e.to_string(), e.hint()))?;
            let toolchain = super::toolchain::select(&args.python, spec.triton.as_deref())?;
            spec.resolve_module(&toolchain.python)
                .map_err(|e| hinted(e.to_string(), e.hint()))?;
            let report = probe::probe(
                &spec,
                std::slice::from_ref(target),
                &toolchain,
                &settings,
                &mut on_event,
            )
            .map_err(|e| anyhow::anyhow!("{e}"))?;
            let (cases, not_compiled) = verify::probe_cases(
                &report,
                &target.arch,
                warp,
                args.launch.then_some(&spec.launch),
            );
            let launches = if args.launch {
                progress.finish();
                launch(&cases, &toolchain.python, binaries, timeout, settings.jobs)
            } else {
                Vec::new()
            };
            (
                cases,
                launches,
                not_compiled,
                report.triton_version,
                path.display().to_string(),
            )
        }
        Source::Caches(_) if args.launch => {
            return Err(hinted(
                "`--launch` needs a spec: a cached kernel's arguments are not known",
                "verify a spec with --launch, or drop --launch for a cache",
            ));
        }
        Source::Caches(caches) => {
            let index =
                cache_index::scan(&caches).map_err(|e| hinted(e.to_string(), "check the path"))?;
            let toolchains = super::replay::toolchains_for(&index, &args.python)?;
            let report = replay::replay(
                &index,
                &caches,
                std::slice::from_ref(target),
                &toolchains,
                &settings,
                &mut on_event,
            )
            .map_err(anyhow::Error::new)?;
            let (cases, not_compiled) = verify::replay_cases(&report, warp);
            let versions: Vec<String> = report
                .versions
                .iter()
                .map(|v| v.replayed_with.clone())
                .collect();
            let caches: Vec<String> = caches.iter().map(|c| c.display().to_string()).collect();
            (
                cases,
                Vec::new(),
                not_compiled,
                versions.join(", "),
                caches.join(", "),
            )
        }
    };
    progress.finish();
    Ok(compiled)
}

/// Launch every case once, on `jobs` workers of the toolchain's Python at once (it needs torch
/// and the GPU; each worker holds its own CUDA context).
fn launch(
    cases: &[Case],
    python: &Path,
    binaries: &Path,
    timeout: Duration,
    jobs: usize,
) -> Vec<Option<LaunchOutcome>> {
    crate::output::note(&format!(
        "tilefit: launching {} configs once each on the GPU, {jobs} at a time",
        cases.len()
    ));
    let pool = Pool::new(
        WorkerCommand::embedded(python.to_path_buf(), binaries.join("triton-cache")),
        jobs,
        timeout,
    );
    verify::launch_all(&pool, cases, jobs)
}

fn judge_all(
    device: &LiveDevice,
    target: &TargetDevice,
    cases: &[Case],
    launches: &[Option<LaunchOutcome>],
    not_compiled: Vec<String>,
    triton_version: String,
    source: String,
) -> anyhow::Result<VerifyReport> {
    let session = Session::open(device.ordinal).map_err(|e| hinted(e.to_string(), e.hint()))?;
    let rows = verify::judge(&session, cases, target.smem_per_block_optin, launches)
        .map_err(|e| hinted(e.to_string(), e.hint()))?;
    Ok(VerifyReport {
        schema_version: verify::VERIFY_SCHEMA_VERSION,
        kind: "verify".to_owned(),
        tool: ToolInfo::current(),
        device: device.clone(),
        table_budget: target.smem_per_block_optin,
        triton_version,
        source,
        agreed: rows.iter().filter(|r| r.agrees).count(),
        rows,
        not_compiled,
    })
}

fn tempdir(cache_dir: &Path) -> anyhow::Result<PathBuf> {
    let dir = cache_dir
        .join("scratch")
        .join(format!("verify-binaries-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating `{}`", dir.display()))?;
    Ok(dir)
}

fn render(report: &VerifyReport) -> String {
    let d = &report.device;
    let mut out = format!(
        "{} ({}, driver budget {} bytes per block; the table says {}), Triton {}, {}\n\n",
        d.name,
        d.arch,
        format_count(u64::try_from(d.smem_per_block_optin).unwrap_or(0)),
        format_count(report.table_budget),
        report.triton_version,
        report.source
    );
    let rows: Vec<Vec<String>> = report.rows.iter().map(row_cells).collect();
    out.push_str(&output::table(
        &[
            "config / kernel",
            "bytes",
            "predicted",
            "driver",
            "regs",
            "local B",
            "max threads",
            "blocks/SM",
            "spill B",
            "launch",
            "agree",
        ],
        &rows,
        &[1, 4, 5, 6, 7, 8],
        "",
    ));
    let over = report
        .rows
        .iter()
        .filter(|r| r.predicted == tilefit_core::model::verdict::VerdictCode::OverBudget)
        .count();
    let _ = writeln!(
        out,
        "\nAgreement: {}/{} ({:.1}%); {} predicted over the budget, {} predicted to fit.",
        report.agreed,
        report.rows.len(),
        if report.rows.is_empty() {
            100.0
        } else {
            percent(report.agreed, report.rows.len())
        },
        over,
        report.rows.len() - over
    );
    let tally = report.resource_tally();
    if tally.first().is_some_and(|(_, _, checked)| *checked > 0) {
        let _ = writeln!(
            out,
            "Read from the cubin and modelled, against the driver (cuFuncGetAttribute, cuOccupancyMaxActiveBlocksPerMultiprocessor):"
        );
        for (name, agreed, checked) in tally {
            let _ = writeln!(
                out,
                "  {name:<24} {agreed}/{checked} ({:.1}%)",
                percent(agreed, checked)
            );
        }
    }
    if !report.not_compiled.is_empty() {
        let _ = writeln!(
            out,
            "Not compiled for {} (nothing to verify): {}",
            d.arch,
            report.not_compiled.len()
        );
        for line in &report.not_compiled {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}

fn percent(part: usize, whole: usize) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "row counts are small")]
    let ratio = part as f64 / whole.max(1) as f64;
    ratio * 100.0
}

/// The cells of one verification row.
fn row_cells(r: &tilefit_core::run::verify::Row) -> Vec<String> {
    let driver = if r.driver.accepted {
        format!(
            "accepted, {} blocks/SM",
            r.driver.blocks_per_sm.unwrap_or(0)
        )
    } else {
        format!("refused: {}", r.driver.error.as_deref().unwrap_or("?"))
    };
    vec![
        r.subject.clone(),
        format_count(r.shared_bytes),
        r.predicted.as_str().to_owned(),
        driver,
        resource_cell(r, |c| &c.registers_per_thread, || r.driver.registers),
        resource_cell(r, |c| &c.local_bytes_per_thread, || r.driver.local_bytes),
        resource_cell(
            r,
            |c| &c.max_threads_per_block,
            || r.driver.max_threads_per_block,
        ),
        resource_cell(r, |c| &c.blocks_per_sm, || r.driver.blocks_per_sm),
        r.resources
            .as_ref()
            .and_then(|c| c.spill_bytes)
            .map(format_count)
            .unwrap_or_default(),
        r.launch.as_ref().map_or_else(String::new, |l| {
            if l.launched {
                "launched".to_owned()
            } else {
                format!("refused: {}", l.error.as_deref().unwrap_or("?"))
            }
        }),
        if r.agrees {
            "yes".to_owned()
        } else {
            "NO".to_owned()
        },
    ]
}

/// One resource check as a cell: the number where tilefit and the driver agree, both where they
/// do not, the driver's alone where tilefit read nothing.
fn resource_cell(
    row: &tilefit_core::run::verify::Row,
    pick: fn(&tilefit_core::run::verify::ResourceChecks) -> &tilefit_core::run::verify::Check,
    driver: impl Fn() -> Option<i32>,
) -> String {
    match row.resources.as_ref().map(pick) {
        Some(check) if check.agrees => check.predicted.map(|v| v.to_string()).unwrap_or_default(),
        Some(check) => format!(
            "{} vs driver {}",
            check
                .predicted
                .map_or_else(|| "?".to_owned(), |v| v.to_string()),
            check
                .driver
                .map_or_else(|| "?".to_owned(), |v| v.to_string())
        ),
        None => driver().map(|v| v.to_string()).unwrap_or_default(),
    }
}
