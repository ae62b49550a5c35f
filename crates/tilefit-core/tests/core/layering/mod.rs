//! The architecture, checked (rust-analyzer's tidy tests, for this tree). ARCHITECTURE.md
//! describes the stages; this test holds the code to it:
//!
//! - **Stage order.** The library's top-level modules sit in layers; a module imports only from
//!   its own layer or below ([`LIBRARY_LAYERS`]). In the binary, `main` is on top, then the
//!   commands, then the helpers they share, then `cli` ([`BINARY_LAYERS`]); commands never import
//!   each other.
//! - **No cycles.** Among the files of a crate, no import leads back to where it started. An
//!   import is a `use` or a path (`crate::a::B`, `super::C`), resolved through re-exports to the
//!   file that defines the item; `mod` declarations and `#[cfg(test)]` modules are not imports.
//! - **Size.** No `.rs` file over [`MAX_LINES`] lines, tests included; no command file over
//!   [`MAX_COMMAND_LINES`]; no file of the library's `run` over [`MAX_RUN_LINES`] (`run` sequences
//!   stage calls: domain rules belong to the stages).
//!
//! A violation names the file, the line and the offending `use` or path.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

mod python;
mod source;

use source::{expand, module_of, paths_in, rust_files, strip, without_tests};

/// No source file is longer: past this, two ideas share a file.
const MAX_LINES: usize = 700;
/// A command of the binary parses, calls the library once, prints and exits.
const MAX_COMMAND_LINES: usize = 59;
/// A file of `run` calls the stages; past this, it holds a stage's work.
const MAX_RUN_LINES: usize = 300;

/// The library's top-level modules, lowest layer first. A module may import from its own layer
/// and the layers below; within a layer, modules may import each other (cycles are caught apart).
const LIBRARY_LAYERS: &[&[&str]] = &[
    // Small helpers every stage may use: no domain knowledge.
    &["units", "escape", "write", "cancel", "digest", "hint"],
    // The fleet: the sourced device table, names, occupancy.
    &["device"],
    // The leaf vocabulary: kernel source, load mode, descriptors, autotune configs, job
    // arguments, the worker request, compile status.
    &["vocab"],
    // What a user hands us, parsed and validated once; binaries read for registers and spills;
    // the local driver.
    &["input", "resources", "cuda"],
    // Configs bound to parameters, jobs, shards, one cache key.
    &["plan"],
    // The worker pool and the real Triton compiler.
    &["compile"],
    // The reports, as data.
    &["model"],
    // Verdicts, recommendations, the gate; error messages as data; configs for engines.
    &["judge", "explain", "fix"],
    // Terminal, Markdown, JSON, HTML, GitHub.
    &["render"],
    // Each command as a sequence of stage calls.
    &["run"],
];

/// The binary's modules, lowest layer first.
const BINARY_LAYERS: &[&[&str]] = &[
    // clap only, and the exit codes.
    &["cli", "exit_codes"],
    // Writing to stdout and stderr; an error chain worded.
    &["output", "failure"],
    // What every command shares: flags resolved into settings and modes, progress, the
    // session built from them, where a report goes and what it exits with.
    &["settings", "progress", "session", "session::*", "emit"],
    // One file per command; none imports another.
    &["commands::*"],
    // The dispatch, and `main`.
    &["commands"],
    &["main"],
];

/// One source file of a crate: its module path and its text with comments, strings and test
/// modules blanked out (line numbers kept).
struct SourceFile {
    path: PathBuf,
    module: Vec<String>,
    code: String,
    lines: usize,
}

/// An import found in a file: the line, the path as written, the module file the path names
/// (`crate::compile::X` names `compile/mod.rs` even when `X` is re-exported from below) and the
/// file that defines the item.
#[derive(Debug, Clone)]
struct Import {
    line: usize,
    written: String,
    named: usize,
    target: usize,
}

/// A crate's files and the imports between them.
struct Crate {
    name: &'static str,
    files: Vec<SourceFile>,
    imports: Vec<Vec<Import>>,
}

pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

impl Crate {
    fn load(name: &'static str, src: &Path) -> Crate {
        let mut paths = Vec::new();
        rust_files(src, &mut paths);
        let files: Vec<SourceFile> = paths
            .into_iter()
            .map(|path| {
                let text = std::fs::read_to_string(&path).unwrap();
                SourceFile {
                    module: module_of(src, &path),
                    code: without_tests(&strip(&text)),
                    lines: text.lines().count(),
                    path,
                }
            })
            .collect();
        let mut krate = Crate {
            name,
            files,
            imports: Vec::new(),
        };
        krate.imports = (0..krate.files.len())
            .map(|i| krate.resolve_file(i))
            .collect();
        krate
    }

    fn file_of(&self, module: &[String]) -> Option<usize> {
        self.files.iter().position(|f| f.module == module)
    }

