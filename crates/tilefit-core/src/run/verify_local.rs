//! `verify` on this machine: find the local GPU in the driver, compile the spec's configs (or the
//! caches' kernels, or a saved report's source) for its arch with binaries kept, optionally launch
//! each once, and put each before the driver. The stage calls of the command; the judging is
//! `run::verify`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::replay;
use super::toolchains::{self, Wanted};
use super::verify::{self, Case};
pub use super::verify_error::VerifyError;
use crate::compile::{Pool, Settings, WorkerCommand};
use crate::cuda::{self, LiveDevice, Session};
use crate::device::{DeviceTable, TargetDevice};
use crate::hint::Hinted;
use crate::input::cache_index;
use crate::input::spec;
use crate::model::probe::ToolInfo;
use crate::model::verify::{LaunchOutcome, VERIFY_SCHEMA_VERSION, VerifyReport};

/// What to verify.
#[derive(Debug, Clone)]
pub struct VerifyRequest {
    /// A spec, a cache folder, or a saved probe or replay report.
    pub input: PathBuf,
    /// The GPU's ordinal.
    pub device: i32,
    /// Also launch each config once (`--launch`; a spec only).
    pub launch: bool,
    /// The toolchain asked for.
    pub wanted: Wanted,
}

/// What to compile: a spec, or caches.
enum Source {
    Spec(PathBuf),
    Caches(Vec<PathBuf>),
}

fn source_of(input: &Path) -> Result<Source, VerifyError> {
    if input.is_dir() {
        return Ok(Source::Caches(vec![input.to_path_buf()]));
    }
    if input
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
    {
        let hint = "pass a spec, a cache directory or a saved report";
        let json = crate::input::untrusted::read_json_expecting(input, hint)?;
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
            _ => Err(Hinted::new(
                format!("`{}` is not a probe or replay report", input.display()),
                "pass a file written by `tilefit probe --json` or `tilefit replay --json`",
            )
            .into()),
        };
    }
    Ok(Source::Spec(input.to_path_buf()))
}

/// The local GPU, as the driver and the table see it.
fn local_target(ordinal: i32) -> Result<(LiveDevice, TargetDevice), VerifyError> {
    // The driver first: without a GPU there is nothing to verify, and compiling would waste minutes.
    let device = cuda::live_devices()?
        .into_iter()
        .find(|d| d.ordinal == ordinal)
        .ok_or_else(|| {
            Hinted::new(
                format!("there is no GPU {ordinal}"),
                "`tilefit devices --live` lists the GPUs",
            )
        })?;
    let table = DeviceTable::builtin().map_err(VerifyError::Table)?;
    let target = TargetDevice::resolve(table, std::slice::from_ref(&device.arch))
        .map_err(|error| VerifyError::UnknownArch {
            arch: device.arch.clone(),
            error,
        })?
        .remove(0);
    let target = TargetDevice {
        device: device.name.clone(),
        ..target
    };
    Ok((device, target))
}

/// Verify `request` on the local GPU. `settings` are the run's; verification keeps binaries in a
/// scratch folder of its own, compiles each whole and reads it, and never uses the result cache.
pub fn verify_local(
    request: &VerifyRequest,
    settings: &Settings,
) -> Result<VerifyReport, VerifyError> {
    let (device, target) = local_target(request.device)?;
    let binaries = settings
        .cache_dir
        .join("scratch")
        .join(format!("verify-binaries-{}", std::process::id()));
    std::fs::create_dir_all(&binaries).map_err(|source| VerifyError::Io {
        path: binaries.display().to_string(),
        source,
    })?;
    let settings = Settings {
        use_cache: false,
        binaries: Some(binaries.clone()),
        full_compile: true,
        read_resources: true,
        ..settings.clone()
    };
    let warp = u32::try_from(device.warp_size).unwrap_or(32);
    let report = compile(request, &target, &settings, warp).and_then(
        |(cases, launches, not_compiled, triton_version, source)| {
            let session = Session::open(device.ordinal)?;
            let rows = verify::judge(&session, &cases, target.smem_per_block_optin, &launches)?;
            Ok(VerifyReport {
                schema_version: VERIFY_SCHEMA_VERSION,
                kind: crate::model::kind::ReportKind::Verify,
                tool: ToolInfo::current(),
                device: device.clone(),
                table_budget: target.smem_per_block_optin,
                triton_version,
                source,
                agreed: rows.iter().filter(|r| r.agrees).count(),
                rows,
                not_compiled,
            })
        },
    );
    let _ = std::fs::remove_dir_all(&binaries);
    report
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

/// Compile the input for the local arch, keeping binaries.
fn compile(
    request: &VerifyRequest,
    target: &TargetDevice,
    settings: &Settings,
    warp: u32,
) -> Result<Compiled, VerifyError> {
    let binaries = settings.binaries.clone().unwrap_or_default();
    match source_of(&request.input)? {
        Source::Spec(path) => {
            let mut spec = spec::load(&path)?;
            let toolchain =
                toolchains::select(&request.wanted, spec.triton.as_deref(), &*settings.reporter)?;
            spec.resolve_module(&toolchain.python)?;
            let report = crate::run::pipeline::probe(
                &spec,
                std::slice::from_ref(target),
                &toolchain,
                settings,
            )?;
            let (cases, not_compiled) = verify::probe_cases(
                &report,
                &target.arch,
                warp,
                request.launch.then_some(&spec.launch),
            );
            let launches = if request.launch {
                settings.reporter.note(&format!(
                    "tilefit: launching {} configs once each on the GPU, {} at a time",
                    cases.len(),
                    settings.jobs
                ));
                // The toolchain's Python needs torch and the GPU; each worker holds its own CUDA
                // context, and loads the kernels the compile left in the binaries folder.
                let pool = Pool::new(
                    WorkerCommand::embedded(
                        toolchain.python.clone(),
                        binaries.join("triton-cache"),
                    ),
                    settings.jobs,
                    settings.job_timeout,
                );
                verify::launch_all(&pool, &cases, settings.jobs)
            } else {
                Vec::new()
            };
            Ok((
                cases,
                launches,
                not_compiled,
                report.triton_version,
                path.display().to_string(),
            ))
        }
        Source::Caches(_) if request.launch => Err(Hinted::new(
            "`--launch` needs a spec: a cached kernel's arguments are not known",
            "verify a spec with --launch, or drop --launch for a cache",
        )
        .into()),
        Source::Caches(caches) => {
            let index = cache_index::scan(&caches)?;
            let toolchains = toolchains::for_caches(&index, &request.wanted, &*settings.reporter)?;
            let report = replay::replay(
                &index,
                &caches,
                &[],
                std::slice::from_ref(target),
                &toolchains,
                settings,
            )?;
            let (cases, not_compiled) = verify::replay_cases(&report, warp);
            let versions: Vec<String> = report
                .versions
                .iter()
                .map(|v| v.replayed_with.clone())
                .collect();
            let caches: Vec<String> = caches.iter().map(|c| c.display().to_string()).collect();
            Ok((
                cases,
                Vec::new(),
                not_compiled,
                versions.join(", "),
                caches.join(", "),
            ))
        }
    }
}
