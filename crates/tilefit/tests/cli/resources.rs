//! Registers, local memory, spills and occupancy (`--resources full`) with the real compiler: the
//! ELF readers on binaries Triton produces in the test for sm_80, sm_90, sm_120 and gfx942,
//! checked against what the compiler itself printed (ptxas's verbose log, the amdgcn assembly's
//! metadata), and the probe's report of them end to end.

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::Value;
use tilefit_core::resources::{self, BinaryFormat};

use super::{compile_binaries, fixture, json_of, probe, python, scratch};

/// The first number a pattern captures in `text`.
fn number(text: &str, pattern: &str) -> u64 {
    Regex::new(pattern)
        .unwrap()
        .captures(text)
        .unwrap_or_else(|| panic!("`{pattern}` not in:\n{text}"))[1]
        .parse()
        .unwrap()
}

/// What ptxas printed for a cubin: (registers, stack frame, spill stores).
fn ptxas_says(log: &str) -> (u64, u64, u64) {
    (
        number(log, r"Used (\d+) registers"),
        number(log, r"(\d+) bytes stack frame"),
        number(log, r"(\d+) bytes spill stores"),
    )
}

/// `(n_regs, n_spills)` of `matmul_kernel` as the emulated driver's `load_binary` returns them
/// for the cubin at `path` (a CUDA h100 device dict; the load reads only the binary).
fn python_load(path: &std::path::Path) -> (u64, u64) {
    let package = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tilefit-core/python");
    let script = r"import sys
sys.path.insert(0, sys.argv[1])
from tilefit import _emulation
utils = _emulation._DeviceUtils({'backend': 'cuda', 'max_threads_per_block': 1024})
data = open(sys.argv[2], 'rb').read()
_, _, regs, spills, threads = utils.load_binary('matmul_kernel', data, 0, 0)
assert threads == 1024
try:
    utils.load_binary('other', data, 0, 0)
except _emulation._cubin.CubinError as e:
    assert 'no kernel `other` in the binary (it has: matmul_kernel)' in str(e), e
else:
    raise AssertionError('a missing kernel was read')
print(regs, spills)
";
    let out = std::process::Command::new(python())
        .args(["-c", script])
        .arg(&package)
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut numbers = text.split_whitespace().map(|n| n.parse::<u64>().unwrap());
    (numbers.next().unwrap(), numbers.next().unwrap())
}

#[test]
fn cubins_of_three_archs_read_as_ptxas_reported_them() {
    let dir = scratch("cubins");
    // The 128 x 256 tile at 4 warps spills on every arch; the 64 x 128 tile does not.
    let configs = [
        "sm_80:128:256:64:4:3",
        "sm_90:128:256:64:4:3",
        "sm_120:128:256:64:4:3",
        "sm_80:64:128:32:4:2",
        "sm_90:64:128:32:4:2",
        "sm_120:64:128:32:4:2",
    ];
    compile_binaries(&dir, &configs);
    for config in configs {
        let tag = config.replace(':', "-");
        let cubin = std::fs::read(dir.join(format!("{tag}.cubin"))).unwrap();
        let log = std::fs::read_to_string(dir.join(format!("{tag}.log"))).unwrap();
        let (registers, frame, spills) = ptxas_says(&log);
        let read = resources::read(
            BinaryFormat::Cubin,
            &cubin,
            Some("matmul_kernel"),
            Some(&log),
        )
        .unwrap_or_else(|e| panic!("{config}: {e}"));
        let arch = config.split(':').next().unwrap();
        assert_eq!(read.binary_arch, arch, "{config}: the SM in e_flags");
        assert_eq!(
            u64::from(read.registers_per_thread),
            registers,
            "{config}: EIATTR_REGCOUNT vs ptxas"
        );
        assert_eq!(
            read.local_bytes_per_thread, frame,
            "{config}: EIATTR_FRAME_SIZE"
        );
        assert_eq!(read.spill_bytes, Some(spills), "{config}: spill stores");
        // Triton's shared memory is all dynamic: the static part is 0 once the sm_90+ 1 KiB
        // reservation in .nv.shared is taken off.
        assert_eq!(read.static_shared_bytes, 0, "{config}");
        assert_eq!(read.launch_bound_threads, Some(128), "{config}: 4 warps");
        // Without the log: the same registers and frame, spills unknown.
        let bare = resources::read(BinaryFormat::Cubin, &cubin, None, None).unwrap();
        assert_eq!(bare.registers_per_thread, read.registers_per_thread);
        assert_eq!(bare.spill_bytes, None);
        if config.contains(":128:256:") {
            assert!(spills > 0 && frame > 0, "{config} was chosen to spill");
        } else {
            assert_eq!((spills, frame), (0, 0), "{config} was chosen not to spill");
        }
        // The emulated driver's load (the Python half's `_cubin`, which Inductor's reductions
        // read under capture) reads the same registers, and local bytes / 4 as `n_spills`.
        let loaded = python_load(&dir.join(format!("{tag}.cubin")));
        assert_eq!(
            loaded,
            (
                u64::from(read.registers_per_thread),
                read.local_bytes_per_thread / 4
            ),
            "{config}: the emulated load_binary"
        );
        // A kernel that is not there is named, with what is.
        let missing = resources::read(BinaryFormat::Cubin, &cubin, Some("other"), None);
        assert!(
            missing
                .unwrap_err()
                .to_string()
                .contains("no kernel `other` in the binary (it has: matmul_kernel)")
        );
    }
}