    /// The names a module re-exports (`pub use a::B;`, `pub use a::*`), as absolute paths.
    fn reexports(&self, file: usize) -> Vec<(String, Vec<String>)> {
        let module = &self.files[file].module;
        paths_in(&self.files[file].code)
            .into_iter()
            .filter(|(_, _, public)| *public)
            .filter_map(|(_, path, _)| {
                let absolute = self.absolute(module, &path)?;
                let name = path.rsplit("::").next().unwrap().to_owned();
                Some((name, absolute))
            })
            .collect()
    }

    /// A written path as an absolute module path (None for another crate's).
    fn absolute(&self, module: &[String], path: &str) -> Option<Vec<String>> {
        let segments: Vec<&str> = path.split("::").collect();
        let mut at: Vec<String> = module.to_vec();
        let mut rest = &segments[..];
        match segments.first()? {
            &"crate" => {
                at.clear();
                rest = &rest[1..];
            }
            &"self" => rest = &rest[1..],
            &"super" => {
                while rest.first() == Some(&"super") {
                    at.pop();
                    rest = &rest[1..];
                }
            }
            first => {
                // A 2018 path starts at a child module in scope, or (in the crate root) at a
                // top-level module; anything else is another crate's.
                let mut child = module.to_vec();
                child.push((*first).to_owned());
                if self.file_of(&child).is_none() {
                    self.file_of(&[(*first).to_owned()])?;
                    at.clear();
                }
            }
        }
        at.extend(rest.iter().map(|s| (*s).to_owned()));
        Some(at)
    }

    /// The module file a path names: its longest prefix that is a module.
    fn named(&self, absolute: &[String]) -> Option<usize> {
        (0..=absolute.len())
            .rev()
            .find_map(|len| self.file_of(&absolute[..len]))
    }

    /// The file that defines what an absolute path names, through re-exports.
    fn target(&self, absolute: &[String], depth: usize) -> Option<usize> {
        // The longest prefix that is a module file.
        let (mut file, mut k) = (None, 0);
        for len in (0..=absolute.len()).rev() {
            if let Some(f) = self.file_of(&absolute[..len]) {
                file = Some(f);
                k = len;
                break;
            }
        }
        let file = file?;
        if k == absolute.len() || depth > 8 {
            return Some(file);
        }
        let name = &absolute[k];
        for (exported, path) in self.reexports(file) {
            if exported == *name || exported == "*" {
                let mut next = path.clone();
                if exported == "*" {
                    next.pop();
                    next.push(name.clone());
                }
                next.extend(absolute[k + 1..].iter().cloned());
                if let Some(target) = self.target(&next, depth + 1) {
                    if exported == *name || target != file {
                        return Some(target);
                    }
                }
            }
        }
        Some(file)
    }

    fn resolve_file(&self, file: usize) -> Vec<Import> {
        let module = &self.files[file].module;
        let mut out = Vec::new();
        for (line, written, _) in paths_in(&self.files[file].code) {
            let Some(absolute) = self.absolute(module, &written) else {
                continue;
            };
            if let (Some(target), Some(named)) = (self.target(&absolute, 0), self.named(&absolute))
            {
                if target != file || named != file {
                    out.push(Import {
                        line,
                        written,
                        named,
                        target,
                    });
                }
            }
        }
        out
    }

    fn display(&self, file: usize) -> String {
        self.files[file]
            .path
            .strip_prefix(root())
            .unwrap_or(&self.files[file].path)
            .display()
            .to_string()
    }

