//! Where an installed package's module is (`[kernel] module = "vllm.attention.ops.x"`), as the
//! toolchain's Python finds it. The only input that asks Python: `find_spec` imports the parent
//! packages and nothing else runs.

use std::path::{Path, PathBuf};

/// The file of an installed package's module (`[kernel] module = "package.module"`), as
/// `python` finds it: its import machinery's answer, or where importing the package itself fails
/// (an engine's `__init__` that needs what is not installed) the first `package/module.py` on its
/// `sys.path`. Nothing of the package runs but what `find_spec` imports.
pub fn module_file(python: &Path, module: &str) -> Result<PathBuf, String> {
    const QUERY: &str = r#"
import importlib.util, os, sys
name = sys.argv[1]
try:
    spec = importlib.util.find_spec(name)
    origin = spec.origin if spec is not None else None
except Exception:
    origin = None
if not origin or not os.path.isfile(origin):
    parts = name.split(".")
    for entry in sys.path:
        base = os.path.join(entry or ".", *parts)
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(candidate):
                origin = candidate
                break
        if origin and os.path.isfile(origin):
            break
print(os.path.abspath(origin) if origin and os.path.isfile(origin) else "")
"#;
    let out = std::process::Command::new(python)
        .args(["-I", "-B", "-c", QUERY, module])
        .output()
        .map_err(|e| format!("`{}` does not run: {e}", python.display()))?;
    let found = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if found.is_empty() {
        return Err(format!(
            "`{module}` is not a module `{}` can find",
            python.display()
        ));
    }
    Ok(PathBuf::from(found))
}
