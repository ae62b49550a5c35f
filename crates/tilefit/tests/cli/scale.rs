//! Scale: forked workers compile what spawned ones do, and a sharded probe merges into the
//! report one unsharded run makes; merges of shards that are not one run are refused.

use std::path::Path;

use serde_json::Value;

use crate::{fixture, json_of, probe, python, scratch, tilefit_with};

fn example(name: &str) -> String {
    format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// (config, arch) -> bytes or error kind, for every result.
fn sizes(report: &Value) -> Vec<(String, String, String)> {
    let mut cells: Vec<_> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let outcome = r["shared_bytes"]
                .as_u64()
                .map_or_else(|| r["error"]["kind"].to_string(), |b| b.to_string());
            (
                r["config"].to_string(),
                r["arch"].as_str().unwrap().to_owned(),
                outcome,
            )
        })
        .collect();
    cells.sort();
    cells
}

/// One spec probed with forked workers and with spawned ones: the forked run must really fork
/// (at least two workers, a later start under a second) and give the spawned run's bytes.
/// The spec (a path) probed with forked and with spawned workers, with `extra` flags.
fn forked_equals_spawned(spec: &str, extra: &[&str]) {
    let run = |start: &'static str| {
        let mut args = vec!["--json", "-", "--worker-start", start];
        args.extend(extra);
        json_of(&probe(spec, &scratch(start), &args))
    };
    let (forked, spawned) = (run("fork"), run("spawn"));
    let workers = &forked["stats"]["workers"];
    assert_eq!(workers["start"], "fork", "{spec}: {workers}");
    assert!(workers.get("fallback").is_none(), "{spec}: {workers}");
    // Two job threads: the worker the interface request started (which a thread takes
    // for its jobs) and at least one forked for jobs, so a later start is always measured.
    assert!(
        workers["started"].as_u64().is_some_and(|n| n >= 2),
        "{spec}: {workers}"
    );
    assert!(
        workers["later_start_s"].as_f64().is_some_and(|s| s < 1.0),
        "{spec}: {workers}"
    );
    assert_eq!(spawned["stats"]["workers"]["start"], "spawn");
    let (forked, spawned) = (sizes(&forked), sizes(&spawned));
    assert!(forked.len() >= 16, "{spec}: {} results", forked.len());
    assert_eq!(
        forked, spawned,
        "{spec}: forked and spawned workers disagree"
    );
}

#[test]
fn forked_workers_compile_to_the_bytes_spawned_ones_do() {
    // A slice of the MLA example on an NVIDIA arch of each budget class and an AMD one; the
    // exhaustive version below takes every example on its whole fleet, the config-file one
    // included.
    forked_equals_spawned(
        &fixture("mla_small.toml"),
        &["--targets", "h100,rtx-pro-6000,mi300x"],
    );
}

#[test]
#[ignore = "exhaustive tier: .ci/run runs it with `-- --ignored`"]
fn forked_workers_compile_every_example_to_the_bytes_spawned_ones_do() {
    for spec in [
        "mla_decode/spec.toml",
        "matmul/spec.toml",
        "matmul/autotune.toml",
        "attention/spec.toml",
        "moe/spec.toml",
    ] {
        forked_equals_spawned(&example(spec), &[]);
    }
}

/// The report with its timing and host fields left out: what must not change.
fn without_timing(mut report: Value) -> Value {
    let stats = report["stats"].as_object_mut().unwrap();
    stats.remove("seconds");
    stats.remove("workers");
    for result in report["results"].as_array_mut().unwrap() {
        result.as_object_mut().unwrap().remove("compile_seconds");
    }
    report
}

fn shards(spec: &str, count: usize, cache: &Path, extra: &[&str]) -> Vec<String> {
    (1..=count)
        .map(|k| {
            let out = cache.join(format!("shard-{k}.json"));
            let shard = format!("{k}/{count}");
            let mut args = vec!["--shard", shard.as_str(), "--json", out.to_str().unwrap()];
            args.extend(extra);
            let run = probe(spec, cache, &args);
            assert_eq!(run.code, 0, "{}", run.stderr);
            assert!(
                run.stderr.contains(&format!("shard {k}/{count} compiled")),
                "{}",
                run.stderr
            );
            out.display().to_string()
        })
        .collect()
}

