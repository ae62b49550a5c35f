//! Reports from saved results (`tilefit report`), without compiling: the Markdown parses as
//! tables with a real Markdown parser, the HTML cliff map renders in headless Chromium and shows
//! the cliff, the gates, and the exported per-arch configs.

use std::path::{Path, PathBuf};
use std::process::Command;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use serde_json::Value;

use super::{Run, fixture, scratch, tilefit_with};

fn probe_fixture() -> String {
    fixture("reports/mla_probe.json")
}

fn replay_fixture() -> String {
    fixture("reports/h200_replay.json")
}

fn report(args: &[&str]) -> Run {
    let mut all = vec!["report"];
    all.extend(args);
    tilefit_with(&all, None, &[])
}

/// Every table in a Markdown text, as rows of cells (the header row first).
fn markdown_tables(text: &str) -> Vec<Vec<Vec<String>>> {
    let mut tables = Vec::new();
    let (mut table, mut row, mut cell): (Vec<Vec<String>>, Vec<String>, String) =
        Default::default();
    for event in Parser::new_ext(text, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Table(_)) => table.clear(),
            Event::End(TagEnd::Table) => tables.push(std::mem::take(&mut table)),
            Event::Start(Tag::TableHead | Tag::TableRow) => row.clear(),
            Event::End(TagEnd::TableHead | TagEnd::TableRow) => {
                table.push(std::mem::take(&mut row));
            }
            Event::Start(Tag::TableCell) => cell.clear(),
            Event::End(TagEnd::TableCell) => row.push(std::mem::take(&mut cell)),
            Event::Text(text) | Event::Code(text) => cell.push_str(&text),
            _ => {}
        }
    }
    tables
}

