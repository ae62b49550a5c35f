//! `tilefit devices`: the grouped table, named devices with sources, JSON, bad names.

use serde_json::Value;

use super::tilefit;

#[test]
fn the_table_groups_the_desk_budget_together() {
    let run = tilefit(&["devices"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("101,376 bytes (99 KiB) per block  (NVIDIA: sm_86, sm_89, sm_120, sm_121)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("232,448 bytes (227 KiB) per block  (NVIDIA: sm_90, sm_100, sm_103, sm_110)")
    );
    for device in [
        "RTX PRO 6000 Blackwell Workstation Edition",
        "GeForce RTX 5090",
        "DGX Spark (GB10)",
        "Instinct MI355X",
        "Jetson AGX Xavier",
    ] {
        assert!(run.stdout.contains(device), "{device} missing");
    }
    assert!(run.stderr.is_empty());
}

#[test]
fn named_devices_show_each_value_with_its_sources() {
    let run = tilefit(
        &["devices", "NVIDIA RTX PRO 6000 Blackwell Server Edition"],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("RTX PRO 6000 Blackwell Server Edition -> arch sm_120")
    );
    let optin = run
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("smem_per_block_optin"))
        .unwrap();
    assert!(
        optin.contains("101,376 bytes (99 KiB)") && optin.contains("cuda-guide-13"),
        "{optin}"
    );
    assert!(run.stdout.contains("Sources\n"));
    assert!(
        run.stdout
            .contains("https://docs.nvidia.com/cuda/cuda-programming-guide")
    );
    // Only the named device, not the whole fleet.
    assert!(!run.stdout.contains("H100"));
}

#[test]
fn json_lists_every_arch_and_product_with_sources() {
    let run = tilefit(&["devices", "--json"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let json: Value = serde_json::from_str(&run.stdout).expect("valid JSON");
    assert_eq!(json["schema_version"], 1);
    let archs = json["archs"].as_array().unwrap();
    assert_eq!(archs.len(), 19);
    for arch in archs {
        for key in [
            "arch",
            "backend",
            "warp_size",
            "smem_per_sm",
            "smem_per_block_optin",
            "smem_per_block_default",
            "smem_reserved_per_block",
            "regs_per_sm",
            "regs_per_block",
            "regs_per_thread",
            "max_threads_per_sm",
            "max_threads_per_block",
            "max_blocks_per_sm",
            "sources",
        ] {
            assert!(arch.get(key).is_some(), "{} lacks {key}", arch["arch"]);
        }
        assert!(!arch["sources"].as_array().unwrap().is_empty());
    }
    let sm120 = archs.iter().find(|a| a["arch"] == "sm_120").unwrap();
    assert_eq!(sm120["smem_per_block_optin"], 101_376);
    assert_eq!(sm120["smem_per_sm"], 102_400);
    assert_eq!(sm120["smem_reserved_per_block"], 1_024);
    assert_eq!(sm120["backend"], "cuda");
    let products = json["products"].as_array().unwrap();
    assert!(products.len() >= 40);
    for product in products {
        for key in ["name", "aliases", "arch", "sm_count", "sources"] {
            assert!(
                product.get(key).is_some(),
                "{} lacks {key}",
                product["name"]
            );
        }
    }
    let gb10 = products
        .iter()
        .find(|p| p["name"] == "DGX Spark (GB10)")
        .unwrap();
    assert_eq!(gb10["arch"], "sm_121");
    assert_eq!(gb10["sm_count"], 48);
}

#[test]
fn json_of_named_devices_keeps_only_them() {
    let run = tilefit(&["devices", "--json", "mi300x", "sm_120"], None);
    assert_eq!(run.code, 0);
    let json: Value = serde_json::from_str(&run.stdout).unwrap();
    let archs: Vec<&str> = json["archs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["arch"].as_str().unwrap())
        .collect();
    assert_eq!(archs, ["sm_120", "gfx942"]);
    let products: Vec<&str> = json["products"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(products.contains(&"Instinct MI300X"));
    assert!(
        !products.contains(&"Instinct MI325X"),
        "a named product brings only itself"
    );
    assert!(
        products.contains(&"GeForce RTX 5090"),
        "a named arch brings its products"
    );
}

#[test]
fn an_unknown_device_is_exit_2_with_suggestions() {
    let run = tilefit(&["devices", "rtx 5900"], None);
    assert_eq!(run.code, 2);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.starts_with("error: unknown device `rtx 5900`\n"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("hint: did you mean `GeForce RTX 5090`"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    use std::io::Read as _;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_tilefit"))
        .args(["devices", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0_u8; 16];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bad_arguments_are_exit_2() {
    let run = tilefit(&["devices", "--jsn"], None);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("--jsn"));
    let run = tilefit(&["frobnicate"], None);
    assert_eq!(run.code, 2);
    let run = tilefit(&["probe"], None);
    assert_eq!(run.code, 2, "a missing argument");
    assert!(run.stderr.contains("<SPEC>"), "{}", run.stderr);
    let run = tilefit(&["replay", "--targets"], None);
    assert_eq!(run.code, 2, "a flag without its value");
}

#[test]
fn every_subcommand_s_help_works() {
    for args in [
        &["--help"][..],
        &["devices", "--help"],
        &["explain", "--help"],
        &["probe", "--help"],
        &["toolchain", "--help"],
        &["toolchain", "list", "--help"],
        &["toolchain", "install", "--help"],
    ] {
        let run = tilefit(args, None);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert!(run.stdout.contains("Usage:"), "{args:?}");
    }
}
