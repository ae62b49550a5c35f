//! The embedded table: it loads, it holds every arch and product the project promises, its values
//! equal the reference (docs/reference/devices.md §6, parsed here, not retyped), and a broken table
//! is refused with the error that names the problem.

use tilefit_core::device::{Backend, DeviceListing, DeviceTable, TableError};

const REFERENCE: &str = include_str!("../../../../docs/reference/devices.md");
const BUILTIN: &str = include_str!("../../data/devices.toml");

fn table() -> &'static DeviceTable {
    DeviceTable::builtin().expect("the embedded table loads")
}

const NVIDIA_ARCHS: &[&str] = &[
    "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100", "sm_103",
    "sm_110", "sm_120", "sm_121",
];
const AMD_ARCHS: &[&str] = &[
    "gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1151", "gfx1201",
];

#[test]
fn every_promised_arch_is_present_with_its_backend() {
    for arch in NVIDIA_ARCHS {
        assert_eq!(table().arch(arch).unwrap().backend, Backend::Cuda, "{arch}");
    }
    for arch in AMD_ARCHS {
        assert_eq!(table().arch(arch).unwrap().backend, Backend::Hip, "{arch}");
    }
    assert_eq!(table().archs().len(), NVIDIA_ARCHS.len() + AMD_ARCHS.len());
}

#[test]
fn every_promised_product_resolves_to_the_right_arch() {
    let expected = [
        ("H100 SXM", "sm_90"),
        ("H100 PCIe", "sm_90"),
        ("H100 NVL", "sm_90"),
        ("H200", "sm_90"),
        ("H20", "sm_90"),
        ("GH200", "sm_90"),
        ("B200", "sm_100"),
        ("GB200", "sm_100"),
        ("B300", "sm_103"),
        ("GB300", "sm_103"),
        ("A100", "sm_80"),
        ("A30", "sm_80"),
        ("A10", "sm_86"),
        ("A40", "sm_86"),
        ("L4", "sm_89"),
        ("L40", "sm_89"),
        ("L40S", "sm_89"),
        ("RTX 3090", "sm_86"),
        ("RTX 4090", "sm_89"),
        ("RTX 5090", "sm_120"),
        ("RTX 5080", "sm_120"),
        ("RTX A6000", "sm_86"),
        ("RTX 6000 Ada", "sm_89"),
        ("RTX PRO 6000 Blackwell Workstation Edition", "sm_120"),
        ("RTX PRO 6000 Blackwell Server Edition", "sm_120"),
        ("RTX PRO 6000 Blackwell Max-Q", "sm_120"),
        ("RTX PRO 5000", "sm_120"),
        ("RTX PRO 4500", "sm_120"),
        ("RTX PRO 4000", "sm_120"),
        ("GB10", "sm_121"),
        ("DGX Spark", "sm_121"),
        ("Jetson AGX Orin", "sm_87"),
        ("Jetson Thor", "sm_110"),
        ("T4", "sm_75"),
        ("V100", "sm_70"),
        ("MI250X", "gfx90a"),
        ("MI300X", "gfx942"),
        ("MI325X", "gfx942"),
        ("MI355X", "gfx950"),
        ("RX 7900 XTX", "gfx1100"),
        ("RX 9070 XT", "gfx1201"),
    ];
    for (name, arch) in expected {
        let resolved = table()
            .resolve(name)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(resolved.product().is_some(), "{name} should be a product");
        assert_eq!(resolved.arch().arch, arch, "{name}");
    }
}

/// The rows of the `cc smem_sm optin reserved def_blk regs_sm regs_blk regs_thr thr_sm blk_sm warp`
/// code block in the reference's §6.
fn reference_nvidia_rows() -> Vec<Vec<u32>> {
    let section = REFERENCE
        .split("## 6. Suggested device-database schema and values")
        .nth(1)
        .expect("the reference has a §6");
    let block = section
        .split("```")
        .nth(1)
        .expect("§6 opens with a code block");
    block
        .lines()
        .filter(|line| {
            line.trim_start()
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit())
        })
        .map(|line| {
            let mut fields = line.split_whitespace();
            let cc = fields.next().unwrap().replace('.', "");
            let mut row = vec![cc.parse().unwrap()];
            row.extend(fields.map(|v| v.parse::<u32>().unwrap()));
            row
        })
        .collect()
}

