//! `tilefit replay [DIR...]`: index Triton caches, pick a toolchain per recorded Triton version,
//! recompile every kernel for the fleet's archs, print the report, apply the gate.

use std::path::PathBuf;

use anyhow::Context as _;
use tilefit_core::compile::{Event, toolchain};
use tilefit_core::device::DeviceTable;
use tilefit_core::device::TargetDevice;
use tilefit_core::input::{cache_index, sources};
use tilefit_core::model::shard::ReplayInvocation;
use tilefit_core::run::replay;

use super::output;
use crate::cli::{PythonArgs, ReplayArgs};
use crate::exit_codes;
use crate::failure::hinted;

/// The caches to read when none is named: `TRITON_CACHE_DIR`, `~/.triton/cache`, and the
/// `triton/` folders of `torch.compile`'s Inductor cache (`TORCHINDUCTOR_CACHE_DIR`, or
/// `/tmp/torchinductor_<user>`).
fn default_caches() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::var_os("TRITON_CACHE_DIR").filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(dir));
    }
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join(".triton").join("cache"));
    }
    if let Some(inductor) = sources::inductor_cache_dir().filter(|d| d.join("triton").is_dir()) {
        dirs.extend(sources::triton_caches_in(&inductor));
    }
    let mut unique: Vec<PathBuf> = Vec::new();
    for dir in dirs.into_iter().filter(|d| d.is_dir()) {
        if !unique.contains(&dir) {
            unique.push(dir);
        }
    }
    unique
}

/// What the user named, as Triton caches: a trace is unpacked into a cache-shaped folder (under
/// tilefit's cache, keyed by the trace's path and contents), an Inductor cache stands for its
/// `triton/<device>` folders.
fn caches_of(args: &[PathBuf]) -> anyhow::Result<(Vec<PathBuf>, Vec<cache_index::Skipped>)> {
    let mut caches = Vec::new();
    let mut skipped = Vec::new();
    for path in args {
        if sources::is_trace(path) {
            let bytes = std::fs::read(path)
                .with_context(|| format!("reading the trace `{}`", path.display()))?;
            let key = tilefit_core::digest::sha256(
                &[path.display().to_string().as_bytes(), &bytes].concat(),
            );
            let into = toolchain::default_cache_dir()
                .join("traces")
                .join(&key[..16]);
            let _ = std::fs::remove_dir_all(&into);
            let unpacked = sources::unpack_trace(path, &into).map_err(|e| {
                hinted(
                    e.to_string(),
                    "a tritonparse trace is the plain NDJSON `tritonparse.structured_logging` writes: trace with TRITON_TRACE_COMPRESSION=none, or decompress it first",
                )
            })?;
            skipped.extend(unpacked.skipped);
            if unpacked.kernels > 0 {
                caches.push(into);
            }
        } else if path.is_dir() {
            caches.extend(sources::triton_caches_in(path));
        } else {
            return Err(hinted(
                format!("the Triton cache `{}` is not a directory", path.display()),
                "pass a Triton cache directory, an Inductor cache (its `triton/` folders are read), or a tritonparse trace (`.ndjson`)",
            ));
        }
    }
    Ok((caches, skipped))
}

/// The caches to read and what they hold; a missing or kernel-less cache is bad input.
pub(crate) fn index_caches(
    dirs: &[PathBuf],
) -> anyhow::Result<(Vec<PathBuf>, cache_index::CacheIndex)> {
    let (caches, trace_skipped) = if dirs.is_empty() {
        (default_caches(), Vec::new())
    } else {
        caches_of(dirs)?
    };
    if caches.is_empty() && trace_skipped.is_empty() {
        return Err(hinted(
            "no Triton cache found (`TRITON_CACHE_DIR` is unset or empty, and neither `~/.triton/cache` nor an Inductor cache with a `triton/` folder exists)",
            "pass the cache directory: `tilefit replay path/to/triton-cache`",
        ));
    }
    let mut index = cache_index::scan(&caches)
        .map_err(|e| hinted(e.to_string(), "check the path and its permissions"))?;
    index.skipped.extend(trace_skipped);
    if index.kernels.is_empty() {
        let skipped = index
            .skipped
            .iter()
            .take(3)
            .map(|s| format!("`{}`: {}", s.path.display(), s.reason))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(hinted(
            format!(
                "no replayable kernels in {} ({} entries scanned, {} skipped{}{})",
                caches
                    .iter()
                    .map(|c| format!("`{}`", c.display()))
                    .collect::<Vec<_>>()
                    .join(", "),
                index.entries_scanned,
                index.skipped.len(),
                if skipped.is_empty() { "" } else { ": " },
                skipped
            ),
            "a Triton cache holds one folder per kernel with NAME.json and NAME.ttir; run the workload with TRITON_CACHE_DIR set to a fresh folder",
        ));
    }
    Ok((caches, index))
}

