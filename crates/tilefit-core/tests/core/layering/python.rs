//! The Python half, checked the way the Rust half is: the package's modules sit in layers
//! ([`PYTHON_LAYERS`]), a module imports only from its own layer or below, every module is in a
//! layer, no module is over [`super::MAX_LINES`] lines, and ARCHITECTURE.md's table of the
//! Python layers is this list. An import is any `import tilefit.X`, `from tilefit import X` or
//! `from tilefit.X import ...` line, at any depth (a function's lazy import counts too).

use std::path::Path;

use super::root;

/// The package's modules (`python/tilefit/*.py`), lowest layer first.
pub const PYTHON_LAYERS: &[&[&str]] = &[
    // Helpers: the one walk to a kernel's JITFunction (joined into the compile worker too), the
    // package's errors, what the driver reads from a cubin at load, and which arguments a kernel
    // writes, the writes a captured script makes outside its scratch, the run's processes
    // ending with tilefit, and the registry of every patch the emulation makes.
    &[
        "_jit",
        "_errors",
        "_cubin",
        "_writes",
        "_audit",
        "_lifetime",
        "_patches",
        "_state",
    ],
    // The runtime API: the device a process runs on, the probed choices, fit and prune.
    &["_device", "_choices", "_fit", "_prune"],
    // The emulated device: torch's and Triton's answers, backward graphs, the system tools.
    &["_values", "_emulation", "_hooks", "_autograd", "_system"],
    // Launch capture: scope files, a launch's record, the recorder, Inductor's generated kernels
    // and its hooks, the run's children and processes, the capture process's entry.
    &[
        "_scope",
        "_records",
        "_capture",
        "_generated",
        "_inductor",
        "_children",
        "_processes",
        "_capture_main",
    ],
    // What users import: the package, `tilefit.emulate`, the pytest plugin.
    &["__init__", "emulate", "pytest_plugin"],
];

/// The modules a file imports from the package, with the line of each import.
pub fn package_imports(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim_start();
        let names: Vec<String> = if let Some(rest) = line.strip_prefix("from tilefit import ") {
            rest.trim_end_matches(['(', ')', '\\'])
                .split(',')
                .map(|n| n.split_whitespace().next().unwrap_or_default().to_owned())
                .filter(|n| !n.is_empty())
                .collect()
        } else if let Some(rest) = line.strip_prefix("from tilefit.") {
            rest.split_whitespace()
                .next()
                .map(str::to_owned)
                .into_iter()
                .collect()
        } else if let Some(rest) = line.strip_prefix("import tilefit.") {
            rest.split([' ', ','])
                .next()
                .map(str::to_owned)
                .into_iter()
                .collect()
        } else {
            Vec::new()
        };
        for name in names {
            // `from tilefit.emulate import X` names the module; `tilefit._capture.f` too.
            let module = name.split('.').next().unwrap_or_default().to_owned();
            found.push((index + 1, module));
        }
    }
    found
}

fn layer_of(module: &str) -> Option<usize> {
    PYTHON_LAYERS.iter().position(|l| l.contains(&module))
}

/// Every upward import among `files` (module name, text), named by file and line.
pub fn upward_imports(files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (module, text) in files {
        let Some(own) = layer_of(module) else {
            found.push(format!(
                "python/tilefit/{module}.py: in no layer of PYTHON_LAYERS"
            ));
            continue;
        };
        for (line, imported) in package_imports(text) {
            match layer_of(&imported) {
                Some(layer) if layer > own => found.push(format!(
                    "python/tilefit/{module}.py:{line}: imports `{imported}` (layer {layer}) from layer {own}"
                )),
                None => found.push(format!(
                    "python/tilefit/{module}.py:{line}: imports `{imported}`, which is in no layer"
                )),
                Some(_) => {}
            }
        }
    }
    found
}

fn package() -> Vec<(String, String)> {
    modules(&root().join("python/tilefit"))
}

/// The `.py` files of `dir` as (module name, text), sorted.
fn modules(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let path = e.ok()?.path();
            (path.extension()? == "py").then(|| {
                let module = path.file_stem().unwrap().to_string_lossy().into_owned();
                (module, std::fs::read_to_string(&path).unwrap())
            })
        })
        .collect();
    files.sort();
    files
}

#[test]
fn python_modules_import_only_from_their_layer_or_below() {
    let files = package();
    assert!(files.len() >= 10, "{files:?}");
    let found = upward_imports(&files);
    assert!(found.is_empty(), "{}", found.join("\n"));
    let long: Vec<String> = files
        .iter()
        .filter(|(_, text)| text.lines().count() > super::MAX_LINES)
        .map(|(module, text)| format!("{module}.py: {} lines", text.lines().count()))
        .collect();
    assert!(long.is_empty(), "{long:?}");
}

