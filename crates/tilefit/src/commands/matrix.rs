//! `tilefit probe SPEC --triton A,B,...`: the probe once per Triton version, each in its own
//! toolchain, drawn as one report with a column group per version, each version's
//! recommendation, and what changed from one version to the next.

use tilefit_core::compile::Event;
use tilefit_core::compile::toolchain::{self, Toolchain};
use tilefit_core::device::TargetDevice;
use tilefit_core::input::spec::ProbeSpec;
use tilefit_core::judge::diff::diff;
use tilefit_core::model::matrix::{MATRIX_SCHEMA_VERSION, MatrixReport};
use tilefit_core::model::probe::ToolInfo;
use tilefit_core::run::probe;

use super::output;
use crate::cli::ProbeArgs;
use crate::failure::hinted;

/// The versions of `--triton A,B`, when it names more than one.
pub fn versions(args: &ProbeArgs) -> anyhow::Result<Option<Vec<String>>> {
    let Some(text) = &args.compile.python.triton else {
        return Ok(None);
    };
    // Checked and deduplicated by `--triton`'s value parser; the same parser splits it here.
    let versions = toolchain::parse_versions(text).map_err(|e| hinted(e.to_string(), e.hint()))?;
    for version in &versions {
        if let Some(why) = unsupported_version(version) {
            return Err(hinted(
                format!("--triton {text}: {why}"),
                "leave it out, or judge with 3.5.1 or later",
            ));
        }
    }
    if versions.len() < 2 {
        return Ok(None);
    }
    let refuse =
        |what: &str, hint: &str| Err(hinted(format!("--triton {text}: {what}"), hint.to_owned()));
    if args.shard.is_some() {
        return refuse(
            "a version matrix cannot be sharded",
            "shard one version at a time: `--triton 3.6.0 --shard K/N`",
        );
    }
    if args.dump_jobs.is_some() || args.emit_configs.is_some() || args.output.html.is_some() {
        return refuse(
            "`--dump-jobs`, `--emit-configs` and `--html` take one Triton version",
            "run those with `--triton VERSION`",
        );
    }
    Ok(Some(versions))
}

/// Why tilefit cannot compile with this Triton, if it cannot: releases before 3.5 are refused
/// by name rather than provisioned and failed (3.4.0's JIT rejects the worker's pointer types:
/// checked).
pub(crate) fn unsupported_version(version: &str) -> Option<String> {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    let (major, minor) = (parts.next().flatten()?, parts.next().flatten()?);
    ((major, minor) < (3, OLDEST_MINOR)).then(|| {
        format!(
            "Triton {version} is older than 3.{OLDEST_MINOR}, the oldest release whose JIT tilefit reproduces"
        )
    })
}

/// The oldest Triton 3.x minor release tilefit compiles with.
const OLDEST_MINOR: u32 = 5;

/// The toolchain of one version: `--python`/`TILEFIT_PYTHON` when its Triton is that version,
/// else the managed environment, made on first use.
pub(crate) fn toolchain_for(args: &ProbeArgs, version: &str) -> anyhow::Result<Toolchain> {
    if let Some(python) = &args.compile.python.python
        && let Ok(t) = toolchain::from_python(python)
        && t.triton_version == version
    {
        return Ok(t);
    }
    super::toolchain::provisioned(version)
}

pub fn run(
    args: &ProbeArgs,
    spec: &ProbeSpec,
    targets: &[TargetDevice],
    versions: &[String],
) -> anyhow::Result<u8> {
    let settings = crate::settings::from_compile_args(&args.compile, args.worker_script.clone())?;
    let mut reports = Vec::new();
    let mut spec = spec.clone();
    for version in versions {
        let toolchain = toolchain_for(args, version)?;
        spec.resolve_module(&toolchain.python)
            .map_err(|e| hinted(e.to_string(), e.hint()))?;
        let spec = &spec;
        crate::output::note(&format!(
            "tilefit: Triton {} (Python {}, {})",
            toolchain.triton_version,
            toolchain.python_version,
            toolchain.python.display()
        ));
        let progress = output::Progress::new();
        let mut on_event = |event: Event| progress.event(event);
        let report = probe::probe(spec, targets, &toolchain, &settings, &mut on_event);
        progress.finish();
        reports.push(report.map_err(super::probe::probe_error)?);
    }
    let diffs = reports
        .windows(2)
        .map(|pair| diff(&pair[0], &pair[1]))
        .collect();
    let matrix = MatrixReport {
        schema_version: MATRIX_SCHEMA_VERSION,
        kind: "probe-matrix".to_owned(),
        tool: ToolInfo::current(),
        versions: reports,
        diffs,
    };
    output::emit_without_html(&matrix, &args.output)?;
    // Each version is gated as its own run would be; the worst exit wins (2 over 1 over 0).
    let mut code = crate::exit_codes::OK;
    for report in &matrix.versions {
        code = code.max(output::finish(report, &args.output)?);
    }
    Ok(code)
}