#[test]
fn nvidia_values_equal_the_reference_table() {
    let rows = reference_nvidia_rows();
    assert_eq!(
        rows.len(),
        NVIDIA_ARCHS.len(),
        "one reference row per NVIDIA arch"
    );
    for row in rows {
        let arch_name = format!("sm_{}", row[0]);
        let arch = table()
            .arch(&arch_name)
            .unwrap_or_else(|| panic!("{arch_name}"));
        let actual = [
            arch.smem_per_sm.value,
            arch.smem_per_block_optin.value,
            arch.smem_reserved_per_block.value,
            arch.smem_per_block_default.value,
            arch.regs_per_sm.as_ref().unwrap().value,
            arch.regs_per_block.as_ref().unwrap().value,
            arch.regs_per_thread.as_ref().unwrap().value,
            arch.max_threads_per_sm.as_ref().unwrap().value,
            arch.max_blocks_per_sm.as_ref().unwrap().value,
            arch.warp_size.value,
        ];
        assert_eq!(
            actual.as_slice(),
            &row[1..],
            "{arch_name} differs from the reference §6"
        );
    }
}

#[test]
fn amd_lds_per_workgroup_equals_the_reference() {
    // §6: "AMD (per workgroup LDS bytes = Triton runtime max_shared_mem): gfx90a 65536, ..."
    let line = REFERENCE
        .lines()
        .find(|l| l.starts_with("AMD (per workgroup LDS bytes"))
        .expect("the reference states AMD LDS per workgroup");
    let listed = line.split(':').nth(1).unwrap();
    let mut seen = 0;
    for pair in listed.split(',') {
        let mut words = pair.split_whitespace();
        let (Some(arch), Some(bytes)) = (words.next(), words.next()) else {
            continue;
        };
        let bytes: u32 = bytes.trim_end_matches('.').parse().unwrap();
        assert_eq!(table().arch(arch).unwrap().budget(), bytes, "{arch}");
        seen += 1;
    }
    // gfx1151 (Radeon 8060S) came with the engines' config folders, after the reference was
    // written; its value is sourced in the table itself (ROCm's system requirements, LLVM).
    assert_eq!(seen, AMD_ARCHS.len() - AMD_ARCHS_BEYOND_THE_REFERENCE.len());
    for arch in AMD_ARCHS_BEYOND_THE_REFERENCE {
        assert!(
            !listed.contains(arch),
            "{arch} is in the reference now: check it there"
        );
        assert_eq!(table().arch(arch).unwrap().budget(), 65_536, "{arch}");
    }
}

/// AMD archs the table has that the reference's §6 line does not list.
const AMD_ARCHS_BEYOND_THE_REFERENCE: &[&str] = &["gfx1151"];

#[test]
fn the_issue_s_headline_values() {
    let check = |arch: &str, optin: u32, per_sm: u32, reserved: u32| {
        let a = table().arch(arch).unwrap();
        assert_eq!(
            (
                a.smem_per_block_optin.value,
                a.smem_per_sm.value,
                a.smem_reserved_per_block.value
            ),
            (optin, per_sm, reserved),
            "{arch}"
        );
    };
    check("sm_120", 101_376, 102_400, 1_024);
    check("sm_90", 232_448, 233_472, 1_024);
    check("sm_100", 232_448, 233_472, 1_024);
    assert_eq!(table().arch("sm_80").unwrap().budget(), 166_912);
    assert_eq!(table().arch("sm_75").unwrap().budget(), 65_536);
    assert_eq!(table().arch("sm_70").unwrap().budget(), 98_304);
    assert_eq!(table().arch("gfx942").unwrap().budget(), 65_536);
    assert_eq!(table().arch("gfx950").unwrap().budget(), 163_840);
}

#[test]
fn nvidia_optin_plus_reserved_is_per_sm_and_reserved_is_1k_from_sm_80() {
    for arch in table()
        .archs()
        .iter()
        .filter(|a| a.backend == Backend::Cuda)
    {
        assert_eq!(
            arch.smem_per_block_optin.value + arch.smem_reserved_per_block.value,
            arch.smem_per_sm.value,
            "{}",
            arch.arch
        );
        let cc: f32 = arch.compute_capability.as_deref().unwrap().parse().unwrap();
        let expected_reserved = if cc >= 8.0 { 1024 } else { 0 };
        assert_eq!(
            arch.smem_reserved_per_block.value, expected_reserved,
            "{}",
            arch.arch
        );
    }
}

