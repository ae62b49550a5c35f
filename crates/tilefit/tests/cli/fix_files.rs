//! `tilefit probe --emit-files`: engine-ready config files from the MoE example's folder (an RTX
//! 4090 file with an entry over its budget, an H100 file, a file for a device tilefit does not
//! know), for a fleet of desk Blackwells that have no file. Every written entry is judged again by
//! a second probe; the engine-shaped loader (`fixtures/capture/moe_loader.py`) finds each new file
//! under the emulated device and every launch of it fits.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{emulate_python, json_of, probe, scratch, tilefit_with};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .unwrap()
}

const DESK: &str = "rtx-pro-6000,rtx-5090,gb10";

const NEW: [&str; 3] = [
    "E=8,N=14336,device_name=NVIDIA_RTX_PRO_6000_Blackwell_Workstation_Edition.json",
    "E=8,N=14336,device_name=NVIDIA_GeForce_RTX_5090.json",
    "E=8,N=14336,device_name=NVIDIA_GB10.json",
];

const PATCHED: &str = "E=8,N=14336,device_name=NVIDIA_GeForce_RTX_4090.json";

/// The MoE example's files, emitted for the desk fleet into a fresh folder.
fn emitted(name: &str) -> PathBuf {
    let cache = scratch(&format!("{name}-cache"));
    let out = scratch(name).join("files");
    let spec = repo().join("examples/moe/spec.toml");
    let run = probe(
        spec.to_str().unwrap(),
        &cache,
        &["--targets", DESK, "--emit-files", out.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("wrote 1 patched and 3 new config files"),
        "{}",
        run.stderr
    );
    out
}

#[test]
fn emitted_files_fit_their_devices_change_only_what_missed_and_carry_no_foreign_key() {
    let out = emitted("emit-files");
    // The patched copy: only the entry over the RTX 4090's budget changed, by one stage (its
    // tiles as they were), every other byte as the engine shipped it.
    let original =
        std::fs::read_to_string(repo().join("examples/moe/configs").join(PATCHED)).unwrap();
    let patched = std::fs::read_to_string(out.join(PATCHED)).unwrap();
    let changed: Vec<(&str, &str)> = original
        .lines()
        .zip(patched.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(original.lines().count(), patched.lines().count());
    assert_eq!(changed.len(), 1, "{changed:?}");
    let (before, after) = changed[0];
    assert!(before.trim_start().starts_with("\"256\""), "{before}");
    assert_eq!(
        before.replace("\"num_stages\": 4", "\"num_stages\": 3"),
        after
    );

    // New files, named as the engine names them from the name each device reports.
    for name in NEW {
        let text =
            std::fs::read_to_string(out.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let file: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
        // No foreign key: the engine's loader reads every key as a batch size.
        assert!(
            file.keys().all(|k| k.parse::<u64>().is_ok()),
            "{name}: {:?}",
            file.keys()
        );
        assert_eq!(file.len(), 5, "{name}");
    }
    let written: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(written.len(), 6, "{written:?}");

    // The pull request's summary says what the entries are, and the provenance is beside them.
    let summary = std::fs::read_to_string(out.join("SUMMARY.md")).unwrap();
    assert!(
        summary.contains("guaranteed to launch, not tuned for speed"),
        "{summary}"
    );
    assert!(
        summary.contains("| 256 | 147,456 | 98,304 | num_stages 4 -&gt; 3 |"),
        "{summary}"
    );
    let provenance: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("tilefit-provenance.json")).unwrap(),
    )
    .unwrap();
    assert!(provenance["triton"].is_string() && provenance["tilefit"].is_string());
    let files = provenance["files"].as_array().unwrap();
    assert_eq!(files.len(), 4);
    // No desk Blackwell has a file: each new one is derived from the nearest device's, the RTX
    // 4090's (no same-arch file; the same budget, 101,376), not the H100's.
    for file in files.iter().filter(|f| f["kind"] == "new") {
        assert_eq!(file["source"], PATCHED, "{file}");
    }

    // Judged again from the written folder, every entry of every file fits its own device.
    let spec = super::moe_spec(&out.join("*.json").display().to_string());
    let again = scratch("emit-files-again");
    std::fs::write(again.join("spec.toml"), spec).unwrap();
    let report = json_of(&probe(
        again.join("spec.toml").to_str().unwrap(),
        &scratch("emit-files-again-cache"),
        &["--targets", DESK, "--json", "-"],
    ));
    let files = report["listed"]["files"].as_array().unwrap();
    assert_eq!(files.len(), 4);
    for file in files {
        for entry in file["entries"].as_array().unwrap() {
            assert_eq!(entry["verdict"], "fits", "{}: {entry}", file["file"]);
        }
    }
}

#[test]
fn the_engines_loader_finds_each_written_file_under_emulation_and_every_entry_fits() {
    let out = emitted("emit-files-loader");
    let loader = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/capture/moe_loader.py");
    let cache = scratch("emit-files-loader-capture");
    let json = cache.join("capture.json");
    let run = tilefit_with(
        &[
            "capture",
            loader.to_str().unwrap(),
            "--targets",
            DESK,
            "--python",
            emulate_python().to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--fail-on",
            "baseline,none-fits",
            "--",
            out.to_str().unwrap(),
            "8",
            "14336",
        ],
        None,
        &[("TILEFIT_CACHE_DIR", &cache)],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.stdout);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for target in report["targets"].as_array().unwrap() {
        assert!(target["errors"].as_array().unwrap().is_empty(), "{target}");
        let launches = target["launches"].as_array().unwrap();
        assert_eq!(
            launches
                .iter()
                .map(|l| l["count"].as_u64().unwrap())
                .sum::<u64>(),
            5,
            "{target}"
        );
        assert!(launches.iter().all(|l| l["verdict"] == "fits"), "{target}");
    }
}
