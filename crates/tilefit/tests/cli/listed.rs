//! Sweeps from where configs already live (real compiler): a kernel's `@triton.autotune` list and
//! per-device config files in the vLLM/SGLang shape. Bytes are checked against a plain
//! `triton.compile` of the same tiles; the per-device fit, the pruned lists, the files' devices and
//! the files that cannot be used are checked as a user reads them.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Run, compile_binaries, fixture, json_of, python, scratch};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn probe(spec: &Path, cache: &Path, extra: &[&str]) -> Run {
    super::probe(spec.to_str().unwrap(), cache, extra)
}

/// `metadata.shared` of the plain matmul example's tile from a hand-written `triton.compile`.
fn direct_matmul_bytes(arch: &str, (m, n, k, warps, stages): (u32, u32, u32, u32, u32)) -> u64 {
    let dir = scratch(&format!("direct-{arch}-{m}-{n}-{k}-{warps}-{stages}"));
    let config = format!("{arch}:{m}:{n}:{k}:{warps}:{stages}");
    compile_binaries(&dir, &[&config])
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap()
}

fn per_device<'a>(report: &'a Value, device: &str) -> &'a Value {
    report["listed"]["per_device"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["device"] == device)
        .unwrap_or_else(|| panic!("no per-device entry for {device}"))
}