#[test]
fn amd_code_objects_read_as_their_assembly_states() {
    let dir = scratch("hsaco");
    compile_binaries(&dir, &["gfx942:128:256:64:4:2", "gfx942:64:128:32:8:2"]);
    for tag in ["gfx942-128-256-64-4-2", "gfx942-64-128-32-8-2"] {
        let hsaco = std::fs::read(dir.join(format!("{tag}.hsaco"))).unwrap();
        let assembly = std::fs::read_to_string(dir.join(format!("{tag}.amdgcn"))).unwrap();
        let read = resources::read(BinaryFormat::AmdgpuCodeObject, &hsaco, None, None).unwrap();
        assert_eq!(read.binary_arch, "gfx942");
        assert_eq!(read.binary_symbol, "matmul_kernel");
        // The assembly's own metadata block (YAML), written by the same LLVM.
        assert_eq!(
            u64::from(read.registers_per_thread),
            number(&assembly, r"\.vgpr_count:\s+(\d+)")
        );
        let amd = read.amd.unwrap();
        assert_eq!(
            u64::from(amd.sgprs),
            number(&assembly, r"\.sgpr_count:\s+(\d+)")
        );
        assert_eq!(
            u64::from(amd.vgpr_spills),
            number(&assembly, r"\.vgpr_spill_count:\s+(\d+)")
        );
        assert_eq!(
            read.local_bytes_per_thread,
            number(&assembly, r"\.private_segment_fixed_size:\s+(\d+)")
        );
        assert_eq!(
            u64::from(read.launch_bound_threads.unwrap()),
            number(&assembly, r"\.max_flat_workgroup_size:\s+(\d+)")
        );
    }
    // A cubin is not a code object, and the error says what was found.
    let error = resources::read(BinaryFormat::AmdgpuCodeObject, b"\x7fELF", None, None);
    assert!(error.is_err());
}

fn result<'a>(report: &'a Value, arch: &str, block_n: u64) -> &'a Value {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["arch"] == arch && r["config"]["BLOCK_N"] == block_n)
        .unwrap_or_else(|| panic!("no result for {arch} BLOCK_N={block_n}"))
}

