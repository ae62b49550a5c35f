//! Probe specs without a compiler: the issue's example shape parses, sweeps expand outermost
//! axis first, placeholders fill, the recommendation rule has its documented defaults, and bad
//! specs fail with the file, the field and the fix.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tilefit_core::input::spec::{Preference, SpecError, fill_placeholders, parse};
use tilefit_core::vocab::describe_config;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// The spec shape the probe issue requires, against the example kernel.
const ISSUE_SHAPE: &str = r#"
[kernel]
file = "mla_decode.py"
function = "mla_decode_stage1"
[args]
Q = "*bf16"
K_Buffer = "*{kv_dtype}"
sm_scale = "fp32"
stride_qbs = { type = "i32", value = 9216 }
[constexprs]
BLOCK_DMODEL = 512
IS_MLA = true
logit_cap = 0.0
[sweep]
kv_dtype = ["bf16", "fp8e4nv"]
num_stages = [1, 2, 3, 4]
num_warps = [4]
BLOCK_N = [32]
[targets]
devices = ["rtx-pro-6000", "gb10", "rtx-4090", "h100", "b200", "mi300x"]
"#;

fn spec_at_examples(text: &str) -> Result<tilefit_core::input::spec::Sweep, SpecError> {
    parse(text, &examples().join("mla_decode/spec.toml"))
}

fn field_error(text: &str) -> (String, String, String) {
    match spec_at_examples(text) {
        Err(SpecError::Field {
            field,
            problem,
            fix,
            ..
        }) => (field, problem, fix),
        other => panic!("expected a field error, got {other:?}"),
    }
}

#[test]
fn the_issue_s_spec_shape_parses() {
    let spec = spec_at_examples(ISSUE_SHAPE).unwrap();
    assert!(spec.kernel_file.is_absolute());
    assert!(spec.kernel_file.ends_with("mla_decode.py"));
    assert_eq!(spec.targets.len(), 6);
    assert_eq!(spec.constexprs[1], ("IS_MLA".to_owned(), Value::from(true)));
    let stride = &spec.args.iter().find(|(n, _)| n == "stride_qbs").unwrap().1;
    assert_eq!(stride.value, Some(Value::from(9216)));
    assert!(stride.aligned);
    // Defaults: one recommendation per dtype placeholder; keep the rest, deepest num_stages.
    assert_eq!(spec.recommend.per, ["kv_dtype"]);
    assert_eq!(
        spec.recommend.prefer,
        [Preference::Keep, Preference::Max("num_stages".into())]
    );
}

#[test]
fn sweeps_expand_outermost_axis_first() {
    let spec = spec_at_examples(ISSUE_SHAPE).unwrap();
    let configs = spec.configs();
    assert_eq!(configs.len(), 8);
    assert_eq!(
        describe_config(&configs[0]),
        "kv_dtype=bf16 num_stages=1 num_warps=4 BLOCK_N=32"
    );
    assert_eq!(
        describe_config(&configs[1]),
        "kv_dtype=bf16 num_stages=2 num_warps=4 BLOCK_N=32"
    );
    assert_eq!(
        describe_config(&configs[4]),
        "kv_dtype=fp8e4nv num_stages=1 num_warps=4 BLOCK_N=32"
    );
    assert_eq!(fill_placeholders("*{kv_dtype}", &configs[4]), "*fp8e4nv");
}

#[test]
fn the_bundled_examples_parse() {
    for example in [
        "mla_decode/spec.toml",
        "matmul/spec.toml",
        "matmul/autotune.toml",
        "attention/spec.toml",
        "moe/spec.toml",
    ] {
        let spec = tilefit_core::input::spec::load(&examples().join(example))
            .unwrap_or_else(|e| panic!("{example}: {e}"));
        assert!(!spec.configs().is_empty());
    }
}