fn merge(files: &[String], extra: &[&str]) -> crate::Run {
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(extra);
    tilefit_with(&args, None, &[])
}

#[test]
fn three_shards_merge_into_the_report_of_one_run() {
    three_shards_merge("mla_decode/spec.toml", "h100,rtx-pro-6000,mi300x");
}

#[test]
#[ignore = "exhaustive tier: .ci/run runs it with `-- --ignored`"]
fn three_shards_of_the_matmul_sweep_merge_into_the_report_of_one_run() {
    three_shards_merge("matmul/spec.toml", "h100,rtx-pro-6000");
}

fn three_shards_merge(spec: &str, targets: &str) {
    let name = spec.replace('/', "-");
    let spec = example(spec);
    let whole = json_of(&probe(
        &spec,
        &scratch(&format!("whole-{name}")),
        &["--targets", targets, "--json", "-"],
    ));
    let cache = scratch(&format!("sharded-{name}"));
    let files = shards(&spec, 3, &cache, &["--targets", targets]);
    // Every job is in exactly one shard, and the shards share the work.
    let counts: Vec<usize> = files
        .iter()
        .map(|f| {
            let shard: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            shard["outcomes"].as_array().unwrap().len()
        })
        .collect();
    let jobs = usize::try_from(whole["stats"]["jobs"].as_u64().unwrap()).unwrap();
    assert_eq!(counts.iter().sum::<usize>(), jobs, "{counts:?}");
    assert!(counts.iter().all(|&c| c * 3 >= jobs / 2), "{counts:?}");
    let merged = merge(&files, &["--json", "-"]);
    let merged = json_of(&merged);
    assert_eq!(
        merged["recommendations"], whole["recommendations"],
        "{spec}"
    );
    assert_eq!(
        without_timing(merged),
        without_timing(whole),
        "{spec}: the merged report differs from the single run's"
    );
    // The terminal report too, but for its timing line.
    let text = merge(&files, &[]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(text.stdout.contains("Recommended"), "{}", text.stdout);
}

#[test]
fn shards_that_are_not_one_run_are_refused() {
    let cache = scratch("refused");
    let small = fixture("mla_small.toml");
    let files = shards(&small, 2, &cache, &["--targets", "h100"]);
    // Another spec's shard: the other half of a run of different inputs.
    let other_dir = scratch("refused-other");
    let other = other_dir.join("mla_other.toml");
    let text = std::fs::read_to_string(&small)
        .unwrap()
        .replace("../../../../examples", &example(""))
        .replace("BLOCK_N = [32, 64]", "BLOCK_N = [16, 64]");
    std::fs::write(&other, text).unwrap();
    let foreign = shards(
        other.to_str().unwrap(),
        2,
        &other_dir,
        &["--targets", "h100"],
    );
    let mixed = merge(&[files[0].clone(), foreign[1].clone()], &[]);
    assert_eq!(mixed.code, 2, "{}", mixed.stderr);
    assert!(
        mixed.stderr.contains("are not of one run"),
        "{}",
        mixed.stderr
    );
    assert!(mixed.stderr.contains("hint:"), "{}", mixed.stderr);

    let missing = merge(&files[..1], &[]);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("1 of 2 shards are missing: 2/2"),
        "{}",
        missing.stderr
    );
    let twice = merge(&[files[0].clone(), files[0].clone()], &[]);
    assert_eq!(twice.code, 2);
    assert!(
        twice.stderr.contains("shard 1/2 is given twice"),
        "{}",
        twice.stderr
    );

    // The spec changed after the shards ran: the merge plans another run and says so.
    let edited = scratch("refused-edited").join("mla_small.toml");
    std::fs::write(
        &edited,
        std::fs::read_to_string(&small)
            .unwrap()
            .replace("../../../../examples", &example(""))
            .replace("num_stages = [1, 2]", "num_stages = [1, 2, 3]"),
    )
    .unwrap();
    let stale = merge(&files, &["--spec", edited.to_str().unwrap()]);
    assert_eq!(stale.code, 2, "{}", stale.stderr);
    assert!(
        stale.stderr.contains("were not made from"),
        "{}",
        stale.stderr
    );

    // A whole report is not a shard, and a shard is not a report.
    let report = cache.join("report.json");
    json_of(&probe(
        &small,
        &cache,
        &["--targets", "h100", "--json", "-"],
    ));
    std::fs::write(
        &report,
        probe(&small, &cache, &["--targets", "h100", "--json", "-"]).stdout,
    )
    .unwrap();
    let not_shard = merge(&[report.display().to_string()], &[]);
    assert_eq!(not_shard.code, 2);
    assert!(
        not_shard.stderr.contains("not `probe-shard`"),
        "{}",
        not_shard.stderr
    );
    let shown = tilefit_with(&["report", &files[0]], None, &[]);
    assert_eq!(shown.code, 2);
    assert!(shown.stderr.contains("tilefit merge"), "{}", shown.stderr);

    // A shard needs a file, and K/N must make sense.
    let python = python().to_str().unwrap();
    let bad = tilefit_with(
        &[
            "probe", &small, "--python", python, "--shard", "4/3", "--json", "x.json",
        ],
        None,
        &[],
    );
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("not a shard"), "{}", bad.stderr);
    let no_file = tilefit_with(
        &["probe", &small, "--python", python, "--shard", "1/3"],
        None,
        &[],
    );
    assert_eq!(no_file.code, 2);
    assert!(no_file.stderr.contains("--json"), "{}", no_file.stderr);
}