#[test]
fn probe_reports_registers_spills_and_occupancy_per_device() {
    let cache = scratch("probe-resources");
    let spec = fixture("matmul_resources.toml");
    let report = json_of(&probe(
        &spec,
        &cache,
        &["--resources", "full", "--json", "-"],
    ));

    // The probe's numbers (Triton's JIT binder on the spec's example values) equal those of a
    // hand-written triton.compile of the same configs, as ptxas reported them.
    let direct = scratch("probe-resources-direct");
    compile_binaries(&direct, &["sm_90:128:128:64:4:3", "sm_90:128:256:64:4:3"]);
    for block_n in [128, 256] {
        let log = std::fs::read_to_string(direct.join(format!("sm_90-128-{block_n}-64-4-3.log")))
            .unwrap();
        let (registers, frame, spills) = ptxas_says(&log);
        let r = result(&report, "sm_90", block_n);
        assert_eq!(r["registers_per_thread"], registers, "BLOCK_N={block_n}");
        assert_eq!(r["local_bytes_per_thread"], frame, "BLOCK_N={block_n}");
        assert_eq!(r["spill_bytes"], spills, "BLOCK_N={block_n}");
        assert_eq!(r["binary_format"], "cubin");
    }

    // Every NVIDIA verdict carries the thread limit and the occupancy with its limiter.
    let mut limiters = BTreeMap::new();
    for arch in ["sm_90", "sm_120", "sm_80"] {
        for block_n in [128, 256] {
            let r = result(&report, arch, block_n);
            assert_eq!(r["binary_arch"], arch);
            let v = &r["verdicts"][0];
            assert_eq!(v["verdict"], "fits", "{arch} {block_n}");
            let threads = v["max_threads_per_block"].as_u64().unwrap();
            assert!(
                threads >= 128,
                "{arch}: 4 warps must fit, the driver allows {threads}"
            );
            let blocks = v["blocks_per_sm"].as_u64().unwrap();
            assert!(blocks >= 1, "{arch} {block_n}");
            *limiters
                .entry(v["occupancy_limiter"].as_str().unwrap().to_owned())
                .or_insert(0) += 1;
            assert!(v["occupancy_percent"].as_u64().unwrap() <= 100);
        }
    }
    assert!(limiters.contains_key("shared-memory"), "{limiters:?}");
    // 255 registers leave 8 warps per SM: 256 threads per block at most.
    assert_eq!(
        result(&report, "sm_90", 256)["verdicts"][0]["max_threads_per_block"],
        256
    );

    // AMD: registers from the code object, no NVIDIA occupancy model.
    let amd = result(&report, "gfx942", 128);
    assert_eq!(amd["binary_format"], "amdgpu-code-object");
    assert!(amd["registers_per_thread"].as_u64().unwrap() > 0);
    assert!(amd["verdicts"][0].get("blocks_per_sm").is_none());

    // The rule avoids the spilling tile where it spills.
    for r in report["recommendations"].as_array().unwrap() {
        assert_eq!(r["config"]["BLOCK_N"], 128, "{r}");
    }

    // The terminal and Markdown reports show them; the spills gate fails naming the config.
    let run = probe(
        &spec,
        &cache,
        &["--resources", "full", "--fail-on", "spills"],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("Registers per thread, spills and resident blocks per SM")
    );
    assert!(
        run.stdout
            .contains("255 regs, spills 2,048 B, 1 blk/SM (smem)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr
            .contains("spill registers to local memory: BLOCK_N=256 on sm_90"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.contains("0 compiled, 8 from cache"),
        "cached: {}",
        run.stdout
    );
    let markdown = probe(&spec, &cache, &["--resources", "full", "--markdown"]);
    assert!(markdown.stdout.contains("| BLOCK_N=256 | 255 regs, spills"));

    // Without --resources full nothing is read, and the size-only compile has its own cache key.
    let run = probe(&spec, &cache, &["--json", "-"]);
    let plain: Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(
        result(&plain, "sm_90", 256)
            .get("registers_per_thread")
            .is_none()
    );
    assert!(
        result(&plain, "sm_90", 256)["verdicts"][0]
            .get("blocks_per_sm")
            .is_none()
    );
}
