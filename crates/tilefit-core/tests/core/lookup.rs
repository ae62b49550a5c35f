//! Lookup: the spellings people type and drivers print resolve; typos and unknown names fail
//! with the closest known names.

use tilefit_core::device::{DeviceTable, LookupError};

fn resolve_arch(name: &str) -> String {
    let table = DeviceTable::builtin().unwrap();
    table
        .resolve(name)
        .unwrap_or_else(|e| panic!("`{name}` should resolve: {e}"))
        .arch()
        .arch
        .clone()
}

fn resolve_name(name: &str) -> String {
    DeviceTable::builtin()
        .unwrap()
        .resolve(name)
        .unwrap()
        .display_name()
        .to_owned()
}

fn suggestions(name: &str) -> Vec<String> {
    match DeviceTable::builtin().unwrap().resolve(name) {
        Err(LookupError::Unknown { suggestions, .. }) => suggestions,
        other => panic!("`{name}` should be unknown, got {other:?}"),
    }
}

#[test]
fn the_issue_s_spellings_resolve() {
    for name in [
        "rtx-pro-6000",
        "RTX PRO 6000 Blackwell",
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        "sm_120",
        "sm120",
        "12.0",
    ] {
        assert_eq!(resolve_arch(name), "sm_120", "{name}");
    }
    assert_eq!(resolve_arch("gfx942"), "gfx942");
    assert_eq!(resolve_arch("mi300x"), "gfx942");
}

#[test]
fn driver_strings_resolve_to_products() {
    assert_eq!(resolve_name("NVIDIA GeForce RTX 4090"), "GeForce RTX 4090");
    assert_eq!(resolve_name("NVIDIA H100 80GB HBM3"), "H100 SXM");
    assert_eq!(resolve_name("NVIDIA A100-SXM4-80GB"), "A100");
    assert_eq!(resolve_name("Tesla T4"), "Tesla T4");
    assert_eq!(resolve_name("AMD Instinct MI300X"), "Instinct MI300X");
    assert_eq!(resolve_name("NVIDIA GB10"), "DGX Spark (GB10)");
    assert_eq!(resolve_name("NVIDIA B300 SXM6 AC"), "B300");
    assert_eq!(
        resolve_name("NVIDIA RTX PRO 6000 Blackwell Server Edition"),
        "RTX PRO 6000 Blackwell Server Edition"
    );
}

#[test]
fn arch_spellings_with_suffixes_and_features_resolve() {
    assert_eq!(resolve_arch("sm_90a"), "sm_90");
    assert_eq!(resolve_arch("SM_100F"), "sm_100");
    assert_eq!(resolve_arch("9.0"), "sm_90");
    assert_eq!(resolve_arch("8.6"), "sm_86");
    assert_eq!(resolve_arch("gfx942:sramecc+:xnack-"), "gfx942");
    assert_eq!(resolve_arch("GFX950"), "gfx950");
    assert_eq!(resolve_arch("  l40s  "), "sm_89");
}

#[test]
fn typos_suggest_the_intended_device() {
    assert_eq!(
        suggestions("rtx 5900").first().map(String::as_str),
        Some("GeForce RTX 5090")
    );
    assert!(
        suggestions("h1000").contains(&"H100 SXM".to_owned()),
        "{:?}",
        suggestions("h1000")
    );
    let mi300 = suggestions("mi300");
    assert!(
        mi300[..2].contains(&"Instinct MI300X".to_owned()),
        "{mi300:?}"
    );
    assert!(
        mi300[..2].contains(&"Instinct MI300A".to_owned()),
        "{mi300:?}"
    );
    assert!(suggestions("sm_121x").contains(&"sm_121".to_owned()));
}

#[test]
fn unknown_names_are_errors_with_suggestions_not_guesses() {
    let err = DeviceTable::builtin()
        .unwrap()
        .resolve("Voodoo 5")
        .unwrap_err();
    let LookupError::Unknown { query, suggestions } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(query, "Voodoo 5");
    assert!(
        !suggestions.is_empty(),
        "an unknown name still lists the closest names"
    );
    assert!(err.hint().contains("tilefit devices"));
    // A near-miss of a real name must not silently resolve to it.
    assert!(
        DeviceTable::builtin()
            .unwrap()
            .resolve("RTX 5090 Ti")
            .is_err()
    );
    assert!(DeviceTable::builtin().unwrap().resolve("sm_99").is_err());
}

