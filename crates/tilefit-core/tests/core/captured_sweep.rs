//! A captured compile's sweep: made from the records' values with a spec file's checks, written
//! by `--emit-spec`, and read back by `tilefit probe` as the very same sweep.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use tilefit_core::input::capture::{CapturedArg, CapturedKernel};
use tilefit_core::input::spec::{self, AutotuneUse, SpecError, Sweep, SweepOrigin};
use tilefit_core::plan::capture::{Compile, sweep_of};

/// A folder of its own below the system's temporary folder, removed when dropped.
struct Folder(std::path::PathBuf);

impl Folder {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!("tilefit-core-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn arg(ty: &str) -> CapturedArg {
    CapturedArg {
        ty: ty.to_owned(),
        value: None,
        aligned: None,
        dtype: None,
        shape: None,
        strides: None,
        block_shape: None,
    }
}

fn compile(constexprs: Value, options: Value) -> Compile {
    let map = |v: Value| -> BTreeMap<String, Value> {
        v.as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let mut args = BTreeMap::new();
    args.insert("a_ptr".to_owned(), arg("*bf16"));
    args.insert(
        "b_ptr".to_owned(),
        CapturedArg {
            aligned: Some(false),
            ..arg("*fp16")
        },
    );
    args.insert(
        "n".to_owned(),
        CapturedArg {
            value: Some(json!(4096)),
            ..arg("i32")
        },
    );
    args.insert("bias".to_owned(), arg("None"));
    args.insert(
        "scale".to_owned(),
        CapturedArg {
            value: Some(json!({ "float": "-inf" })),
            ..arg("fp32")
        },
    );
    args.insert(
        "desc".to_owned(),
        CapturedArg {
            dtype: Some("bf16".to_owned()),
            shape: Some(vec![4096, 4096]),
            strides: Some(vec![4096, 1]),
            block_shape: Some(vec![64, 64]),
            ..arg("tensordesc")
        },
    );
    Compile {
        kernel: CapturedKernel {
            file: "/engine/kernels.py".to_owned(),
            function: "matmul_kernel".to_owned(),
            module: "engine.kernels".to_owned(),
            line: 12,
            digest: "d".repeat(64),
            module_level: true,
            scope: Some("ab12".repeat(16)),
        },
        args,
        constexprs: map(constexprs),
        options: map(options),
        globals: BTreeMap::new(),
        inductor_shared: None,
        inductor_choice: None,
        inductor_rescaled: None,
    }
}

/// The sweep read back from what `--emit-spec` writes for it, beside its scope file.
fn read_back(sweep: &Sweep, dir: &std::path::Path) -> Sweep {
    std::fs::write(dir.join("matmul_kernel.py"), "# scope\n").unwrap();
    let text = spec::write::to_toml(sweep, "matmul_kernel.py", "captured").unwrap();
    let path = dir.join("matmul_kernel-h100.toml");
    std::fs::write(&path, &text).unwrap();
    spec::load(&path).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn a_captured_sweep_written_as_a_spec_reads_back_as_itself() {
    let dir = Folder::new("sweep-back");
    let first = compile(
        json!({ "BLOCK_M": 128, "BLOCK_K": 64, "EVEN_K": true, "ACC": "fp32", "HUGE": u64::MAX, "SKIP": null }),
        json!({ "num_warps": 8, "num_stages": 5 }),
    );
    let second = compile(
        json!({ "BLOCK_M": 128, "BLOCK_K": 128, "EVEN_K": true, "ACC": "fp32", "HUGE": u64::MAX, "SKIP": null }),
        json!({ "num_warps": 8, "num_stages": 6 }),
    );
    let sweep = sweep_of(
        &[&first, &second],
        "h100",
        &dir.path().join("matmul_kernel.py"),
    )
    .unwrap();
    assert_eq!(
        sweep.origin,
        SweepOrigin::Captured {
            function: "matmul_kernel".to_owned(),
            device: "h100".to_owned()
        }
    );
    assert_eq!(sweep.autotune, AutotuneUse::Ignored);
    let axes: Vec<(&str, &Vec<Value>)> = sweep
        .sweep
        .iter()
        .map(|a| (a.name.as_str(), &a.values))
        .collect();
    assert_eq!(
        axes,
        [
            ("BLOCK_K", &vec![json!(64), json!(128)]),
            ("num_stages", &vec![json!(5), json!(6)])
        ]
    );
    // A value TOML has no integer for is the float it is; a null is not a value a spec holds.
    assert!(
        sweep
            .constexprs
            .contains(&("HUGE".to_owned(), json!(1.844_674_407_370_955_2e19)))
    );
    assert!(sweep.constexprs.iter().all(|(name, _)| name != "SKIP"));
    assert_eq!(sweep.configs().len(), 4);

    let mut again = read_back(&sweep, dir.path());
    assert_eq!(
        again.origin,
        SweepOrigin::SpecFile(dir.path().join("matmul_kernel-h100.toml"))
    );
    again.origin = sweep.origin.clone();
    assert_eq!(again, sweep);
}

#[test]
fn a_captured_compile_that_no_spec_could_hold_is_refused_with_its_field() {
    let dir = Folder::new("sweep-refused");
    let mut bad = compile(json!({ "BLOCK_M": 128 }), json!({}));
    bad.args.insert("m".to_owned(), arg("i32"));
    bad.args.insert(
        "desc".to_owned(),
        CapturedArg {
            shape: Some(vec![16, 16]),
            strides: Some(vec![16]),
            block_shape: Some(vec![16, 16]),
            dtype: Some("bf16".to_owned()),
            ..arg("tensordesc")
        },
    );
    let scope = dir.path().join("k.py");
    let Err(SpecError::Field { path, field, .. }) = sweep_of(&[&bad], "h100", &scope) else {
        panic!("a descriptor of two ranks makes no sweep");
    };
    assert_eq!(path, "the captured compile of `matmul_kernel` for h100");
    assert_eq!(field, "[args].desc");
    bad.args.remove("desc");
    let Err(SpecError::Field { field, problem, .. }) = sweep_of(&[&bad], "h100", &scope) else {
        panic!("an int without a value makes no sweep");
    };
    assert_eq!(field, "[args].m");
    assert!(
        problem.contains("integer without an example value"),
        "{problem}"
    );
    bad.args.insert("m".to_owned(), arg("*bf17"));
    let Err(SpecError::Field { problem, .. }) = sweep_of(&[&bad], "h100", &scope) else {
        panic!("an unknown type makes no sweep");
    };
    assert!(problem.contains("unknown type `*bf17`"), "{problem}");
}