/// Every sweep tilefit writes (`--emit-spec`) reads back as itself: each example and field or
/// fixture spec, read into a sweep and written back, reads into the very same sweep, whatever
/// sections it uses (recommend rules, `[files]`, `[launch]`, globals, descriptors, listed
/// configs).
#[test]
fn every_example_written_back_from_its_sweep_is_the_same_sweep() {
    use tilefit_core::input::spec;
    let mut found = 0;
    let repo = examples().join("..");
    let folders = [
        examples(),
        repo.join("docs/verification/field-specs"),
        repo.join("crates/tilefit/tests/fixtures"),
    ];
    for entry in folders.iter().flat_map(|f| walk(f)) {
        if entry.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&entry).unwrap();
        let Ok(original) = spec::parse(&text, &entry) else {
            continue;
        };
        let kernel = original.kernel_file.display().to_string();
        let written = spec::write::to_toml(&original, &kernel, "written back").unwrap();
        let again = spec::parse(&written, &entry).unwrap_or_else(|e| {
            panic!(
                "{}: written back, it no longer parses: {e}\n{written}",
                entry.display()
            )
        });
        assert_eq!(original, again, "{}:\n{written}", entry.display());
        assert!(written.starts_with("# written back\n\n["), "{written}");
        found += 1;
    }
    assert!(found >= 12, "only {found} specs parsed");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

#[test]
fn bad_fields_say_what_to_write() {
    let (field, problem, fix) = field_error(&ISSUE_SHAPE.replace("*{kv_dtype}", "*{kv_type}"));
    assert_eq!(field, "[args].K_Buffer");
    assert!(
        problem.contains("`{kv_type}`, which is not a [sweep] axis"),
        "{problem}"
    );
    assert!(fix.contains("to [sweep]"));

    let (field, _, fix) = field_error(&ISSUE_SHAPE.replace("Q = \"*bf16\"", "Q = \"*bfloat16\""));
    assert_eq!(field, "[args].Q");
    assert_eq!(fix, "did you mean `*bf16`?");

    let (field, problem, _) =
        field_error(&ISSUE_SHAPE.replace("{ type = \"i32\", value = 9216 }", "\"i32\""));
    assert_eq!(field, "[args].stride_qbs");
    assert!(problem.contains("integer without an example value"));

    let (field, problem, _) = field_error(&ISSUE_SHAPE.replace("value = 9216", "value = 9216.5"));
    assert_eq!(field, "[args].stride_qbs.value");
    assert!(problem.contains("not an integer"));

    let (field, problem, _) =
        field_error(&ISSUE_SHAPE.replace("num_warps = [4]", "num_warps = []"));
    assert_eq!(field, "[sweep].num_warps");
    assert!(problem.contains("empty list"));

    let (field, _, _) = field_error(&ISSUE_SHAPE.replace("num_warps = [4]", "num_warps = 4"));
    assert_eq!(field, "[sweep].num_warps");

    let (field, problem, _) = field_error(&format!("{ISSUE_SHAPE}[options]\nnum_stages = 2\n"));
    assert_eq!(field, "[options].num_stages");
    assert!(problem.contains("also swept"));

    let (field, _, _) = field_error(&ISSUE_SHAPE.replace("\"mla_decode.py\"", "\"missing.py\""));
    assert_eq!(field, "[kernel].file");

    let (field, problem, _) = field_error(&format!(
        "{ISSUE_SHAPE}[recommend]\nprefer = [\"max:BLOCK_M\"]\n"
    ));
    assert_eq!(field, "[recommend].prefer");
    assert!(problem.contains("`BLOCK_M`, which is not a [sweep] axis"));

    let (field, problem, _) = field_error(&format!(
        "{ISSUE_SHAPE}[recommend]\nbaseline = {{ num_stages = 5 }}\n"
    ));
    assert_eq!(field, "[recommend].baseline.num_stages");
    assert!(problem.contains("the sweep does not include"));

    let (field, _, _) = field_error(&ISSUE_SHAPE.replace("\"gb10\"", "\" \""));
    assert_eq!(field, "[targets].devices[1]");
}