pub fn run(args: &ReplayArgs) -> anyhow::Result<u8> {
    let (caches, index) = index_caches(&args.dirs)?;
    if args.list {
        crate::output::print(&list(&index))?;
        return Ok(exit_codes::OK);
    }

    let targets = fleet(&args.targets)?;
    let shard = super::probe::parse_shard(args.shard.as_deref(), args.output.json.as_deref())?;
    let toolchains = toolchains_for(&index, &args.compile.python)?;
    let settings = crate::settings::from_compile_args(&args.compile, None)?;
    let progress = output::Progress::new();
    let mut on_event = |event: Event| progress.event(event);
    crate::output::note(&format!(
        "tilefit: {} kernel variants from {} cache entries; recompiling for {} devices",
        index.kernels.len(),
        index.entries_scanned,
        targets.len()
    ));
    if let Some(shard) = shard {
        let dirs = if args.dirs.is_empty() {
            caches.iter().map(|c| c.display().to_string()).collect()
        } else {
            args.dirs.iter().map(|d| d.display().to_string()).collect()
        };
        let invocation = ReplayInvocation {
            dirs,
            targets: args.targets.clone(),
            full_compile: settings.full_compile,
            read_resources: settings.read_resources,
        };
        let written = replay::replay_shard(
            &index,
            invocation,
            &targets,
            &toolchains,
            &settings,
            shard,
            &mut on_event,
        );
        progress.finish();
        let written = written.map_err(anyhow::Error::new)?;
        return super::merge::emit_replay_shard(
            &written,
            args.output.json.as_deref().unwrap_or("-"),
        );
    }
    let report = replay::replay(
        &index,
        &caches,
        &targets,
        &toolchains,
        &settings,
        &mut on_event,
    );
    progress.finish();
    let report = report.map_err(anyhow::Error::new)?;

    output::emit(&report, &args.output)?;
    output::finish(&report, &args.output)
}

/// One toolchain per Triton version recorded in the caches: `--python` for all of them when
/// given (with a note where versions differ), else the managed environment of each version.
pub fn toolchains_for(
    index: &cache_index::CacheIndex,
    python: &PythonArgs,
) -> anyhow::Result<Vec<(Option<String>, toolchain::Toolchain)>> {
    let mut versions: Vec<Option<String>> = Vec::new();
    for kernel in &index.kernels {
        if !versions.contains(&kernel.triton_version) {
            versions.push(kernel.triton_version.clone());
        }
    }
    versions
        .into_iter()
        .map(|version| {
            // With `--python`, only an explicit `--triton` must match it; the versions the cache
            // records are replayed by that interpreter, with a note.
            let wanted = if python.python.is_some() {
                python.triton.clone()
            } else {
                python.triton.clone().or_else(|| version.clone())
            };
            let chosen = super::toolchain::select(
                &PythonArgs {
                    python: python.python.clone(),
                    triton: wanted,
                },
                None,
            )?;
            match &version {
                Some(v) if *v != chosen.triton_version => crate::output::note(&format!(
                    "tilefit: note: kernels produced by Triton {v} are replayed with Triton {}",
                    chosen.triton_version
                )),
                None => crate::output::note(&format!(
                    "tilefit: note: some cache entries do not record their Triton version; replaying them with {}",
                    chosen.triton_version
                )),
                _ => {}
            }
            Ok((version, chosen))
        })
        .collect()
}

fn list(index: &cache_index::CacheIndex) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "{} cache entries: {} kernel variants, {} other entries, {} skipped\n",
        index.entries_scanned,
        index.kernels.len(),
        index.other_entries,
        index.skipped.len()
    );
    for (kernel, copies) in index.kernels.iter().zip(&index.copies) {
        let _ = writeln!(
            out,
            "  {} #{}  {}  Triton {}  {} {} bytes  {}{}",
            kernel.name,
            kernel.hash.chars().take(8).collect::<String>(),
            kernel.source.as_deref().unwrap_or("-"),
            kernel.triton_version.as_deref().unwrap_or("?"),
            kernel.arch,
            kernel
                .shared
                .map(tilefit_core::units::format_count)
                .unwrap_or_default(),
            kernel
                .options
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
            if *copies > 1 {
                format!("  [{copies} identical entries]")
            } else {
                String::new()
            }
        );
    }
    for skipped in &index.skipped {
        let _ = writeln!(
            out,
            "  skipped {}: {}",
            skipped.path.display(),
            skipped.reason
        );
    }
    out
}

/// `--targets`, or the default fleet.
pub(crate) fn fleet(names: &[String]) -> anyhow::Result<Vec<TargetDevice>> {
    let table = DeviceTable::builtin().context("loading the embedded device table")?;
    Ok(if names.is_empty() {
        TargetDevice::default_fleet(table)
    } else {
        TargetDevice::resolve(table, names)
            .map_err(|e| hinted(format!("--targets: {e}"), e.hint()))?
    })
}