#[test]
fn empty_names_are_errors() {
    let table = DeviceTable::builtin().unwrap();
    assert_eq!(
        table.resolve("  ").unwrap_err(),
        LookupError::Empty("  ".into())
    );
    assert_eq!(
        table.resolve("--").unwrap_err(),
        LookupError::Empty("--".into())
    );
}

/// Every `device_name` in the fused-MoE config folders vLLM 0.27.1 and SGLang 0.5.23 ship
/// (`torch.cuda.get_device_name()` with underscores read back as spaces), with the arch the file
/// is compiled for. Intel's XPU is known but not compiled for.
#[test]
fn every_device_name_the_engines_ship_resolves() {
    let names = [
        ("AMD Instinct MI300X", "gfx942"),
        ("AMD Instinct MI308X", "gfx942"),
        ("AMD Instinct MI325 OAM", "gfx942"),
        ("AMD Instinct MI325X", "gfx942"),
        ("AMD Instinct MI350 OAM", "gfx950"),
        ("AMD Instinct MI350X", "gfx950"),
        ("AMD Instinct MI355 OAM", "gfx950"),
        ("AMD Instinct MI355X", "gfx950"),
        ("AMD Radeon Graphics", "gfx942"),
        ("AMD Radeon R9700", "gfx1201"),
        ("NVIDIA A100-SXM4-40GB", "sm_80"),
        ("NVIDIA A100-SXM4-80GB", "sm_80"),
        ("NVIDIA A800-SXM4-80GB", "sm_80"),
        ("NVIDIA B200", "sm_100"),
        ("NVIDIA B300 SXM6 AC", "sm_103"),
        ("NVIDIA GB10", "sm_121"),
        ("NVIDIA GB200", "sm_100"),
        ("NVIDIA GB300", "sm_103"),
        ("NVIDIA GeForce RTX 4090", "sm_89"),
        ("NVIDIA H100", "sm_90"),
        ("NVIDIA H100 80GB HBM3", "sm_90"),
        ("NVIDIA H100 PCIe", "sm_90"),
        ("NVIDIA H20", "sm_90"),
        ("NVIDIA H20-3e", "sm_90"),
        ("NVIDIA H200", "sm_90"),
        ("NVIDIA H200 NVL", "sm_90"),
        ("NVIDIA H800", "sm_90"),
        ("NVIDIA L20", "sm_89"),
        ("NVIDIA L20Y", "sm_89"),
        ("NVIDIA L40S", "sm_89"),
        ("NVIDIA RTX 5880 Ada Generation", "sm_89"),
        ("NVIDIA RTX 6000 Ada Generation", "sm_89"),
        (
            "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
            "sm_120",
        ),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "sm_120"),
        (
            "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
            "sm_120",
        ),
        ("Radeon 8060S Graphics", "gfx1151"),
    ];
    for (name, arch) in names {
        assert_eq!(resolve_arch(name), arch, "{name}");
    }
    // H20-3e is its own product, not a near match for the H20.
    assert_eq!(resolve_name("NVIDIA H20-3e"), "H20-3e");
    match DeviceTable::builtin()
        .unwrap()
        .resolve("Intel(R) Arc(TM) Pro B60 Graphics")
    {
        Err(LookupError::Unsupported { name, backend, .. }) => {
            assert_eq!(name, "Intel Arc Pro B60");
            assert_eq!(backend, "xpu");
        }
        other => panic!("the Arc Pro B60 is a known XPU, got {other:?}"),
    }
}

/// The shared vectors (`tests/vectors/device_names.json`): each name's key, as the Python
/// package's `normalize_name` must give it too.
#[test]
fn names_normalize_as_the_shared_vectors_say() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/vectors/device_names.json");
    let vectors: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let vectors = vectors["vectors"].as_array().unwrap();
    assert!(vectors.len() >= 30);
    let mut wrong = Vec::new();
    for vector in vectors {
        let name = vector["name"].as_str().unwrap();
        let got = tilefit_core::device::normalize_name(name);
        match vector["key"].as_str() {
            Some(key) if key == got => {}
            key => wrong.push(format!("{name:?}: {got:?}, the vectors say {key:?}")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