#[test]
fn every_value_has_a_declared_source_and_every_source_is_cited() {
    let listing = DeviceListing::all(table());
    for arch in &listing.archs {
        let cited: Vec<&String> = arch.sources.iter().flat_map(|s| &s.fields).collect();
        for field in [
            "warp_size",
            "smem_per_sm",
            "smem_per_block_optin",
            "smem_per_block_default",
            "smem_reserved_per_block",
            "max_threads_per_block",
        ] {
            assert!(
                cited.iter().any(|f| *f == field),
                "{}.{field} unsourced",
                arch.arch
            );
        }
        if arch.regs_per_sm.is_some() {
            assert!(cited.iter().any(|f| *f == "regs_per_sm"), "{}", arch.arch);
        }
    }
    for product in &listing.products {
        assert!(
            product
                .sources
                .iter()
                .any(|s| s.fields.iter().any(|f| f == "arch")),
            "{}",
            product.name
        );
        if product.sm_count.is_some() {
            assert!(
                product
                    .sources
                    .iter()
                    .any(|s| s.fields.iter().any(|f| f == "sm_count")),
                "{}",
                product.name
            );
        }
    }
}

#[test]
fn archs_sharing_the_desk_budget_are_exactly_sm_86_89_120_121() {
    let sharing: Vec<&str> = table()
        .archs()
        .iter()
        .filter(|a| a.budget() == 101_376)
        .map(|a| a.arch.as_str())
        .collect();
    assert_eq!(sharing, ["sm_86", "sm_89", "sm_120", "sm_121"]);
}

fn broken(from: &str, to: &str) -> TableError {
    assert!(BUILTIN.contains(from), "test fixture out of date: {from}");
    DeviceTable::from_toml(&BUILTIN.replacen(from, to, 1)).expect_err("the broken table is refused")
}

#[test]
fn a_value_without_a_source_is_refused() {
    let err = broken(
        r#"smem_per_sm = { value = 65536, from = ["cuda-guide-13", "cccl-arch-traits"] }"#,
        r"smem_per_sm = { value = 65536, from = [] }",
    );
    assert_eq!(
        err,
        TableError::Unsourced {
            owner: "sm_75".into(),
            field: "smem_per_sm".into()
        }
    );
}

#[test]
fn a_citation_of_an_unknown_source_is_refused() {
    let err = broken(
        r#"smem_reserved_per_block = { value = 0, from = ["inferred-sm72"] }"#,
        r#"smem_reserved_per_block = { value = 0, from = ["made-up"] }"#,
    );
    assert!(
        matches!(err, TableError::UnknownSource { ref source_id, .. } if source_id == "made-up"),
        "{err}"
    );
}

#[test]
fn a_typo_in_a_budget_breaks_the_optin_invariant() {
    let err = broken(
        r#"smem_per_block_optin = { value = 101376, from = ["cuda-guide-13", "cccl-arch-traits", "trtllm-sm12x"] }"#,
        r#"smem_per_block_optin = { value = 102400, from = ["cuda-guide-13", "cccl-arch-traits", "trtllm-sm12x"] }"#,
    );
    assert_eq!(
        err,
        TableError::OptinInvariant {
            arch: "sm_121".into(),
            optin: 102_400,
            reserved: 1024,
            per_sm: 102_400
        }
    );
}

#[test]
fn an_alias_claimed_twice_is_refused() {
    let err = broken(
        r#"aliases = ["NVIDIA A30"]"#,
        r#"aliases = ["NVIDIA A30", "RTX-4090"]"#,
    );
    assert_eq!(
        err,
        TableError::DuplicateName {
            name: "GeForce RTX 4090".into(),
            first: "A30".into(),
            second: "GeForce RTX 4090".into()
        }
    );
}

#[test]
fn a_product_on_an_unknown_arch_is_refused() {
    let err = broken(
        "arch = \"sm_75\"\narch_from = [\"nvidia-cuda-gpus\"]",
        "arch = \"sm_77\"\narch_from = [\"nvidia-cuda-gpus\"]",
    );
    assert_eq!(
        err,
        TableError::UnknownArch {
            product: "Tesla T4".into(),
            arch: "sm_77".into()
        }
    );
}

#[test]
fn an_unknown_field_and_a_future_schema_are_refused() {
    let err = broken(
        "generation = \"Turing\"",
        "generation = \"Turing\"\nsmem_per_warp = 1",
    );
    assert!(
        matches!(err, TableError::Parse(ref m) if m.contains("smem_per_warp")),
        "{err}"
    );
    let err = broken("schema_version = 1", "schema_version = 2");
    assert_eq!(
        err,
        TableError::SchemaVersion {
            found: 2,
            expected: 1
        }
    );
}

#[test]
fn a_declared_but_uncited_source_is_refused() {
    let err = broken(
        "[sources.cuda-guide-13]",
        "[sources.orphan]\nkind = \"document\"\ntitle = \"x\"\n\n[sources.cuda-guide-13]",
    );
    assert_eq!(err, TableError::UnusedSource("orphan".into()));
}
