//! Reading Rust source as the layering test needs it: comments, string and char literals and
//! `#[cfg(test)]` items blanked (line numbers kept), a file's module path, `use` trees expanded,
//! and every path a file names with its line.

use std::path::{Path, PathBuf};

/// Blank comments, string and char literals (keeping newlines), so only code is searched.
pub(super) fn strip(text: &str) -> String {
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
pub(super) fn without_tests(code: &str) -> String {
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
pub(super) fn module_of(src: &Path, path: &Path) -> Vec<String> {
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

pub(super) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
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
pub(super) fn expand(tree: &str) -> Vec<String> {
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
pub(super) fn paths_in(code: &str) -> Vec<(usize, String, bool)> {
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
