//! Verification against the hardware: for the local GPU's arch, every compiled kernel's predicted
//! verdict (its bytes against the table's per-block budget) beside the driver's own (does
//! `cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)` accept the size, and does at least one
//! block fits an SM), and whether they agree. Beside shared memory it checks what tilefit reads
//! from the binary and models per device: registers and local memory per thread (against
//! `CU_FUNC_ATTRIBUTE_NUM_REGS` / `LOCAL_SIZE_BYTES`), the threads per block the driver allows
//! (`MAX_THREADS_PER_BLOCK`) with the `threads` verdict, and resident blocks per SM
//! (`cuOccupancyMaxActiveBlocksPerMultiprocessor`). The compiles come from a probe or a replay
//! run with binaries kept; this module gathers the driver's readings, `judge::agreement` decides
//! what agrees, and nothing here prints.

use std::path::PathBuf;

use crate::cuda::{LiveError, Session};
use crate::judge::agreement;
use crate::model::naming::{config_text, varying_axes};
use crate::model::probe::ProbeReport;
use crate::model::replay::ReplayReport;
use crate::model::verdict::DeviceVerdict;
use crate::model::verify::{LaunchOutcome, Row};
use crate::resources::KernelResources;
use crate::vocab::CompileStatus;
use crate::vocab::Request;

/// One compiled kernel to put before the driver.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Which config or kernel variant it is.
    pub subject: String,
    /// The kernel's function name.
    pub kernel: String,
    /// `metadata.shared`: the dynamic shared memory a launch asks for.
    pub shared_bytes: u64,
    /// Threads per block (num_warps x warp size).
    pub threads: u32,
    /// The cubin.
    pub binary: PathBuf,
    /// The kernel's symbol in it.
    pub symbol: String,
    /// The worker request that launches it once on the GPU (`--launch`, spec sources only).
    pub launch: Option<Request>,
    /// What tilefit read from the binary.
    pub resources: Option<KernelResources>,
    /// tilefit's verdict for the local device (thread limit and occupancy from the model).
    pub predicted: Option<DeviceVerdict>,
}

/// What a compile result contributes to verification, whatever ran it.
struct Compiled<'a> {
    subject: String,
    kernel: &'a str,
    status: CompileStatus,
    binary: Option<&'a PathBuf>,
    symbol: Option<&'a String>,
    shared: Option<u64>,
    config: &'a std::collections::BTreeMap<String, serde_json::Value>,
    error: Option<&'a crate::compile::OutcomeError>,
    launch: Option<Request>,
    resources: Option<&'a KernelResources>,
    verdict: Option<&'a DeviceVerdict>,
}

/// Sort compiled results into cases (a binary to put before the driver) and the rest.
fn cases_of<'a>(
    compiled: impl Iterator<Item = Compiled<'a>>,
    warp_size: u32,
) -> (Vec<Case>, Vec<String>) {
    let mut cases = Vec::new();
    let mut not_compiled = Vec::new();
    for c in compiled {
        match (c.status, c.binary, c.symbol, c.shared) {
            (CompileStatus::Ok, Some(binary), Some(symbol), Some(shared)) => {
                let warps = c
                    .config
                    .get("num_warps")
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(4);
                cases.push(Case {
                    launch: c.launch,
                    resources: c.resources.cloned(),
                    predicted: c.verdict.cloned(),
                    subject: c.subject,
                    kernel: c.kernel.to_owned(),
                    shared_bytes: shared,
                    threads: u32::try_from(warps).unwrap_or(4) * warp_size,
                    binary: binary.clone(),
                    symbol: symbol.clone(),
                });
            }
            _ => not_compiled.push(format!(
                "{}: {}",
                c.subject,
                c.error.map_or("no binary", |e| e.message.as_str())
            )),
        }
    }
    (cases, not_compiled)
}