#[test]
fn a_planted_upward_import_is_caught_with_its_line() {
    let mut files = package();
    for (module, text) in &mut files {
        if module == "_jit" {
            text.push_str("\n\ndef _planted():\n    from tilefit import _capture\n");
        }
        if module == "_fit" {
            text.push_str("\nimport tilefit.pytest_plugin as plugin\n");
        }
    }
    let found = upward_imports(&files);
    let lines = files
        .iter()
        .find(|(m, _)| m == "_jit")
        .map(|(_, t)| t.lines().count())
        .unwrap();
    assert!(
        found.iter().any(|f| f
            == &format!(
                "python/tilefit/_jit.py:{lines}: imports `_capture` (layer 3) from layer 0"
            )),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|f| f.starts_with("python/tilefit/_fit.py:") && f.contains("`pytest_plugin`")),
        "{found:?}"
    );
    assert_eq!(found.len(), 2, "{found:?}");
}

#[test]
fn the_map_lists_the_python_layers_the_test_keeps() {
    let map = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let header = "| layer | Python modules | owns |";
    assert!(
        map.contains(header),
        "ARCHITECTURE.md has the Python layer table"
    );
    let documented = super::documented_layers(&map, header);
    let kept: Vec<Vec<String>> = PYTHON_LAYERS
        .iter()
        .map(|l| l.iter().map(|m| (*m).to_owned()).collect())
        .collect();
    assert_eq!(
        documented, kept,
        "ARCHITECTURE.md's Python layer table and PYTHON_LAYERS differ: change both together"
    );
    assert!(Path::new(&root().join("python/tilefit/_jit.py")).exists());
}

/// The compile worker's modules (`crates/tilefit-core/src/compile/worker/`, the package
/// `tilefit_worker`), in order: each imports only modules before it.
pub const WORKER_ORDER: &[&str] = &[
    "__init__",
    "_jit",
    "extract",
    "protocol",
    "stand_ins",
    "kernel",
    "compiling",
    "launch",
    "errors",
    "zygote",
    "serve",
];

/// The worker modules a file imports (`from .X import`, `from . import X`), with their lines.
fn worker_imports(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim_start();
        if let Some(rest) = line.strip_prefix("from . import ") {
            for name in rest.split(',') {
                let name = name.split_whitespace().next().unwrap_or_default();
                if !name.is_empty() {
                    found.push((index + 1, name.to_owned()));
                }
            }
        } else if let Some(rest) = line.strip_prefix("from .") {
            let name = rest.split([' ', '.']).next().unwrap_or_default();
            found.push((index + 1, name.to_owned()));
        }
    }
    found
}

/// Every import of a worker module that is not before it, by file and line.
fn worker_upward(files: &[(String, String)]) -> Vec<String> {
    let at = |m: &str| WORKER_ORDER.iter().position(|w| *w == m);
    let mut found = Vec::new();
    for (module, text) in files {
        let Some(own) = at(module) else {
            found.push(format!("worker/{module}.py: not in WORKER_ORDER"));
            continue;
        };
        for (line, imported) in worker_imports(text) {
            match at(&imported) {
                Some(i) if i < own => {}
                _ => found.push(format!(
                    "worker/{module}.py:{line}: imports `{imported}`, which is not before it"
                )),
            }
        }
    }
    found
}

fn worker() -> Vec<(String, String)> {
    modules(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/compile/worker"))
}

#[test]
fn worker_modules_import_only_the_ones_before_them() {
    let files = worker();
    let names: Vec<&str> = files.iter().map(|(m, _)| m.as_str()).collect();
    let mut order = WORKER_ORDER.to_vec();
    order.sort_unstable();
    assert_eq!(names, order, "the folder and WORKER_ORDER differ");
    let found = worker_upward(&files);
    assert!(found.is_empty(), "{}", found.join("\n"));
    // A planted upward import is caught, with its file and line.
    let mut planted = files.clone();
    let protocol = planted.iter_mut().find(|(m, _)| m == "protocol").unwrap();
    protocol.1.push_str("\nfrom .serve import serve\n");
    let lines = protocol.1.lines().count();
    assert_eq!(
        worker_upward(&planted),
        vec![format!(
            "worker/protocol.py:{lines}: imports `serve`, which is not before it"
        )]
    );
}