    /// Cycles among files: each strongly connected component of more than one file, with the
    /// imports inside it.
    fn cycles(&self) -> Vec<String> {
        let n = self.files.len();
        let edges: Vec<BTreeSet<usize>> = self
            .imports
            .iter()
            .map(|imports| imports.iter().map(|i| i.target).collect())
            .collect();
        // Tarjan's algorithm.
        let mut state = State {
            index: vec![None; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            next: 0,
            components: Vec::new(),
        };
        for v in 0..n {
            if state.index[v].is_none() {
                visit(v, &edges, &mut state);
            }
        }
        let mut out = Vec::new();
        for component in state.components.iter().filter(|c| c.len() > 1) {
            let members: BTreeSet<usize> = component.iter().copied().collect();
            let mut text = format!(
                "{}: import cycle among {}:",
                self.name,
                members
                    .iter()
                    .map(|&f| self.display(f))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            for &f in &members {
                for import in &self.imports[f] {
                    if members.contains(&import.target) {
                        let _ = write!(
                            text,
                            "\n    {}:{}: `{}` -> {}",
                            self.display(f),
                            import.line,
                            import.written,
                            self.display(import.target)
                        );
                    }
                }
            }
            out.push(text);
        }
        out
    }

    /// Imports that go up the layers.
    fn upward(&self, layer_of: &dyn Fn(&[String]) -> Option<usize>) -> Vec<String> {
        let mut out = Vec::new();
        for (f, imports) in self.imports.iter().enumerate() {
            let Some(from) = layer_of(&self.files[f].module) else {
                out.push(format!(
                    "{}: `{}` is in no layer of the layering test: add its module to a layer",
                    self.name,
                    self.display(f)
                ));
                continue;
            };
            for import in imports {
                // Both the module the path names and the file that defines the item count: a
                // re-export from a higher module is still a reach upward.
                let highest = [import.named, import.target]
                    .into_iter()
                    .filter_map(|t| layer_of(&self.files[t].module).map(|layer| (layer, t)))
                    .max();
                let Some((to, target)) = highest else {
                    continue;
                };
                if to > from {
                    out.push(format!(
                        "{}:{}: `{}` imports upward, from layer {from} ({}) to layer {to} ({})",
                        self.display(f),
                        import.line,
                        import.written,
                        self.files[f].module.join("::"),
                        self.files[target].module.join("::"),
                    ));
                }
            }
        }
        out
    }
}

/// Tarjan's strongly connected components: the state of one walk.
struct State {
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    next: usize,
    components: Vec<Vec<usize>>,
}
fn visit(v: usize, edges: &[BTreeSet<usize>], s: &mut State) {
    s.index[v] = Some(s.next);
    s.low[v] = s.next;
    s.next += 1;
    s.stack.push(v);
    s.on_stack[v] = true;
    for &w in &edges[v] {
        match s.index[w] {
            None => {
                visit(w, edges, s);
                s.low[v] = s.low[v].min(s.low[w]);
            }
            Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
            Some(_) => {}
        }
    }
    if Some(s.low[v]) == s.index[v] {
        let mut component = Vec::new();
        while let Some(w) = s.stack.pop() {
            s.on_stack[w] = false;
            component.push(w);
            if w == v {
                break;
            }
        }
        s.components.push(component);
    }
}

/// The layer of a library module: where its top-level module sits; the crate root is on top.
fn library_layer(module: &[String]) -> Option<usize> {
    let Some(top) = module.first() else {
        return Some(LIBRARY_LAYERS.len());
    };
    LIBRARY_LAYERS
        .iter()
        .position(|layer| layer.contains(&top.as_str()))
}

/// The layer of a binary module. `commands::*` is every command file; a command file may not
/// import another (same layer, but commands import only what is below them).
fn binary_layer(module: &[String]) -> Option<usize> {
    let name = if module.is_empty() {
        "main".to_owned()
    } else {
        module.join("::")
    };
    BINARY_LAYERS.iter().position(|layer| {
        layer.iter().any(|entry| {
            *entry == name
                || entry
                    .strip_suffix("::*")
                    .is_some_and(|parent| module.len() == 2 && module[0] == parent)
        })
    })
}

/// Command files that import another command file.
fn commands_importing_commands(krate: &Crate) -> Vec<String> {
    let is_command = |module: &[String]| module.len() == 2 && module[0] == "commands";
    let mut out = Vec::new();
    for (f, imports) in krate.imports.iter().enumerate() {
        if !is_command(&krate.files[f].module) {
            continue;
        }
        for import in imports {
            if is_command(&krate.files[import.target].module) {
                out.push(format!(
                    "{}:{}: `{}`: a command imports another command ({}); move what they share into the library, or into `settings` or `emit`",
                    krate.display(f),
                    import.line,
                    import.written,
                    krate.display(import.target)
                ));
            }
        }
    }
    out
}

/// Every rule over the two crates; the violations.
fn violations(library_src: &Path, binary_src: &Path) -> Vec<String> {
    let library = Crate::load("tilefit-core", library_src);
    let binary = Crate::load("tilefit", binary_src);
    let mut out = Vec::new();
    out.extend(library.upward(&library_layer));
    out.extend(library.cycles());
    out.extend(binary.upward(&binary_layer));
    out.extend(commands_importing_commands(&binary));
    out.extend(binary.cycles());
    for krate in [&library, &binary] {
        for (f, file) in krate.files.iter().enumerate() {
            if file.lines > MAX_LINES {
                out.push(format!(
                    "{}: {} lines, over {MAX_LINES}: split the ideas that share it",
                    krate.display(f),
                    file.lines
                ));
            }
            let command =
                krate.name == "tilefit" && file.module.len() == 2 && file.module[0] == "commands";
            if command && file.lines > MAX_COMMAND_LINES {
                out.push(format!(
                    "{}: a command of {} lines, over {MAX_COMMAND_LINES}: move the work into the library",
                    krate.display(f),
                    file.lines
                ));
            }
            let run =
                krate.name == "tilefit-core" && file.module.first().is_some_and(|m| m == "run");
            if run && file.lines > MAX_RUN_LINES {
                out.push(format!(
                    "{}: {} lines of `run`, over {MAX_RUN_LINES}: move the domain work into its stage",
                    krate.display(f),
                    file.lines
                ));
            }
        }
    }
    out
}

#[test]
fn the_code_keeps_its_layers_has_no_cycles_and_no_long_files() {
    let root = root();
    let found = violations(
        &root.join("crates/tilefit-core/src"),
        &root.join("crates/tilefit/src"),
    );
    assert!(
        found.is_empty(),
        "{} layering violations:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The size rule holds for the tests too (this checker's own files included).
/// The layers of the table under `header` in ARCHITECTURE.md: per row, the modules in its
/// second column (the library's table, and the Python half's).
fn documented_layers(text: &str, header: &str) -> Vec<Vec<String>> {
    let Some(start) = text.find(header) else {
        return Vec::new();
    };
    text[start..]
        .lines()
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|row| {
            let modules = row.split('|').nth(2).unwrap_or_default();
            modules
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect()
        })
        .collect()
}

#[test]
fn the_map_lists_the_layers_the_test_keeps() {
    let map = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let documented = documented_layers(&map, "| layer | modules | owns |");
    let kept: Vec<Vec<String>> = LIBRARY_LAYERS
        .iter()
        .map(|layer| layer.iter().map(|m| (*m).to_owned()).collect())
        .collect();
    assert_eq!(
        documented, kept,
        "ARCHITECTURE.md's layer table and LIBRARY_LAYERS differ: change both together"
    );
    // Every module of the library is in a layer.
    let lib = std::fs::read_to_string(root().join("crates/tilefit-core/src/lib.rs")).unwrap();
    for line in lib.lines() {
        if let Some(module) = line
            .strip_prefix("pub mod ")
            .and_then(|m| m.strip_suffix(';'))
        {
            assert!(
                kept.iter().flatten().any(|m| m == module),
                "`{module}` is in no layer"
            );
        }
    }
}

#[test]
fn no_test_file_is_over_the_line_limit() {
    let root = root();
    let mut files = Vec::new();
    for dir in ["crates/tilefit-core/tests", "crates/tilefit/tests"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 20, "{files:?}");
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).unwrap().lines().count();
            (lines > MAX_LINES).then(|| format!("{}: {lines} lines", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "over {MAX_LINES} lines: {long:?}");
}

/// The checker itself: a copy of the tree with one planted wrong import (the device table
/// importing the renderer) fails, naming the file, the line and the `use`.
#[test]
fn a_planted_wrong_import_fails_and_is_named() {
    let root = root();
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("layering-planted-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    copy_tree(&root.join("crates/tilefit-core/src"), &scratch.join("core"));
    copy_tree(&root.join("crates/tilefit/src"), &scratch.join("bin"));
    let table = scratch.join("core/device/table.rs");
    let text = std::fs::read_to_string(&table).unwrap();
    std::fs::write(&table, format!("use crate::render::Terminal;\n{text}")).unwrap();
    let found = violations(&scratch.join("core"), &scratch.join("bin"));
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(
        found
            .iter()
            .any(|v| v.contains("device/table.rs:1: `crate::render::Terminal` imports upward")),
        "{found:#?}"
    );
}

/// The checker's parts on small inputs.
#[test]
fn use_trees_paths_and_comments() {
    assert_eq!(
        expand("crate::a::{b, c::{d as e, self}, f}"),
        [
            "crate::a::b",
            "crate::a::c::d",
            "crate::a::c",
            "crate::a::f"
        ]
    );
    let code = strip(
        "use crate::a::B; // crate::x::Y\nlet s = \"crate::z::W\"; let c = '\"'; super::q::r();\n",
    );
    let paths: Vec<(usize, String)> = paths_in(&code)
        .into_iter()
        .map(|(line, path, _)| (line, path))
        .collect();
    assert_eq!(
        paths,
        [(1, "crate::a::B".to_owned()), (2, "super::q::r".to_owned())]
    );
    let tests = without_tests(
        "fn a() {}\n#[cfg(test)]\nmod tests {\n use crate::x::Y;\n}\nuse crate::b::C;\n",
    );
    let paths: Vec<String> = paths_in(&tests).into_iter().map(|(_, p, _)| p).collect();
    assert_eq!(paths, ["crate::b::C"]);
    assert_eq!(
        module_of(Path::new("src"), Path::new("src/a/b/mod.rs")),
        ["a", "b"]
    );
    assert!(module_of(Path::new("src"), Path::new("src/lib.rs")).is_empty());
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        if path.is_dir() {
            copy_tree(&path, &to.join(entry.file_name()));
        } else {
            std::fs::copy(&path, to.join(entry.file_name())).unwrap();
        }
    }
}