#[test]
fn toml_errors_carry_the_file_and_position() {
    match spec_at_examples("[kernel]\nfile = \"mla_decode.py\"\nfunction = 3\n") {
        Err(SpecError::Toml { path, reason }) => {
            assert!(path.ends_with("spec.toml"));
            assert!(reason.contains("line 3"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    match spec_at_examples("[kernel]\nfile = \"mla_decode.py\"\nfunction = \"f\"\n[sweeps]\n") {
        Err(SpecError::Toml { reason, .. }) => {
            assert!(reason.contains("unknown field `sweeps`"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_launch_table_has_defaults_and_checks_the_grid() {
    let spec = spec_at_examples(ISSUE_SHAPE).unwrap();
    assert_eq!(spec.launch.grid, [1]);
    assert_eq!(
        spec.launch.buffer_bytes,
        tilefit_core::input::spec::DEFAULT_LAUNCH_BUFFER_BYTES
    );
    let spec = spec_at_examples(&format!(
        "{ISSUE_SHAPE}[launch]\ngrid = [2, 16, 8]\nbuffer_bytes = 1048576\n"
    ))
    .unwrap();
    assert_eq!(spec.launch.grid, [2, 16, 8]);
    assert_eq!(spec.launch.buffer_bytes, 1_048_576);
    let (field, _, fix) = field_error(&format!("{ISSUE_SHAPE}[launch]\ngrid = [0]\n"));
    assert_eq!(field, "[launch].grid");
    assert!(fix.contains("one to three positive sizes"));
}

#[test]
fn listed_config_sources_are_checked_where_they_are_written() {
    let (field, problem, _) =
        field_error(&ISSUE_SHAPE.replace("[sweep]\n", "[sweep]\nautotune = \"yes\"\n"));
    assert_eq!(field, "[sweep].autotune");
    assert!(problem.contains("not true or false"), "{problem}");

    let (field, _, fix) =
        field_error(&ISSUE_SHAPE.replace("[sweep]\n", "[sweep]\nfrom_files = 3\n"));
    assert_eq!(field, "[sweep].from_files");
    assert!(fix.contains("configs/*.json"), "{fix}");

    let (field, problem, _) = field_error(&ISSUE_SHAPE.replace(
        "[sweep]\n",
        "[sweep]\nautotune = true\nfrom_files = \"c/*.json\"\n",
    ));
    assert_eq!(field, "[sweep].autotune");
    assert!(
        problem.contains("from_files also lists configs"),
        "{problem}"
    );
}

#[test]
fn files_tables_and_descriptors_are_checked() {
    let base = r#"
[kernel]
file = "mla_decode.py"
function = "mla_decode_stage1"
[args]
Q = "*bf16"
"#;
    // [files] belongs to a config-file sweep.
    let error =
        spec_at_examples(&format!("{base}[files]\nforce = {{ SPLIT_K = 1 }}\n")).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("`[files]` is given, but [sweep].from_files"),
        "{error}"
    );
    let with_files = format!("{base}[sweep]\nfrom_files = \"configs/**/*.json\"\n");
    let spec = spec_at_examples(&format!(
        "{with_files}[files]\nforce = {{ SPLIT_K = 1 }}\ndrop = [\"USE_TMA\"]\n[files.variants.\"dtype=fp8_w8a8,block_shape=[128, 128]\"]\nconstexprs = {{ use_fp8_w8a8 = true }}\nargs = {{ Q = \"*fp8e4nv\", S = \"none\" }}\nat_most = {{ BLOCK_SIZE_K = 128 }}\n"
    ))
    .unwrap();
    assert_eq!(
        spec.files.edits.force,
        [("SPLIT_K".to_owned(), Value::from(1))]
    );
    assert_eq!(spec.files.edits.drop, ["USE_TMA"]);
    let variant = &spec.files.variants[0];
    assert_eq!(variant.parts, ["dtype=fp8_w8a8", "block_shape=[128,128]"]);
    assert_eq!(variant.args[1].1.type_template, "none");
    let error = spec_at_examples(&format!(
        "{with_files}[files.variants.\"down\"]\nat_most = {{ BLOCK_SIZE_K = \"big\" }}\n"
    ))
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("[files.variants.\"down\".at_most].BLOCK_SIZE_K"),
        "{error}"
    );
    // A tensor descriptor names its dtype, shape, strides and block shape, of one rank.
    let error = spec_at_examples(&format!(
        "{base}D = {{ type = \"tensordesc\", dtype = \"bf16\", shape = [64, 64], strides = [64, 1], block_shape = [64] }}\n"
    ))
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("has a shape of rank 2, 2 strides and a block shape of rank 1"),
        "{error}"
    );
    let error = spec_at_examples(&format!(
        "{base}D = {{ type = \"tensordesc\", dtype = \"bf61\", shape = [64], strides = [1], block_shape = [64] }}\n"
    ))
    .unwrap_err();
    assert!(
        error.to_string().contains("unknown element type `bf61`"),
        "{error}"
    );
    assert!(
        error.hint().contains("did you mean `bf16`?"),
        "{}",
        error.hint()
    );
}