#[test]
fn the_autotune_list_is_the_sweep_with_per_device_fit_and_pruned_lists() {
    let cache = scratch("autotune");
    let spec = examples().join("matmul/autotune.toml");
    let report = json_of(&probe(&spec, &cache, &["--json", "-"]));
    assert_eq!(report["listed"]["kind"], "autotune");
    assert_eq!(report["listed"]["distinct"], 8);
    // The author's key order, then the options.
    assert_eq!(
        report["axes"],
        serde_json::json!(["BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages"])
    );
    // Every autotune config compiled for every arch of the fleet (6 devices, 5 archs).
    assert_eq!(report["results"].as_array().unwrap().len(), 8 * 5);

    // The bytes are the compiler's: the same tiles of the plain matmul example, compiled directly.
    let bytes = |arch: &str, place: u64| -> u64 {
        report["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["arch"] == arch && r["config_index"] == place)
            .unwrap()["shared_bytes"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(
        bytes("sm_90", 5),
        direct_matmul_bytes("sm_90", (128, 256, 64, 8, 4))
    );
    assert_eq!(
        bytes("sm_120", 5),
        direct_matmul_bytes("sm_120", (128, 256, 64, 8, 4))
    );
    assert_eq!(
        bytes("sm_120", 4),
        direct_matmul_bytes("sm_120", (128, 256, 64, 8, 3))
    );

    // Per device: H100 keeps all eight; the 101,376-byte devices lose the larger ones, by the
    // bytes over their budget.
    let h100 = per_device(&report, "h100");
    assert_eq!(h100["fits"].as_array().unwrap().len(), 8);
    for device in ["rtx-pro-6000", "rtx-4090", "l40s"] {
        let fit = per_device(&report, device);
        let over = fit["over"].as_array().unwrap();
        assert!(!over.is_empty(), "{device}: the larger configs miss");
        assert!(
            !fit["fits"].as_array().unwrap().is_empty(),
            "{device}: some fit"
        );
        for pair in over {
            let (place, by) = (pair[0].as_u64().unwrap(), pair[1].as_u64().unwrap());
            let arch = fit["arch"].as_str().unwrap();
            assert_eq!(by, bytes(arch, place) - 101_376, "{device} #{place}");
        }
    }

    // The terminal says it per device.
    let run = probe(&spec, &cache, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("The @triton.autotune configs per device (8 listed")
    );
    assert!(
        run.stdout.contains("h100          sm_90   8/8  all fit"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("#5 +46,080"), "{}", run.stdout);

    // The pruned lists: Python that imports, with triton.Config objects per device.
    let out = scratch("autotune-emit");
    let py = out.join("pruned.py");
    let run = probe(&spec, &cache, &["--emit-configs", py.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let check = std::process::Command::new(python())
        .arg("-c")
        .arg(format!(
            "import runpy, triton\nm = runpy.run_path({:?})\nfor name, n in [('NVIDIA GeForce RTX 4090', 5), ('h100', 8), ('NVIDIA RTX PRO 6000 Blackwell Server Edition', 5), ('sm_120', 5), ('sm_90', 8)]:\n    got = m['configs_for'](name)\n    assert len(got) == n, (name, len(got))\n    assert all(isinstance(c, triton.Config) for c in got)\ntry:\n    m['configs_for']('sm_100')\nexcept KeyError as e:\n    assert 'was not probed' in str(e), e\nelse:\n    raise SystemExit('sm_100 was not probed')\nprint('ok')",
            py.display().to_string()
        ))
        .output()
        .unwrap();
    assert!(
        check.status.success() && String::from_utf8_lossy(&check.stdout).contains("ok"),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    // The JSON export carries the same lists per device.
    let json = out.join("pruned.json");
    let run = probe(&spec, &cache, &["--emit-configs", json.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let export: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let kept = &export["autotune"]["by_device"]["rtx-4090"][0]["kept"];
    assert_eq!(kept, &serde_json::json!([0, 1, 2, 3, 4]));
    assert_eq!(export["autotune"]["none_fits"], serde_json::json!([]));
}

/// The autotune example with the big-tile fixture's list, for an H100 and an RTX PRO 6000.
fn big_tiles_spec(dir: &Path) -> PathBuf {
    let spec_text = std::fs::read_to_string(examples().join("matmul/autotune.toml"))
        .unwrap()
        .replace(
            "file = \"matmul_autotuned.py\"",
            &format!("file = {:?}", fixture("autotuned_big.py")),
        )
        .replace("matmul_kernel_autotuned", "matmul_kernel_big_tiles")
        .replace(
            "devices = [\"h100\", \"rtx-pro-6000\", \"rtx-4090\", \"l40s\", \"a100\", \"mi300x\"]",
            "devices = [\"h100\", \"rtx-pro-6000\"]",
        );
    let spec = dir.join("big.toml");
    std::fs::write(&spec, spec_text).unwrap();
    spec
}

#[test]
fn a_device_where_no_autotune_config_fits_is_named() {
    let cache = scratch("autotune-none");
    let dir = scratch("autotune-none-spec");
    let spec = big_tiles_spec(&dir);
    let run = probe(&spec, &cache, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("0/2  NONE FITS: the autotuner has nothing to choose from"),
        "{}",
        run.stdout
    );
    let report = json_of(&probe(&spec, &cache, &["--json", "-"]));
    assert!(
        per_device(&report, "rtx-pro-6000")["fits"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // On the H100 only the smaller of the two fits.
    assert_eq!(per_device(&report, "h100")["fits"], serde_json::json!([1]));
    let py = dir.join("pruned.py");
    let run = probe(&spec, &cache, &["--emit-configs", py.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        std::fs::read_to_string(&py)
            .unwrap()
            .contains("\"sm_120\": [],  # none fits: the autotuner would have nothing to try")
    );

    // A key both the spec and the autotune list set is refused, naming the field.
    let clash = dir.join("clash.toml");
    std::fs::write(
        &clash,
        std::fs::read_to_string(&spec)
            .unwrap()
            .replace("autotune = true", "autotune = true\nBLOCK_M = [64]"),
    )
    .unwrap();
    let run = probe(&clash, &cache, &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("`[sweep].BLOCK_M` is also set by the @triton.autotune configs of `matmul_kernel_big_tiles`"),
        "{}",
        run.stderr
    );
    // `autotune = true` on a kernel without autotune is an error; `false` sweeps the axes alone.
    let plain = dir.join("plain.toml");
    std::fs::write(
        &plain,
        std::fs::read_to_string(examples().join("matmul/spec.toml"))
            .unwrap()
            .replace(
                "file = \"matmul.py\"",
                &format!(
                    "file = {:?}",
                    examples().join("matmul/matmul.py").display().to_string()
                ),
            )
            .replace("[sweep]\n", "[sweep]\nautotune = true\n"),
    )
    .unwrap();
    let run = probe(&plain, &cache, &[]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("has no @triton.autotune configs"),
        "{}",
        run.stderr
    );
    let ignored = dir.join("ignored.toml");
    std::fs::write(
        &ignored,
        std::fs::read_to_string(&spec)
            .unwrap()
            .replace(
                "autotune = true",
                "autotune = false\nBLOCK_M = [64]\nBLOCK_N = [64]\nBLOCK_K = [32]",
            )
            .replace(
                "[recommend]\nprefer = [\"max:BLOCK_N\", \"max:BLOCK_M\", \"max:num_stages\"]",
                "",
            ),
    )
    .unwrap();
    let report = json_of(&probe(&ignored, &cache, &["--json", "-"]));
    assert!(report.get("listed").is_none());
    assert_eq!(report["results"].as_array().unwrap().len(), 2);
}

/// A copy of examples/moe with extra files in its configs folder.
fn moe_copy(name: &str, extra: &[(&str, &str)]) -> PathBuf {
    let dir = scratch(name);
    let moe = examples().join("moe");
    std::fs::create_dir_all(dir.join("configs")).unwrap();
    for entry in std::fs::read_dir(moe.join("configs")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join("configs").join(entry.file_name())).unwrap();
    }
    for (file, text) in extra {
        std::fs::write(dir.join("configs").join(file), text).unwrap();
    }
    let spec = std::fs::read_to_string(moe.join("spec.toml"))
        .unwrap()
        .replace(
            "file = \"fused_moe.py\"",
            &format!(
                "file = {:?}",
                moe.join("fused_moe.py").display().to_string()
            ),
        );
    std::fs::write(dir.join("spec.toml"), spec).unwrap();
    dir.join("spec.toml")
}

fn compiled_for(report: &Value, config_index: &Value, arch: &str) -> bool {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| &r["config_index"] == config_index && r["arch"] == arch)
}

#[test]
fn config_files_are_checked_on_their_own_device_and_the_fleet() {
    let cache = scratch("moe");
    let spec = moe_copy(
        "moe-spec",
        &[
            (
                "E=8,N=14336,device_name=NVIDIA_A100-SXM4-80GB.json",
                "{\"16\": {\"BLOCK_SIZE_M\": 16,",
            ),
            (
                "E=8,N=14336,device_name=NVIDIA_H200.json",
                "{\"64\": {\"BLOCK_SIZE_M\": 32, \"BLOCK_SIZE_N\": 64, \"BLOCK_SIZE_K\": 64, \"GROUP_SIZE_M\": 1, \"num_warps\": 4, \"num_stages\": 3}}",
            ),
            (
                "E=8,N=14336.json",
                "{\"1\": {\"BLOCK_SIZE_M\": 16, \"BLOCK_SIZE_N\": 64, \"BLOCK_SIZE_K\": 128, \"GROUP_SIZE_M\": 1, \"num_warps\": 4, \"num_stages\": 3}}",
            ),
        ],
    );
    let report = json_of(&probe(&spec, &cache, &["--json", "-"]));
    let listed = &report["listed"];
    assert_eq!(listed["kind"], "config-files");
    let file = |name: &str| -> &Value {
        listed["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["file"].as_str().unwrap().contains(name))
            .unwrap_or_else(|| panic!("no file {name}"))
    };
    // The RTX 4090 file maps to the RTX 4090, which joins the fleet; its batch-256 config is over
    // that device's budget by exactly its bytes minus 101,376.
    let rtx = file("RTX_4090");
    assert_eq!(rtx["device"], "GeForce RTX 4090");
    assert_eq!(rtx["arch"], "sm_89");
    let over: Vec<&Value> = rtx["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["verdict"] == "over-budget")
        .collect();
    assert_eq!(over.len(), 1, "{rtx}");
    assert_eq!(over[0]["key"], "256");
    let bytes = over[0]["shared_bytes"].as_u64().unwrap();
    assert!(bytes > 101_376);
    assert_eq!(over[0]["over_by"].as_u64().unwrap(), bytes - 101_376);
    // The H100 file fits its device, which the fleet already had as `h100`.
    let h100 = file("H100_80GB");
    assert_eq!(h100["device"], "h100");
    assert!(
        h100["entries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["verdict"] == "fits")
    );
    // The same config that misses the 4090 is checked on every device of the fleet.
    let index = over[0]["config_index"].as_u64().unwrap();
    let on = |device: &str| {
        per_device(&report, device)["over"]
            .as_array()
            .unwrap()
            .iter()
            .any(|pair| pair[0] == index)
    };
    assert!(on("rtx-pro-6000") && !on("h100"));
    // The H200 joined the fleet through its own file: its row counts that file's one entry, not
    // the H100 file's, though both compile for sm_90. The H100 the user named counts every
    // distinct NVIDIA config, from every file.
    let h200 = file("NVIDIA_H200.json");
    let h200_device = h200["device"].as_str().unwrap();
    assert_eq!(per_device(&report, h200_device)["total"], 1, "{report}");
    assert_eq!(per_device(&report, "h100")["total"], listed["distinct"]);
    assert_eq!(listed["distinct"], 10);
    // An NVIDIA file's entries are judged on the fleet's NVIDIA devices only: an engine on the
    // MI300X never loads it.
    assert!(!compiled_for(&report, &Value::from(index), "gfx942"));
    // A device name tilefit does not know, and a file without one, map to no device and say so.
    assert!(
        file("NVIDIA_Tesla_P100")["unresolved"]
            .as_str()
            .unwrap()
            .contains("`NVIDIA Tesla P100-PCIE-16GB` is not in tilefit's device table")
    );
    assert!(
        file("E=8,N=14336.json")["unresolved"]
            .as_str()
            .unwrap()
            .contains("no `device_name=` part")
    );
    // A file that is not valid JSON is skipped with the reason; the rest of the run goes on.
    let problems = listed["file_problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1);
    assert!(problems[0]["path"].as_str().unwrap().contains("A100-SXM4"));
    assert!(
        problems[0]["problem"]
            .as_str()
            .unwrap()
            .contains("is not valid JSON")
    );
    the_config_files_read_as_a_user_reads_them(&spec, &cache);
}

/// The text, markdown and gate views of the config-file sweep above.
fn the_config_files_read_as_a_user_reads_them(spec: &Path, cache: &Path) {
    let run = probe(spec, cache, &["--fail-on", "over-budget"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stdout.contains("E=8,N=14336,device_name=NVIDIA_GeForce_RTX_4090.json -> GeForce RTX 4090 (sm_89): 4/5 configs fit; OVER on its own device: 256 (#"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("E=8,N=14336,device_name=NVIDIA_Tesla_P100-PCIE-16GB.json: NO DEVICE: `NVIDIA Tesla P100-PCIE-16GB` is not in tilefit's device table"));
    assert!(run.stdout.contains(
        "E=8,N=14336,device_name=NVIDIA_A100-SXM4-80GB.json: SKIPPED: is not valid JSON"
    ));
    assert!(run.stdout.contains("0 compiled"), "cached: {}", run.stdout);
    let markdown = probe(spec, cache, &["--markdown"]);
    assert!(markdown.stdout.contains("**Config files**"));
    // The CI gate for files an engine would silently replace with its defaults.
    let run = probe(spec, cache, &["--fail-on", "unmapped-files"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("3 config files map to no device: E=8,N=14336,device_name=NVIDIA_Tesla_P100-PCIE-16GB.json, E=8,N=14336.json, E=8,N=14336,device_name=NVIDIA_A100-SXM4-80GB.json"),
        "{}",
        run.stderr
    );
}

#[test]
fn config_files_that_cannot_be_used_are_clear_errors() {
    let cache = scratch("moe-bad");
    // Only unusable files: the run stops, naming each.
    let dir = scratch("moe-bad-spec");
    std::fs::create_dir_all(dir.join("configs")).unwrap();
    std::fs::write(dir.join("configs/broken.json"), "not json").unwrap();
    let moe = examples().join("moe");
    let spec_text = std::fs::read_to_string(moe.join("spec.toml"))
        .unwrap()
        .replace(
            "file = \"fused_moe.py\"",
            &format!(
                "file = {:?}",
                moe.join("fused_moe.py").display().to_string()
            ),
        );
    let spec = dir.join("spec.toml");
    std::fs::write(&spec, &spec_text).unwrap();
    let run = probe(&spec, &cache, &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("`[sweep].from_files` matches no usable config file"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("broken.json is not valid JSON"),
        "{}",
        run.stderr
    );
    // A pattern that matches nothing.
    std::fs::write(&spec, spec_text.replace("configs/*.json", "nowhere/*.json")).unwrap();
    let run = probe(&spec, &cache, &[]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("`[sweep].from_files`"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("hint:"), "{}", run.stderr);
}

/// `--fail-on none-fits`: quiet where every device keeps an autotune entry, failing where a device
/// is left with none (the autotuner would have nothing to choose from).
#[test]
fn the_none_fits_gate_fails_only_where_a_device_keeps_nothing() {
    let cache = scratch("gate-none-fits");
    let run = probe(
        &examples().join("matmul/autotune.toml"),
        &cache,
        &["--fail-on", "none-fits"],
    );
    assert_eq!(run.code, 0, "every device keeps an entry: {}", run.stderr);
    let dir = scratch("gate-none-fits-spec");
    let spec = big_tiles_spec(&dir);
    let run = probe(&spec, &cache, &["--fail-on", "none-fits"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "1 lists leave a device with no config that fits: the autotune list on rtx-pro-6000 (0 of 2 fit)"
        ),
        "{}",
        run.stderr
    );
}
