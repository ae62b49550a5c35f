//! tilefit's Python package (`python/tilefit`), embedded: the emulated process of `tilefit
//! capture` imports it from its scratch folder, first on the script's `PYTHONPATH`, so a script
//! may `from tilefit import emulate` whether or not the package is installed, and always gets
//! this release's. A unit test checks the list is the folder.

use std::path::Path;

/// The package the emulated process imports, by file name: the folder `python/tilefit`, embedded.
pub const PACKAGE: &[(&str, &str)] = &[
    (
        "__init__.py",
        include_str!("../../python/tilefit/__init__.py"),
    ),
    ("_audit.py", include_str!("../../python/tilefit/_audit.py")),
    (
        "_autograd.py",
        include_str!("../../python/tilefit/_autograd.py"),
    ),
    (
        "_capture.py",
        include_str!("../../python/tilefit/_capture.py"),
    ),
    (
        "_capture_main.py",
        include_str!("../../python/tilefit/_capture_main.py"),
    ),
    (
        "_children.py",
        include_str!("../../python/tilefit/_children.py"),
    ),
    (
        "_choices.py",
        include_str!("../../python/tilefit/_choices.py"),
    ),
    ("_cubin.py", include_str!("../../python/tilefit/_cubin.py")),
    (
        "_device.py",
        include_str!("../../python/tilefit/_device.py"),
    ),
    (
        "_emulation.py",
        include_str!("../../python/tilefit/_emulation.py"),
    ),
    (
        "_errors.py",
        include_str!("../../python/tilefit/_errors.py"),
    ),
    ("_fit.py", include_str!("../../python/tilefit/_fit.py")),
    (
        "_generated.py",
        include_str!("../../python/tilefit/_generated.py"),
    ),
    ("_hooks.py", include_str!("../../python/tilefit/_hooks.py")),
    (
        "_inductor.py",
        include_str!("../../python/tilefit/_inductor.py"),
    ),
    ("_jit.py", include_str!("../../python/tilefit/_jit.py")),
    (
        "_lifetime.py",
        include_str!("../../python/tilefit/_lifetime.py"),
    ),
    (
        "_patches.py",
        include_str!("../../python/tilefit/_patches.py"),
    ),
    (
        "_processes.py",
        include_str!("../../python/tilefit/_processes.py"),
    ),
    ("_prune.py", include_str!("../../python/tilefit/_prune.py")),
    (
        "_records.py",
        include_str!("../../python/tilefit/_records.py"),
    ),
    ("_scope.py", include_str!("../../python/tilefit/_scope.py")),
    ("_state.py", include_str!("../../python/tilefit/_state.py")),
    (
        "_system.py",
        include_str!("../../python/tilefit/_system.py"),
    ),
    (
        "_values.py",
        include_str!("../../python/tilefit/_values.py"),
    ),
    (
        "_writes.py",
        include_str!("../../python/tilefit/_writes.py"),
    ),
    (
        "emulate.py",
        include_str!("../../python/tilefit/emulate.py"),
    ),
    (
        "pytest_plugin.py",
        include_str!("../../python/tilefit/pytest_plugin.py"),
    ),
];

/// Write the embedded package under `dir` (as `dir/tilefit/...`).
pub fn write_package(dir: &Path) -> std::io::Result<()> {
    let package = dir.join("tilefit");
    std::fs::create_dir_all(&package)?;
    for (name, text) in PACKAGE {
        std::fs::write(package.join(name), text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::PACKAGE;

    #[test]
    fn the_embedded_package_is_the_whole_folder() {
        let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/python/tilefit");
        let mut files: Vec<String> = std::fs::read_dir(folder)
            .unwrap()
            .filter_map(|e| {
                let path = e.ok()?.path();
                let python = path.extension().is_some_and(|x| x == "py");
                python.then(|| path.file_name().unwrap().to_string_lossy().into_owned())
            })
            .collect();
        files.sort();
        let embedded: Vec<String> = PACKAGE.iter().map(|(n, _)| (*n).to_owned()).collect();
        assert_eq!(
            embedded, files,
            "list every file of python/tilefit in compile::package::PACKAGE"
        );
    }
}
