//! Every exporter on shared fixtures, the way ruff snapshot-tests its emitters: one set of
//! models (saved reports from the repository, reports the library computes from them, and
//! hand-made values for what has no saved form), each rendered by every exporter that implements
//! it, and compared with its snapshot in `tests/core/emitters/`. A change to what a command
//! prints shows here as a diff; `TILEFIT_BLESS=1 cargo test -p tilefit-core --test core
//! emitters` rewrites the snapshots, which then go into review like any other change. A snapshot
//! no pair produces fails too, so the folder is exactly what the exporters say.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tilefit_core::compile::toolchain::{Origin, Toolchain, ToolchainError};
use tilefit_core::cuda::LiveComparison;
use tilefit_core::device::{DeviceListing, DeviceTable, Resolved};
use tilefit_core::input::cache_index::{CacheIndex, CachedKernel, IrArg, Skipped};
use tilefit_core::judge::gate::{Gate, Rule};
use tilefit_core::model::capture::CaptureReport;
use tilefit_core::model::fix_files::{EntryFix, FileFix, FixedFiles};
use tilefit_core::model::kind::ReportKind;
use tilefit_core::model::matrix::MatrixReport;
use tilefit_core::model::probe::ProbeReport;
use tilefit_core::model::replay::ReplayReport;
use tilefit_core::model::saved::SavedReport;
use tilefit_core::model::verify::VerifyReport;
use tilefit_core::render::{
    DevicePage, Exporter, GithubAnnotations, Html, Json, LiveDevices, Markdown, Terminal,
    ToolchainListing,
};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn snapshots() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/core/emitters")
}

fn saved(relative: &str) -> SavedReport {
    let path = repo().join(relative);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    SavedReport::from_json(&path, json).unwrap()
}

fn probe(relative: &str) -> ProbeReport {
    match saved(relative) {
        SavedReport::Probe(report) => *report,
        _ => panic!("{relative} is not a probe report"),
    }
}

fn replay(relative: &str) -> ReplayReport {
    match saved(relative) {
        SavedReport::Replay(report) => *report,
        _ => panic!("{relative} is not a replay report"),
    }
}

fn capture(relative: &str) -> CaptureReport {
    match saved(relative) {
        SavedReport::Capture(report) => *report,
        _ => panic!("{relative} is not a capture report"),
    }
}

fn read<T: serde::de::DeserializeOwned>(relative: &str) -> T {
    serde_json::from_str(&std::fs::read_to_string(repo().join(relative)).unwrap()).unwrap()
}

/// The fixtures' `--emit-files` result: one patched file with a changed entry and an entry no
/// config fixes, one new file, a device skipped and a file left unjudged.
fn fixed_files() -> FixedFiles {
    let entry = |key: &str, before, after, changes: &[&str], unfixable| EntryFix {
        key: key.to_owned(),
        bytes_before: before,
        bytes_after: after,
        changes: changes.iter().map(|c| (*c).to_owned()).collect(),
        unfixable,
        notes: Vec::new(),
    };
    let file = |name: &str, kind, device: &str, budget, entries| FileFix {
        name: name.to_owned(),
        kind,
        device: device.to_owned(),
        budget,
        source: "configs/E=64,N=1024,device_name=NVIDIA_H100_80GB_HBM3.json".to_owned(),
        entries_in_source: 3,
        entries,
        notes: vec!["keeps `4096`, which no config fits".to_owned()],
        text: "{}\n".to_owned(),
    };
    FixedFiles {
        tilefit: "0.1.0".to_owned(),
        triton: "3.7.1".to_owned(),
        files: vec![
            file(
                "E=64,N=1024,device_name=NVIDIA_RTX_PRO_6000_Blackwell_Workstation_Edition.json",
                "new",
                "rtx-pro-6000",
                101_376,
                vec![entry(
                    "16",
                    Some(131_072),
                    Some(65_536),
                    &["num_stages 4 -> 2"],
                    false,
                )],
            ),
            file(
                "E=64,N=1024,device_name=NVIDIA_GB10.json",
                "patched",
                "gb10",
                101_376,
                vec![
                    entry("1", Some(98_304), Some(98_304), &[], false),
                    entry("4096", Some(196_608), None, &[], true),
                ],
            ),
        ],
        skipped: vec![(
            "mi300x".to_owned(),
            "no AMD-tuned file to start from".to_owned(),
        )],
        not_judged: vec![(
            "E=64,N=1024,device_name=broken.json".to_owned(),
            "line 3: expected `,`".to_owned(),
        )],
        rejudged: 3,
        complete: true,
    }
}

