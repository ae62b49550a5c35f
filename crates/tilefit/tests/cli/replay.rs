//! `tilefit replay` on a real Triton cache built inside the test (the MLA example compiled for
//! sm_90 by Triton itself): every recompiled cell equals a direct compile for its target; the
//! gate; damaged and partial caches; a cache from another Triton version; bad directories.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

use super::{Run, direct_mla_compile, python, scratch, tilefit_with};

/// (kv dtype, BLOCK_N, num_stages): chosen so their sm_90 sizes differ, which identifies each
/// cached variant by its original bytes.
const CONFIGS: [(&str, u32, u32); 3] = [("bf16", 32, 1), ("bf16", 64, 2), ("fp8e4nv", 64, 2)];

/// A real cache: Triton's own compile of three MLA configs for sm_90, written where Triton writes.
fn real_cache() -> &'static (PathBuf, Vec<u64>) {
    static CACHE: OnceLock<(PathBuf, Vec<u64>)> = OnceLock::new();
    CACHE.get_or_init(|| {
        let dir = scratch("replay-source-cache");
        let sizes = CONFIGS
            .iter()
            .map(|c| direct_mla_compile("sm_90", *c, &dir))
            .collect();
        (dir, sizes)
    })
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Replay `cache`, keeping results under a folder of its own named `results` (reused by the calls
/// of one test, so a re-run can hit the result cache).
fn replay(cache: &Path, results: &str, extra: &[&str]) -> Run {
    let results = super::scratch_root().join(format!("results-{results}"));
    let mut args = vec![
        "replay",
        cache.to_str().unwrap(),
        "--python",
        python().to_str().unwrap(),
        "--jobs",
        "2",
    ];
    args.extend(extra);
    tilefit_with(&args, None, &[("TILEFIT_CACHE_DIR", &results)])
}

#[test]
fn every_recompiled_cell_equals_a_direct_compile() {
    let (cache, sm90_sizes) = real_cache();
    let run = replay(
        cache,
        "cells",
        &["--targets", "h100,rtx-pro-6000,mi300x", "--json", "-"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["kernels"].as_array().unwrap().len(), 3);
    assert_eq!(
        report["versions"][0]["produced_by"],
        report["versions"][0]["replayed_with"]
    );
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 9, "3 kernels x 3 archs");
    let scratch_cache = scratch("replay-direct");
    for (config, sm90) in CONFIGS.iter().zip(sm90_sizes) {
        let kernel = report["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .position(|k| k["original_shared_bytes"] == *sm90)
            .unwrap_or_else(|| panic!("no cached variant with {sm90} bytes"));
        let cell = |arch: &str| {
            results
                .iter()
                .find(|r| r["kernel"]["index"] == kernel && r["arch"] == arch)
                .unwrap()
        };
        assert_eq!(
            cell("sm_90")["shared_bytes"],
            *sm90,
            "recompiling for the original arch reproduces it"
        );
        assert_eq!(cell("sm_90")["original_shared_bytes"], *sm90);
        let sm120 = direct_mla_compile("sm_120", *config, &scratch_cache);
        assert_eq!(cell("sm_120")["shared_bytes"], sm120, "{config:?}");
        let verdict = &cell("sm_120")["verdicts"][0];
        assert_eq!(verdict["device"], "rtx-pro-6000");
        let over = sm120 > 101_376;
        assert_eq!(
            verdict["verdict"],
            if over { "over-budget" } else { "fits" },
            "{config:?}"
        );
        assert_eq!(
            cell("gfx942")["status"],
            "ok",
            "NVIDIA IR replays on AMD too"
        );
        assert!(
            cell("sm_120")["kernel"]["source"]
                .as_str()
                .unwrap()
                .starts_with("mla_decode.py:")
        );
    }
    // The terminal table names variants and shows the original bytes beside the new ones.
    let run = replay(cache, "cells", &["--targets", "h100,rtx-pro-6000"]);
    assert!(run.stdout.contains("compiled for"), "{}", run.stdout);
    assert!(run.stdout.contains("OVER +"), "{}", run.stdout);
    assert!(run.stdout.contains("tile ranges"), "{}", run.stdout);
    assert!(
        run.stdout.contains("0 compiled, 6 from cache"),
        "a re-run compiles nothing: {}",
        run.stdout
    );
}

#[test]
fn the_gate_fails_on_over_budget() {
    let (cache, _) = real_cache();
    let run = replay(
        cache,
        "gate",
        &["--targets", "rtx-pro-6000", "--fail-on", "over-budget"],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("tilefit: gate failed (2 findings): 2 over budget: mla_decode_stage1 #"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("on rtx-pro-6000 +"), "{}", run.stderr);
    let run = replay(
        cache,
        "gate",
        &["--targets", "h100", "--fail-on", "over-budget"],
    );
    assert_eq!(run.code, 0, "everything fits an H100: {}", run.stderr);
}

#[test]
fn damaged_and_partial_entries_are_skipped_with_the_reason() {
    let (source, _) = real_cache();
    let cache = scratch("replay-damaged");
    copy_dir(source, &cache);
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    // Garble one metadata file, remove another entry's IR.
    std::fs::write(
        entries[0].join("mla_decode_stage1.json"),
        "{\"hash\": \"abc\", \"target\": ",
    )
    .unwrap();
    std::fs::remove_file(entries[1].join("mla_decode_stage1.ttir")).unwrap();
    // A launcher build (not a kernel) and an IR file without metadata.
    std::fs::create_dir_all(cache.join("LAUNCHER")).unwrap();
    std::fs::write(cache.join("LAUNCHER/cuda_utils.so"), b"\x7fELF").unwrap();
    std::fs::create_dir_all(cache.join("ORPHAN")).unwrap();
    std::fs::write(cache.join("ORPHAN/k.ttir"), "module {}").unwrap();

    let run = replay(&cache, "damaged", &["--list"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .starts_with("5 cache entries: 1 kernel variants, 1 other entries, 3 skipped"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("garbled JSON"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("no `mla_decode_stage1.ttir`: nothing to recompile (a partial entry)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("IR without its metadata JSON"),
        "{}",
        run.stdout
    );

    let run = replay(&cache, "damaged", &["--targets", "sm_120", "--json", "-"]);
    assert_eq!(run.code, 0, "the run goes on: {}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["results"].as_array().unwrap().len(), 1);
    assert_eq!(report["skipped"].as_array().unwrap().len(), 3);
}

#[test]
fn a_second_triton_version_is_a_separate_group() {
    let (source, _) = real_cache();
    let cache = scratch("replay-two-versions");
    copy_dir(source, &cache);
    let entry = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .min()
        .unwrap();
    let metadata = entry.join("mla_decode_stage1.json");
    let mut json: Value =
        serde_json::from_str(&std::fs::read_to_string(&metadata).unwrap()).unwrap();
    let ours = json["triton_version"].as_str().unwrap().to_owned();
    json["triton_version"] = Value::from("3.6.0");
    std::fs::write(&metadata, json.to_string()).unwrap();

    let run = replay(&cache, "versions", &["--list"]);
    assert!(run.stdout.contains("Triton 3.6.0"), "{}", run.stdout);
    assert!(
        run.stdout.contains(&format!("Triton {ours}")),
        "{}",
        run.stdout
    );

    // With --python naming one interpreter, the 3.6.0 group is replayed by it and says so.
    let run = replay(&cache, "versions", &["--targets", "sm_90", "--json", "-"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "kernels produced by Triton 3.6.0 are replayed with Triton {ours}"
        )),
        "{}",
        run.stderr
    );
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let versions = report["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 2, "never a silent mix: {versions:?}");
    assert!(
        versions
            .iter()
            .any(|v| v["produced_by"] == "3.6.0" && v["replayed_with"] == ours.as_str())
    );
    assert!(
        versions
            .iter()
            .any(|v| v["produced_by"] == ours.as_str() && v["kernels"] == 2)
    );
}

#[test]
fn bad_directories_are_exit_2() {
    let run = tilefit_with(&["replay", "/no/such/cache"], None, &[]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("error: the Triton cache `/no/such/cache` is not a directory"),
        "{}",
        run.stderr
    );
    let empty = scratch("replay-empty");
    let run = tilefit_with(&["replay", empty.to_str().unwrap()], None, &[]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("no replayable kernels in"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("hint: "), "{}", run.stderr);
}

/// A replay spread over two shards merges into the single replay's report (timing aside), and a
/// shard of another cache is refused.
#[test]
fn a_sharded_replay_merges_into_the_single_replay_s_report() {
    let (cache, _) = real_cache();
    let whole = replay(cache, "shard-whole", &["--json", "-"]);
    assert_eq!(whole.code, 0, "{}", whole.stderr);
    let whole: Value = serde_json::from_str(&whole.stdout).unwrap();
    let out = scratch("replay-shards");
    let files: Vec<String> = (1..=2)
        .map(|k| {
            let file = out.join(format!("shard-{k}.json")).display().to_string();
            let run = replay(
                cache,
                &format!("shard-{k}"),
                &["--shard", &format!("{k}/2"), "--json", &file],
            );
            assert_eq!(run.code, 0, "{}", run.stderr);
            file
        })
        .collect();
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--json", "-"]);
    let merged = tilefit_with(&args, None, &[]);
    assert_eq!(merged.code, 0, "{}", merged.stderr);
    let mut merged: Value = serde_json::from_str(&merged.stdout).unwrap();
    let mut whole = whole;
    for report in [&mut merged, &mut whole] {
        report["stats"].as_object_mut().unwrap().remove("seconds");
    }
    assert!(!whole["results"].as_array().unwrap().is_empty());
    assert_eq!(
        merged, whole,
        "the merged replay differs from the single one"
    );

    // Shards of two different caches are not one run.
    let other = scratch("replay-shards-other");
    copy_dir(cache, &other);
    let entry = std::fs::read_dir(&other)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::remove_dir_all(entry).unwrap();
    let foreign = out.join("foreign-2.json").display().to_string();
    let run = replay(
        &other,
        "shard-foreign",
        &["--shard", "2/2", "--json", &foreign],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mixed = tilefit_with(&["merge", &files[0], &foreign], None, &[]);
    assert_eq!(mixed.code, 2, "{}", mixed.stderr);
    assert!(
        mixed.stderr.contains("are not of one run"),
        "{}",
        mixed.stderr
    );
}
