//! Scope files carry every value a kernel reads, or say exactly why not: one real capture of
//! `fixtures/capture/scope_values/scope_values.py` (an `IntEnum` member, a numpy scalar, a helper
//! module named as a standard-library module, an attribute called `name`, deferred `torch.Tensor`
//! annotations, ints past 64 bits and past Python's int-to-text limit), each judged launch
//! checked against a plain `triton.compile` of the same kernel with the script's own globals
//! (`direct.py`), each launch that cannot be carried checked for the name and type it gives.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::Value;

use super::capture::{capture, fixture, launches, target};
use super::{Run, emulate_python, scratch};

/// The capture of the script on sm_90: its run and its JSON report, made once for every test.
fn report() -> &'static (Run, Value) {
    static REPORT: OnceLock<(Run, Value)> = OnceLock::new();
    REPORT.get_or_init(|| capture(&fixture("scope_values/scope_values.py"), "sm_90", &[], &[]))
}

/// `metadata.shared` of each kernel from a plain `triton.compile` with the emulation's Triton
/// (the one the capture compiles with), by `KERNEL CONSTEXPRS`.
fn direct() -> &'static BTreeMap<String, u64> {
    static DIRECT: OnceLock<BTreeMap<String, u64>> = OnceLock::new();
    DIRECT.get_or_init(|| {
        let out = std::process::Command::new(emulate_python())
            .arg(fixture("scope_values/direct.py"))
            .env("TRITON_CACHE_DIR", scratch("scope-values-direct"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|line| {
                let (key, bytes) = line.rsplit_once(' ').unwrap();
                (key.to_owned(), bytes.parse().unwrap())
            })
            .collect()
    })
}

/// The `index`th launch of `kernel`.
fn launch(kernel: &str, index: usize) -> &'static Value {
    let (run, report) = report();
    let found = launches(report, "sm_90", kernel);
    found
        .get(index)
        .copied()
        .unwrap_or_else(|| panic!("no launch {index} of {kernel}: {}", run.stdout))
}

/// The launch is judged, with the bytes Triton's own compile gives (`tag`: its constexprs as
/// `direct.py` writes them).
fn assert_judged_as_triton(kernel: &str, index: usize, tag: &str) {
    let (run, report) = report();
    let launch = launch(kernel, index);
    assert_eq!(
        launch["verdict"], "fits",
        "{kernel}: {launch}\n{}",
        run.stdout
    );
    let compile = &target(report, "sm_90")["compiles"]
        [usize::try_from(launch["compiles"][0].as_u64().unwrap()).unwrap()];
    let key = format!("{kernel} {tag}");
    assert_eq!(
        compile["result"]["shared_bytes"].as_u64(),
        Some(direct()[&key]),
        "{key}: {compile}"
    );
}

/// The launch is not judged, and says why in these words.
fn assert_not_judged(kernel: &str, index: usize, words: &[&str]) {
    let launch = launch(kernel, index);
    assert_eq!(launch["verdict"], "not-judged", "{launch}");
    let why = launch["unsupported"].as_str().unwrap();
    for word in words {
        assert!(why.contains(word), "{word:?} not in {why:?}");
    }
}

#[test]
fn an_int_enum_member_global_is_carried_as_that_enum() {
    assert_judged_as_triton("enum_tile", 0, "-");
}

#[test]
fn a_numpy_scalar_global_is_carried_as_that_numpy_type() {
    assert_judged_as_triton("numpy_scale", 0, "BLOCK=32");
}

#[test]
fn a_helper_module_named_as_the_standard_library_s_is_the_script_s() {
    assert_judged_as_triton("shadowed_stdlib", 0, "-");
}

#[test]
fn a_module_attribute_called_name_is_carried() {
    assert_judged_as_triton("named_name", 0, "-");
}

#[test]
fn deferred_torch_tensor_annotations_compile_as_in_the_script() {
    assert_judged_as_triton("annotated", 0, "BLOCK=32");
}

#[test]
fn ints_past_64_bits_are_carried_exactly_or_named() {
    // Globals past 64 bits, read at constexpr level as Triton allows, are exact.
    assert_judged_as_triton("wide_ints", 0, "K=32");
    // A constexpr argument past what a spec holds is named, with its type.
    assert_not_judged(
        "wide_ints",
        1,
        &["`K`", "an int of 65 bits", "-2**63 to 2**63-1"],
    );
}

#[test]
fn an_int_past_python_s_text_limit_is_named_and_the_target_kept() {
    let (run, _) = report();
    // Under the default limit (where Triton's cache key fails too) the launch names the global;
    // the records are written, and the same kernel launched after the script raised the limit
    // is judged.
    assert_not_judged(
        "many_digits",
        0,
        &[
            "`HUGE`",
            "an int of 16610 bits",
            "sys.set_int_max_str_digits",
        ],
    );
    assert_judged_as_triton("many_digits", 1, "-");
    assert!(!run.stdout.contains("script-error"), "{}", run.stdout);
}