/// The cases of a probe run with binaries for `arch` (the local GPU's; config files can add
/// devices of other archs to a probe's fleet), plus the subjects that did not compile. With
/// `launch`, each case also carries the request that launches it.
pub fn probe_cases(
    report: &ProbeReport,
    arch: &str,
    warp_size: u32,
    launch: Option<&crate::input::spec::LaunchSettings>,
) -> (Vec<Case>, Vec<String>) {
    let varying = varying_axes(report);
    let local = report.results.iter().filter(|r| r.arch == arch);
    let compiled = local.map(|r| Compiled {
        subject: config_text(&r.config, &varying),
        kernel: &report.kernel.function,
        status: r.status,
        binary: r.binary.as_ref(),
        symbol: r.kernel_name.as_ref(),
        shared: r.shared_bytes,
        config: &r.config,
        error: r.error.as_ref(),
        resources: r.resources.as_ref(),
        verdict: r.verdicts.first(),
        launch: launch
            .zip(r.job.as_ref())
            .map(|(settings, job)| Request::Launch {
                kernel_file: job.kernel_file.clone(),
                function: job.function.clone(),
                source: job.source.clone(),
                args: job.args.clone(),
                constexprs: job.constexprs.clone(),
                options: job.options.clone(),
                grid: settings.grid.clone(),
                buffer_bytes: settings.buffer_bytes,
            }),
    });
    cases_of(compiled, warp_size)
}

/// The cases of a replay run with binaries.
pub fn replay_cases(report: &ReplayReport, warp_size: u32) -> (Vec<Case>, Vec<String>) {
    let compiled = report.results.iter().map(|r| Compiled {
        subject: format!("{} #{}", r.kernel.name, r.kernel.id),
        kernel: &r.kernel.name,
        status: r.status,
        binary: r.binary.as_ref(),
        symbol: r.kernel_name.as_ref(),
        shared: r.shared_bytes,
        config: &r.config,
        error: r.error.as_ref(),
        launch: None,
        resources: r.resources.as_ref(),
        verdict: r.verdicts.first(),
    });
    cases_of(compiled, warp_size)
}

/// Launch every case that carries a launch request, on `threads` workers at once (each launch
/// JIT-compiles its config in its worker, so one worker would serialize every compile); the
/// outcomes come back in case order.
pub fn launch_all(
    pool: &crate::compile::Pool,
    cases: &[Case],
    threads: usize,
) -> Vec<Option<LaunchOutcome>> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<Option<LaunchOutcome>>> = Mutex::new(vec![None; cases.len()]);
    let launching = cases.iter().filter(|c| c.launch.is_some()).count();
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, launching.max(1)) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(case) = cases.get(index) else {
                        break;
                    };
                    let Some(request) = case.launch.clone() else {
                        continue;
                    };
                    let outcome = launch_one(pool, &request);
                    outcomes.lock().expect("launch lock")[index] = Some(outcome);
                }
            });
        }
    });
    outcomes.into_inner().expect("launch lock")
}

fn launch_one(pool: &crate::compile::Pool, request: &Request) -> LaunchOutcome {
    match pool.request(request) {
        Ok(reply) => match reply.error {
            Some(error) => LaunchOutcome {
                launched: false,
                error: Some(format!("{}: {}", error.kind, error.message)),
            },
            None => LaunchOutcome {
                launched: reply.body.launched.unwrap_or(false),
                error: reply.body.launch_error,
            },
        },
        Err(fault) => LaunchOutcome {
            launched: false,
            error: Some(fault.to_string()),
        },
    }
}

/// Put every case before the driver; `launches` (one per case, from [`launch_all`]) join the
/// agreement where present.
pub fn judge(
    session: &Session,
    cases: &[Case],
    table_budget: u64,
    launches: &[Option<LaunchOutcome>],
) -> Result<Vec<Row>, LiveError> {
    cases
        .iter()
        .enumerate()
        .map(|(index, case)| {
            let cubin = std::fs::read(&case.binary).map_err(|e| LiveError::Call {
                call: "reading the cubin",
                code: -1,
                name: format!("{}: {e}", case.binary.display()),
            })?;
            let size = u32::try_from(case.shared_bytes).unwrap_or(u32::MAX);
            let driver = session.judge(&cubin, &case.symbol, size, case.threads)?;
            let predicted = agreement::predicted(case.shared_bytes, table_budget);
            let launch = launches.get(index).cloned().flatten();
            let resources = case.resources.as_ref().map(|r| {
                agreement::resource_checks(r, case.predicted.as_ref(), case.threads, &driver)
            });
            Ok(Row {
                subject: case.subject.clone(),
                kernel: case.kernel.clone(),
                shared_bytes: case.shared_bytes,
                threads: case.threads,
                agrees: agreement::agrees(predicted, &driver, launch.as_ref(), resources.as_ref()),
                predicted,
                driver,
                launch,
                resources,
            })
        })
        .collect()
}