/// A cache listing: one kernel held twice, one entry that cannot be replayed.
fn cache_index() -> CacheIndex {
    CacheIndex {
        kernels: vec![CachedKernel {
            name: "matmul_kernel".to_owned(),
            entry: PathBuf::from("/cache/AB12/matmul_kernel.json"),
            ir: PathBuf::from("/cache/AB12/matmul_kernel.ttir"),
            triton_version: Some("3.6.0".to_owned()),
            backend: tilefit_core::device::Backend::Cuda,
            arch: "sm_90".to_owned(),
            warp_size: 32,
            shared: Some(98_304),
            options: BTreeMap::from([("num_stages".to_owned(), serde_json::json!(3))]),
            hash: "ab12cd34ef56".to_owned(),
            source: None,
            args: vec![IrArg {
                name: "a_ptr".to_owned(),
                ty: "!tt.ptr<f16>".to_owned(),
                divisible_by_16: true,
            }],
        }],
        copies: vec![2],
        skipped: vec![Skipped {
            path: PathBuf::from("/cache/EF56"),
            reason: "no IR beside the metadata".to_owned(),
        }],
        other_entries: 1,
        entries_scanned: 4,
    }
}

/// An HTML page with its generation time (the clock's, the one thing not from the report)
/// masked.
fn dated(html: &str) -> String {
    const GENERATED: &str = "<dt>generated</dt><dd>";
    html.lines()
        .map(|line| match line.strip_prefix(GENERATED) {
            Some(rest) if rest.ends_with(" UTC</dd>") => format!("{GENERATED}[date] UTC</dd>"),
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// One rendered output per (fixture, exporter): the snapshot's file name and its text. The
/// probe's, replay's, diff's and matrix's reports first.
fn rendered() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |name: &str, text: String| out.push((name.to_owned(), text));

    let mla = probe("crates/tilefit/tests/fixtures/saved/mla_decode.json");
    add("probe.terminal.txt", Terminal.export(&mla));
    add("probe.md", Markdown.export(&mla));
    add("probe.json", Json.export(&mla));
    add("probe.html", dated(&Html.export(&mla)));
    let gate = Gate {
        rules: vec![Rule::OverBudget, Rule::NoneFits],
        shipped: None,
        baseline: None,
    };
    let annotations = GithubAnnotations {
        roots: vec![repo()],
    };
    add(
        "probe.github.txt",
        annotations.export(&gate.annotated(&mla)),
    );

    let listed = probe("crates/tilefit/tests/fixtures/saved/matmul_autotune.json");
    add("probe_autotune.terminal.txt", Terminal.export(&listed));
    add("probe_autotune.md", Markdown.export(&listed));

    let replayed = replay("crates/tilefit/tests/fixtures/saved/h200_replay.json");
    add("replay.terminal.txt", Terminal.export(&replayed));
    add("replay.md", Markdown.export(&replayed));
    add("replay.json", Json.export(&replayed));
    add("replay.html", dated(&Html.export(&replayed)));

    let older = probe("crates/tilefit/tests/fixtures/saved/mla_probe_older.json");
    let diff = tilefit_core::judge::diff::diff(&older, &mla);
    add("diff.terminal.txt", Terminal.export(&diff));
    add("diff.md", Markdown.export(&diff));
    let matrix = MatrixReport {
        schema_version: mla.schema_version,
        kind: ReportKind::ProbeMatrix,
        tool: mla.tool.clone(),
        versions: vec![older, mla],
        diffs: vec![diff],
    };
    add("matrix.terminal.txt", Terminal.export(&matrix));
    add("matrix.md", Markdown.export(&matrix));

    out.extend(listings_rendered());
    out
}

/// The other reports, the explanation and the listings.
fn listings_rendered() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |name: &str, text: String| out.push((name.to_owned(), text));
    let captured = capture("crates/tilefit-core/tests/core/emitters/fixture.capture.json");
    add("capture.terminal.txt", Terminal.export(&captured));
    add("capture.md", Markdown.export(&captured));

    let verified: VerifyReport = read("docs/verification/h200-verify/verify_matmul.json");
    add("verify.terminal.txt", Terminal.export(&verified));

    let fixed = fixed_files();
    add("fix_files.md", Markdown.export(&fixed));
    add("fix_files.json", Json.export(&fixed));

    add("cache_list.terminal.txt", Terminal.export(&cache_index()));

    let table = DeviceTable::builtin().unwrap();
    let explanation = tilefit_core::explain::explain(
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 102400, Hardware limit: 101376. Reducing block sizes or `num_stages` may help.",
        table,
    )
    .unwrap();
    add("explain.terminal.txt", Terminal.export(&explanation));

    let resolved: Vec<Resolved<'_>> = ["rtx-pro-6000", "h100"]
        .iter()
        .map(|name| table.resolve(name).unwrap())
        .collect();
    let named = DeviceListing::selected(table, &resolved);
    add(
        "devices_named.terminal.txt",
        Terminal.export(&DevicePage {
            table,
            listing: &named,
            resolved: &resolved,
        }),
    );
    let all = DeviceListing::all(table);
    add(
        "devices.terminal.txt",
        Terminal.export(&DevicePage {
            table,
            listing: &all,
            resolved: &[],
        }),
    );
    let live: serde_json::Value = read("docs/verification/h200-verify/live.json");
    let comparisons: Vec<LiveComparison> = serde_json::from_value(live["devices"].clone()).unwrap();
    add(
        "live.terminal.txt",
        Terminal.export(&LiveDevices(&comparisons)),
    );

    let managed = [Toolchain {
        python: PathBuf::from("/cache/tilefit/toolchains/triton-3.7.1/bin/python"),
        python_version: "3.11.7".to_owned(),
        triton_version: "3.7.1".to_owned(),
        origin: Origin::Managed,
        env: std::collections::BTreeMap::new(),
    }];
    add(
        "toolchains.terminal.txt",
        Terminal.export(&ToolchainListing {
            dir: Path::new("/cache/tilefit/toolchains"),
            managed: &managed,
            env_python: Some((
                Path::new("/opt/venv/bin/python"),
                Err(ToolchainError::NoPython {
                    python: "/opt/venv/bin/python".to_owned(),
                    reason: "No such file or directory (os error 2)".to_owned(),
                }),
            )),
        }),
    );
    out
}

#[test]
fn every_exporter_renders_the_shared_fixtures_as_its_snapshot() {
    let bless = std::env::var_os("TILEFIT_BLESS").is_some();
    let mut differ = Vec::new();
    for (name, text) in rendered() {
        assert!(
            !text.trim().is_empty(),
            "{name}: the exporter wrote nothing"
        );
        let path = snapshots().join(&name);
        if bless {
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        let Ok(want) = std::fs::read_to_string(&path) else {
            differ.push(format!("{name}: no snapshot"));
            continue;
        };
        if want != text {
            let line = want
                .lines()
                .zip(text.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| want.lines().count().min(text.lines().count()));
            differ.push(format!(
                "{name}: differs from line {}:\n  snapshot: {:?}\n  rendered: {:?}",
                line + 1,
                want.lines().nth(line).unwrap_or("<end>"),
                text.lines().nth(line).unwrap_or("<end>"),
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{}\n(a deliberate change: TILEFIT_BLESS=1 cargo test -p tilefit-core --test core emitters, then review the diff)",
        differ.join("\n")
    );
}

#[test]
fn the_snapshot_folder_holds_exactly_what_the_exporters_render() {
    let made: Vec<String> = rendered().into_iter().map(|(name, _)| name).collect();
    let mut stale = Vec::new();
    for entry in std::fs::read_dir(snapshots()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !name.starts_with("fixture.") && !made.contains(&name) {
            stale.push(name);
        }
    }
    assert!(stale.is_empty(), "snapshots no exporter renders: {stale:?}");
}

#[test]
fn the_same_fixtures_render_the_same_text_twice() {
    assert_eq!(rendered(), rendered(), "an exporter is not deterministic");
}
