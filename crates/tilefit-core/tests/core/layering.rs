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
//! - **Size.** No `.rs` file over [`MAX_LINES`] lines; no command file over
//!   [`MAX_COMMAND_LINES`].
//!
//! A violation names the file, the line and the offending `use` or path.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// No source file is longer: past this, two ideas share a file.
const MAX_LINES: usize = 700;
/// A command of the binary parses, calls the library once, prints and exits.
const MAX_COMMAND_LINES: usize = 120;

/// The library's top-level modules, lowest layer first. A module may import from its own layer
/// and the layers below; within a layer, modules may import each other (cycles are caught apart).
const LIBRARY_LAYERS: &[&[&str]] = &[
    // Small helpers every stage may use: no domain knowledge.
    &["units", "escape", "cancel", "digest", "hint"],
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
    // What every command shares: flags resolved into settings and modes, progress, where a
    // report goes and what it exits with.
    &["settings", "progress", "emit"],
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

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Blank comments, string and char literals (keeping newlines), so only code is searched.
fn strip(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !chars
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let close: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let rest: String = chars[j + 1..].iter().collect();
            let end = rest.find(&close).map_or(chars.len(), |k| {
                j + 1 + rest[..k].chars().count() + close.chars().count()
            });
            for ch in &chars[i..end] {
                out.push(blank(*ch));
            }
            i = end;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1b}'), not a lifetime ('a).
            let close = if next == Some('\\') {
                chars[i + 2..]
                    .iter()
                    .position(|&ch| ch == '\'')
                    .map(|k| i + 2 + k)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            if let Some(end) = close {
                for _ in i..=end {
                    out.push(' ');
                }
                i = end + 1;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Blank `#[cfg(test)]` items (test modules and test-only functions): tests may reach anywhere.
fn without_tests(code: &str) -> String {
    let mut out: Vec<char> = code.chars().collect();
    let text: String = out.iter().collect();
    let mut from = 0;
    while let Some(at) = text[from..].find("#[cfg(test)]") {
        let start = from + at;
        let start_char = text[..start].chars().count();
        let rest: Vec<char> = text[start..].chars().collect();
        // The item ends at its closing brace, or at `;` for an item without a body.
        let mut depth = 0;
        let mut end = rest.len();
        for (k, ch) in rest.iter().enumerate().skip("#[cfg(test)]".len()) {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                _ => {}
            }
        }
        for ch in out.iter_mut().skip(start_char).take(end) {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
        from = start + "#[cfg(test)]".len();
    }
    out.into_iter().collect()
}

/// The module path of a file under `src`: `a/b.rs` and `a/b/mod.rs` are `a::b`; the crate root
/// is empty.
fn module_of(src: &Path, path: &Path) -> Vec<String> {
    let relative = path.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") || !parts.is_empty() && stem != "mod" {
        parts.push(stem.to_owned());
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Expand a use tree (`a::{b, c::{d as e}, self}`) into its paths.
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap().trim().to_owned();
        return vec![path];
    };
    let prefix = tree[..open].trim().trim_end_matches("::").to_owned();
    let inner = &tree[open + 1..tree.rfind('}').unwrap()];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (k, ch) in inner.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    let mut out = Vec::new();
    for part in parts.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
        for path in expand(part) {
            if path == "self" {
                out.push(prefix.clone());
            } else {
                out.push(format!("{prefix}::{path}"));
            }
        }
    }
    out
}

/// Every path a file names, with its line: `use` trees expanded, and paths in code that start
/// at `crate`, `super` or `self`. Returns (line, path, is a public re-export).
fn paths_in(code: &str) -> Vec<(usize, String, bool)> {
    let mut out = Vec::new();
    let line_at = |offset: usize| code[..offset].matches('\n').count() + 1;
    let bytes = code.as_bytes();
    let mut uses: Vec<(usize, usize)> = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("use ") {
        let start = from + at;
        from = start + 4;
        let before = code[..start].trim_end();
        let boundary =
            start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        let is_item = before.is_empty()
            || before.ends_with(';')
            || before.ends_with('}')
            || before.ends_with('{')
            || before.ends_with(']')
            || before.ends_with("pub")
            || before.ends_with(')');
        if !boundary || !is_item {
            continue;
        }
        let Some(end) = code[start..].find(';') else {
            continue;
        };
        let public = before.ends_with("pub") || before.ends_with(')') && before.contains("pub(");
        let tree = &code[start + 4..start + end];
        for path in expand(tree) {
            out.push((line_at(start), path, public));
        }
        uses.push((start, start + end));
    }
    // Paths in code, outside use items.
    let mut k = 0;
    while k < code.len() {
        let rest = &code[k..];
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .any(|p| rest.starts_with(p));
        let boundary = k == 0
            || !(bytes[k - 1].is_ascii_alphanumeric()
                || bytes[k - 1] == b'_'
                || bytes[k - 1] == b':');
        if starts && boundary && !uses.iter().any(|(s, e)| (*s..*e).contains(&k)) {
            let len = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            let path = rest[..len].trim_end_matches(':').to_owned();
            out.push((line_at(k), path, false));
            k += len;
        } else {
            k += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    out
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
