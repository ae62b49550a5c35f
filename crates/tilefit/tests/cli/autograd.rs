//! The backward pass under capture runs as torch's autograd engine runs it: the gradients each
//! node is handed (undefined, or zeros where a custom Function materializes them) and the hooks
//! the engine calls around the nodes, checked against torch's own engine in the same script.

use std::path::Path;

use serde_json::Value;

use super::capture::{fixture, launches, target};
use super::{Run, emulate_python, emulate_python_newest, scratch, tilefit_with};

#[test]
fn the_backward_runs_the_engines_hooks_and_hands_gradients_as_torch_does() {
    backward_as_torchs_engine(emulate_python(), "tested");
}

#[test]
#[ignore = "exhaustive tier: .ci/run runs it with `-- --ignored`"]
fn the_backward_runs_as_the_newest_torchs_engine_does() {
    backward_as_torchs_engine(emulate_python_newest(), "newest");
}

/// `tilefit capture fixtures/capture/hooks.py` for h100 with this Python.
fn capture_hooks(python: &Path, name: &str) -> (Run, Value) {
    let cache = scratch(&format!("capture-hooks-{name}"));
    let json = cache.join("report.json");
    let script = fixture("hooks.py");
    let args = [
        "capture",
        script.to_str().unwrap(),
        "--targets",
        "h100",
        "--python",
        python.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    let run = tilefit_with(&args, None, &[("TILEFIT_CACHE_DIR", &cache)]);
    let Ok(text) = std::fs::read_to_string(&json) else {
        panic!("no report: {}\n{}", run.stderr, run.stdout)
    };
    (run, serde_json::from_str(&text).unwrap())
}

fn backward_as_torchs_engine(python: &Path, name: &str) {
    // The script runs one training step on CPU tensors (torch's own engine) and on CUDA tensors
    // (the emulated engine), and fails unless both saw the same hooks, in the same order, the
    // same gradients handed to a custom Function, and the same errors where the engine refuses
    // (an unused input, a second backward, a root with no grad_fn): a failed script fails the
    // target.
    let (run, report) = capture_hooks(python, name);
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.stdout);
    let h100 = target(&report, "h100");
    assert!(h100["errors"].as_array().unwrap().is_empty(), "{h100}");
    let output = format!("{}{}", run.stdout, run.stderr);
    let cuda = output
        .lines()
        .find(|l| l.contains("on cuda:"))
        .unwrap_or_else(|| panic!("{output}"));
    for hook in [
        "tensor hook",
        "leaf hook",
        "post-accumulate hook",
        "Function pre-hook",
        "Function hook",
        "module hook",
        "('Two got None', False, False)",
        "('Two got None', False, True)",
        "('non-leaf input kept its grad', True)",
    ] {
        assert!(cuda.contains(hook), "{hook} in {cuda}");
    }
    // The kernel the tensor's hook launched is judged, at the hook's line.
    let source = std::fs::read_to_string(fixture("hooks.py")).unwrap();
    let line = source
        .lines()
        .position(|l| l.contains("the kernel a hook launches"))
        .unwrap()
        + 1;
    let scaled = launches(&report, "h100", "scale");
    assert_eq!(scaled.len(), 1, "{h100}");
    assert_eq!(scaled[0]["caller"]["line"].as_u64(), Some(line as u64));
    assert_eq!(scaled[0]["count"], 1);
    assert_eq!(scaled[0]["verdict"], "fits");
}