#[test]
fn a_version_matrix_has_a_column_group_per_triton_and_diff_gates_a_flip() {
    // The test Python's Triton (the pinned one) and the release before it, in a managed toolchain.
    let pinned = tilefit_core::compile::toolchain::DEFAULT_TRITON_VERSION;
    let older = "3.6.0";
    let versions = format!("{older},{pinned}");
    let small = fixture("mla_small.toml");
    let cache = scratch("matrix");
    let run = probe(&small, &cache, &["--triton", &versions]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for version in [older, pinned] {
        assert!(
            run.stdout.contains(&format!("Triton {version} h100 sm_90")),
            "{}",
            run.stdout
        );
        assert!(
            run.stdout.contains(&format!(
                "Recommended config per device under Triton {version}"
            )),
            "{}",
            run.stdout
        );
    }
    assert!(
        run.stdout
            .contains(&format!("Triton {older} -> {pinned}: ")),
        "{}",
        run.stdout
    );
    let matrix_file = cache.join("matrix.json");
    let run = probe(
        &small,
        &cache,
        &[
            "--triton",
            &versions,
            "--json",
            matrix_file.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let matrix: Value =
        serde_json::from_str(&std::fs::read_to_string(&matrix_file).unwrap()).unwrap();
    assert_eq!(matrix["kind"], "probe-matrix");
    let reports = matrix["versions"].as_array().unwrap();
    assert_eq!(reports[0]["triton_version"], older);
    assert_eq!(reports[1]["triton_version"], pinned);
    for report in reports {
        assert!(!report["recommendations"].as_array().unwrap().is_empty());
    }
    // Whatever changed between the two releases, the matrix's diff is what `tilefit diff` says.
    let old_file = cache.join("old.json");
    let new_file = cache.join("new.json");
    std::fs::write(&old_file, reports[0].to_string()).unwrap();
    std::fs::write(&new_file, reports[1].to_string()).unwrap();
    let both = tilefit_with(
        &[
            "diff",
            old_file.to_str().unwrap(),
            new_file.to_str().unwrap(),
            "--json",
            "-",
        ],
        None,
        &[],
    );
    let diffs: Value = serde_json::from_str(&both.stdout).unwrap();
    assert_eq!(diffs[0], matrix["diffs"][0]);
    let alone = tilefit_with(&["diff", matrix_file.to_str().unwrap()], None, &[]);
    assert!(
        alone
            .stdout
            .contains(&format!("Triton {older} -> {pinned}")),
        "{}",
        alone.stdout
    );

    a_constructed_flip_fails_the_diff(&reports[0], &reports[1], &cache);
}

/// `tilefit diff` exits 1 on a config that fit a device and no longer does, 0 on no change.
fn a_constructed_flip_fails_the_diff(old: &Value, new: &Value, cache: &Path) {
    let old_file = cache.join("flip-old.json");
    let new_file = cache.join("flip-new.json");
    std::fs::write(&old_file, old.to_string()).unwrap();
    // A constructed flip: one config that fits the H100 needs 240,000 bytes more in the new report.
    let mut flipped = new.clone();
    let result = flipped["results"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["arch"] == "sm_90" && r["verdicts"][0]["verdict"] == "fits")
        .unwrap();
    let bytes = result["shared_bytes"].as_u64().unwrap() + 240_000;
    result["shared_bytes"] = bytes.into();
    result["verdicts"][0]["verdict"] = "over-budget".into();
    std::fs::write(&new_file, flipped.to_string()).unwrap();
    let gate = tilefit_with(
        &[
            "diff",
            old_file.to_str().unwrap(),
            new_file.to_str().unwrap(),
        ],
        None,
        &[],
    );
    assert_eq!(gate.code, 1, "{}{}", gate.stdout, gate.stderr);
    assert!(
        gate.stdout.contains("fits -> over-budget (BREAKS)"),
        "{}",
        gate.stdout
    );
    assert!(gate.stdout.contains("+240,000"), "{}", gate.stdout);
    assert!(
        gate.stderr
            .contains("1 configs that fit a device no longer do"),
        "{}",
        gate.stderr
    );
    let same = tilefit_with(
        &[
            "diff",
            old_file.to_str().unwrap(),
            old_file.to_str().unwrap(),
        ],
        None,
        &[],
    );
    assert_eq!(same.code, 0, "{}", same.stderr);
    assert!(
        same.stdout.contains("0 of 16 results changed"),
        "{}",
        same.stdout
    );
}

/// `--triton-from-files`: the files tuned with Triton 3.5.1 (SGLang's `triton_3_5_1/` folder) are
/// judged with 3.5.1 too; the 3.4.0 folder's are noted as older than tilefit can run, and the
/// run goes on.
#[test]
fn config_files_are_judged_with_the_triton_they_were_tuned_with_too() {
    // One cache for the three runs: the terminal run reads the JSON run's results back.
    let cache = scratch("tuned");
    let report = json_of(&probe(
        &fixture("field/folder.toml"),
        &cache,
        &["--triton-from-files", "--json", "-"],
    ));
    let files = report["listed"]["files"].as_array().unwrap();
    let mut under_351 = 0;
    for file in files {
        let tuned = file["tuned_with"].as_str().unwrap_or_default();
        let under = &file["under_tuned"];
        if file["device"].is_null() || file.get("undescribed").is_some() {
            assert!(under.is_null(), "{file}");
            continue;
        }
        match tuned {
            "3.5.1" => {
                under_351 += 1;
                assert_eq!(under["triton"], "3.5.1");
                let entries = under["entries"].as_array().unwrap();
                assert_eq!(entries.len(), file["entries"].as_array().unwrap().len());
                for (then, now) in entries.iter().zip(file["entries"].as_array().unwrap()) {
                    assert_eq!(then["key"], now["key"]);
                    let bytes = then["shared_bytes"].as_u64().unwrap();
                    if then["verdict"] == "over-budget" {
                        assert!(then["over_by"].as_u64().unwrap() < bytes, "{then}");
                    }
                }
            }
            "3.4.0" => assert!(
                under["error"].as_str().unwrap().contains("older than 3.5"),
                "{file}"
            ),
            other => panic!("unexpected tuning Triton {other}"),
        }
    }
    assert_eq!(under_351, 3, "the triton_3_5_1/ folder's three files");
    let text = probe(
        &fixture("field/folder.toml"),
        &cache,
        &["--triton-from-files"],
    );
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout
            .contains("(tuned with Triton 3.5.1: 3/3 fit under it)"),
        "{}",
        text.stdout
    );
    let refused = probe(&fixture("mla_small.toml"), &cache, &["--triton", "3.4.0"]);
    assert_eq!(refused.code, 2);
    assert!(
        refused.stderr.contains("older than 3.5"),
        "{}",
        refused.stderr
    );
}