#[test]
fn markdown_parses_as_tables() {
    let run = report(&[&probe_fixture(), "--markdown"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let tables = markdown_tables(&run.stdout);
    assert_eq!(
        tables.len(),
        3,
        "the sweep and one recommendation table per kv dtype: {}",
        run.stdout
    );
    for table in &tables {
        let width = table[0].len();
        assert!(
            table.iter().all(|row| row.len() == width),
            "ragged table: {table:?}"
        );
    }
    let sweep = &tables[0];
    assert_eq!(sweep[0][0], "config");
    assert!(
        sweep[0].iter().any(|h| h.starts_with("rtx-pro-6000")),
        "{:?}",
        sweep[0]
    );
    assert_eq!(sweep.len(), 18, "header, budget row and 16 configs");
    let fp8_wide = sweep
        .iter()
        .find(|r| r[0] == "kv_dtype=fp8e4nv BLOCK_N=64 num_stages=2")
        .unwrap();
    assert!(
        fp8_wide.iter().any(|c| c.contains("OVER +54,272")),
        "{fp8_wide:?}"
    );

    let run = report(&[&replay_fixture(), "--markdown"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let tables = markdown_tables(&run.stdout);
    assert_eq!(tables.len(), 1);
    assert_eq!(
        tables[0].len(),
        14,
        "header, budget row and 12 kernel variants"
    );
    assert!(tables[0].iter().all(|row| row.len() == tables[0][0].len()));
}

/// The classes of the heatmap cells of the row labelled `label`, in column order.
fn row_classes(html: &str, label: &str) -> Vec<String> {
    let start = html
        .find(&format!("<tr><th>{label}</th>"))
        .unwrap_or_else(|| panic!("no row {label}"));
    let row = &html[start..start + html[start..].find("</tr>").unwrap()];
    row.split("<td class=\"cell ")
        .skip(1)
        .map(|cell| cell.split('"').next().unwrap().to_owned())
        .collect()
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            let out = Command::new("which").arg(name).output().ok()?;
            out.status
                .success()
                .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        })
}

fn headless(browser: &Path, args: &[&str]) -> std::process::Output {
    let profile = scratch("chromium-profile");
    Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .output()
        .expect("chromium runs")
}

#[test]
fn the_cliff_map_shows_the_cliff_in_a_browser() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let html_path = dir.join("mla-cliff-map.html");
    let run = report(&[&probe_fixture(), "--html", html_path.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(
        !html.contains("http://") && !html.contains("https://") && !html.contains("<script"),
        "self-contained"
    );
    // Columns: h100, b200, rtx-pro-6000, gb10, rtx-4090, mi300x.
    let columns = ["h100", "b200", "rtx-pro-6000", "gb10", "rtx-4090", "mi300x"];
    for (i, device) in columns.iter().enumerate() {
        assert!(
            html.find(&format!("<th>{device}<br>")).is_some(),
            "column {i} {device}"
        );
    }
    for stages in 2..=4 {
        let classes = row_classes(
            &html,
            &format!("kv_dtype=fp8e4nv BLOCK_N=64 num_stages={stages}"),
        );
        assert_eq!(
            &classes[..5],
            ["ok", "ok", "over", "over", "over"],
            "fp8 at {stages} stages: {classes:?}"
        );
    }
    assert_eq!(
        row_classes(&html, "kv_dtype=fp8e4nv BLOCK_N=64 num_stages=1")[..5],
        ["ok"; 5]
    );
    assert!(
        html.contains("OVER +54,272"),
        "the overshoot is written, not only colored"
    );
    assert!(
        html.contains("title=\"155,648 bytes of rtx-pro-6000&#39;s")
            || html.contains("title=\"155,648 bytes of rtx-pro-6000's 101,376"),
        "tooltip"
    );
    assert!(
        html.contains("budget 101,376") && html.contains("budget 232,448"),
        "budget lines"
    );
    assert!(html.contains("Recommended config per device"));
    assert!(html.contains("prefers-color-scheme: dark") && html.contains("@media print"));

    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI installs chromium; it must be there"
        );
        eprintln!(
            "skipping the screenshot: no chromium on this machine (Debian: apt-get install chromium)"
        );
        return;
    };
    let url = format!("file://{}", html_path.display());
    let dom = headless(&browser, &["--dump-dom", &url]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("class=\"cell over\""),
        "the browser rendered the map: {}",
        &dom[..dom.len().min(500)]
    );
    let screenshot = dir.join("mla-cliff-map.png");
    let _ = std::fs::remove_file(&screenshot);
    let shot = headless(
        &browser,
        &[
            &format!("--screenshot={}", screenshot.display()),
            "--window-size=1500,2200",
            &url,
        ],
    );
    let size = std::fs::metadata(&screenshot).map_or(0, |m| m.len());
    assert!(
        size > 50_000,
        "a screenshot of the map ({size} bytes): {}",
        String::from_utf8_lossy(&shot.stderr)
    );
    eprintln!("screenshot kept at {}", screenshot.display());
}

#[test]
fn the_replay_cliff_map_has_a_section_per_kernel() {
    let html_path = scratch("replay-html").join("replay.html");
    let run = report(&[&replay_fixture(), "--html", html_path.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert_eq!(
        html.matches("<section>\n<h2>").count(),
        3,
        "matmul, mla and the problems list"
    );
    assert!(html.contains("<h2>matmul_kernel <span class=\"muted\">matmul.py:10</span></h2>"));
    assert!(html.contains("produced by 3.6.0, replayed by 3.6.0"));
}

#[test]
fn gates_on_saved_results() {
    let run = report(&[&probe_fixture(), "--fail-on", "over-budget"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("tilefit: gate failed (24 findings): "),
        "{}",
        run.stderr
    );
    let run = report(&[&probe_fixture(), "--fail-on", "near-budget=99"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("5 fit but use 99% or more of the budget: ")
            && run.stderr.contains("on mi300x (65,536 of 65,536 bytes)"),
        "{}",
        run.stderr
    );
    let run = report(&[&probe_fixture(), "--fail-on", "compile-error"]);
    assert_eq!(
        run.code, 0,
        "nothing fails to compile on this fleet: {}",
        run.stderr
    );
    let run = report(&[&probe_fixture(), "--fail-on", "near-budget=120"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("not a percentage"), "{}", run.stderr);
    let run = report(&[&replay_fixture(), "--fail-on", "over-budget,compile-error"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("over budget: ") && run.stderr.contains(" do not compile: "),
        "{}",
        run.stderr
    );
}

#[test]
fn emitted_configs_are_keyed_by_arch_and_device_name() {
    let out = scratch("emit").join("configs.json");
    let run = report(&[&probe_fixture(), "--emit-configs", out.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let configs: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(configs["schema_version"], 1);
    let choice = |arch: &str, kv: &str| -> Value {
        configs["by_arch"][arch]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["variant"]["kv_dtype"] == kv)
            .unwrap()
            .clone()
    };
    assert_eq!(choice("sm_120", "fp8e4nv")["config"]["BLOCK_N"], 64);
    assert_eq!(choice("sm_120", "fp8e4nv")["config"]["num_stages"], 1);
    assert_eq!(choice("sm_120", "fp8e4nv")["baseline_fits"], false);
    assert_eq!(choice("sm_90", "fp8e4nv")["config"]["num_stages"], 4);
    assert_eq!(configs["device_names"]["NVIDIA GeForce RTX 5090"], "sm_120");
    assert_eq!(configs["device_names"]["NVIDIA H100 80GB HBM3"], "sm_90");
    assert_eq!(configs["device_names"]["NVIDIA GB10"], "sm_121");
    assert_eq!(configs["devices"]["rtx-pro-6000"], "sm_120");

    let run = report(&[&replay_fixture(), "--emit-configs", out.to_str().unwrap()]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("needs a probe report"),
        "{}",
        run.stderr
    );
}

#[test]
fn bad_report_files_are_exit_2() {
    let dir = scratch("bad-report");
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, "{not json").unwrap();
    let run = report(&[garbage.to_str().unwrap()]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("is not JSON"), "{}", run.stderr);
    let other = dir.join("other.json");
    std::fs::write(&other, r#"{"schema_version": 1, "kind": "mystery"}"#).unwrap();
    let run = report(&[other.to_str().unwrap()]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("not `probe`, `replay` or `capture`"),
        "{}",
        run.stderr
    );
    let run = report(&["/no/such/results.json"]);
    assert_eq!(run.code, 2);
}

/// `--fail-on baseline` on the MLA example's saved report: the baseline (BLOCK_N=64, two stages)
/// misses devices; the configs the probe exports per arch, shipped instead, miss none.
#[test]
fn the_baseline_gate_fails_until_the_exported_configs_are_shipped() {
    let saved = fixture("reports/mla_probe.json");
    let run = tilefit_with(&["report", &saved, "--fail-on", "baseline"], None, &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("shipped configs miss a device: kv_dtype="),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("BLOCK_N=64 num_stages=2 on rtx-pro-6000 +"),
        "{}",
        run.stderr
    );
    let dir = scratch("gate-baseline");
    let exported = dir.join("configs.json");
    let run = tilefit_with(
        &[
            "report",
            &saved,
            "--emit-configs",
            exported.to_str().unwrap(),
        ],
        None,
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = tilefit_with(
        &[
            "report",
            &saved,
            "--fail-on",
            "baseline",
            "--shipped",
            exported.to_str().unwrap(),
        ],
        None,
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// `--baseline OLD.json`: findings the earlier report already had do not fail; a new one does.
#[test]
fn a_baseline_report_lets_only_new_findings_fail() {
    let saved = fixture("reports/mla_probe.json");
    let run = tilefit_with(
        &[
            "report",
            &saved,
            "--fail-on",
            "over-budget",
            "--baseline",
            &saved,
        ],
        None,
        &[],
    );
    assert_eq!(run.code, 0, "unchanged findings: {}", run.stderr);
    assert!(
        run.stderr.contains("are in the baseline report"),
        "{}",
        run.stderr
    );
    // An older report where one over-budget cell still fitted: that cell is new now.
    let mut old: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let cell = old["results"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .flat_map(|r| r["verdicts"].as_array_mut().unwrap().iter_mut())
        .find(|v| v["verdict"] == "over-budget")
        .unwrap();
    cell["verdict"] = Value::from("fits");
    let dir = scratch("gate-old-report");
    let old_path = dir.join("old.json");
    std::fs::write(&old_path, old.to_string()).unwrap();
    let run = tilefit_with(
        &[
            "report",
            &saved,
            "--fail-on",
            "over-budget",
            "--baseline",
            old_path.to_str().unwrap(),
        ],
        None,
        &[],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("gate failed (1 findings): 1 over budget"),
        "{}",
        run.stderr
    );
}
