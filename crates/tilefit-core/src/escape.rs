//! Escaping what came from outside, in one place, for every way tilefit's text leaves it: a
//! terminal or CI log (control characters shown as escapes; a line that would start with `::`,
//! which GitHub's runner reads as a workflow command, defused), GitHub workflow commands
//! (`%`, CR, LF, and in properties `:` and `,`), Markdown (text, and code spans that cannot be
//! closed), HTML, and Python literals in generated code: one escaper per format, each handling
//! newlines, backticks, pipes, `[]()`, `<>` and `::`. Beside the stages, like `units`: the input
//! stage names bad values with it, the render stage and the binary print through it.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether a character must not reach a log raw: C0 and C1 controls (newlines included), DEL,
/// the line and paragraph separators, and the bidirectional overrides that make text read other
/// than it is. The untrusted-input reader refuses the same set.
pub(crate) fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `\u{1b}`: a character written as its visible escape.
fn push_escaped(out: &mut String, c: char) {
    let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
}

/// One value from outside, made one line of plain text: every control character (newline, tab,
/// escape, ...) written as a visible escape (`\n`, `\t`, `\u{1b}`), everything else as it is.
pub fn control(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_unsafe(c) => push_escaped(&mut out, c),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A whole text bound for a terminal or a CI log, made safe line by line: control characters
/// other than the newline and the tab are escaped, and a line whose first non-blank characters
/// are `::` gets a backslash before them, so no line can act as a GitHub workflow command. The
/// GitHub exporter's own annotations are the only lines that skip this.
pub fn log_text(text: &str) -> Cow<'_, str> {
    let risky = text.chars().any(|c| c != '\n' && c != '\t' && is_unsafe(c))
        || text.lines().any(|l| l.trim_start().starts_with("::"));
    if !risky {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let blank = line.len() - line.trim_start().len();
        let (indent, rest) = line.split_at(blank);
        out.push_str(indent);
        if rest.starts_with("::") {
            out.push('\\');
        }
        for c in rest.chars() {
            if c != '\t' && is_unsafe(c) {
                push_escaped(&mut out, c);
            } else {
                out.push(c);
            }
        }
    }
    Cow::Owned(out)
}

/// A GitHub workflow command's message: `%`, CR and LF escaped as the runner decodes them.
pub fn workflow_data(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            c if is_unsafe(c) => push_escaped(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// A GitHub workflow command's property value (`file=`, `title=`): the message's escapes plus
/// `:` and `,`, which end a property.
pub fn workflow_property(text: &str) -> String {
    workflow_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// A Python string literal holding `text` exactly (a JSON string is one, once `\u` escapes are
/// all it uses for what Python would read otherwise): generated code carries values only as
/// literals, never as raw text in code or comments.
pub fn python_str(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_ascii_graphic() || c == ' ' => out.push(c),
            c if u32::from(c) <= 0xffff => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => {
                let _ = write!(out, "\\U{:08x}", u32::from(c));
            }
        }
    }
    out.push('"');
    out
}

/// Text from outside as Markdown text (GitHub-flavoured, a table cell included): one line
/// (controls as visible escapes), `&`, `<` and `>` as entities (no raw HTML, no unclosed
/// `<details>`), and a backslash before what would start a link, an image or emphasis, or end a
/// table cell (`[`, `]`, `*`, `|`, `\`). Backticks pair into code spans only when they are
/// balanced on the line (a message's own `` `name` ``); an odd one out is escaped, so no span
/// stays open. Inside a span nothing is live either way: brackets and angles are escaped
/// everywhere. A bare URL is kept from becoming a link (`https\\://`). A `::` cannot start a
/// line: there is no line to start.
pub fn markdown(text: &str) -> String {
    let text = control(text);
    let balanced = text.chars().filter(|c| *c == '`').count() % 2 == 0;
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '`' if balanced => out.push(c),
            '[' | ']' | '`' | '*' | '|' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    // GitHub turns a bare `https://...` or `www....` into a link: a backslash keeps it text.
    out.replace("://", "\\://").replace("www.", "www\\.")
}

/// Text from outside as a Markdown code span that nothing in it can close: fenced by one more
/// backtick than its longest run of them, padded when it starts or ends with one; one line
/// (controls as visible escapes). Inside a table, pass it through [`markdown_cell`].
pub fn markdown_code(text: &str) -> String {
    let text = control(text);
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') || text.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// A drawn Markdown fragment made safe as one table cell: a `|` (even in a code span) would end
/// the cell.
pub fn markdown_cell(fragment: &str) -> String {
    fragment.replace('|', "\\|")
}

/// Text from outside as HTML text or a double-quoted attribute value: `&`, `<`, `>` and `"` as
/// entities (tilefit's HTML quotes every attribute with `"`).
pub fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_become_visible_escapes() {
        assert_eq!(control("plain"), "plain");
        assert_eq!(
            control("k\n::warning file=README.md::x\u{1b}[31m"),
            "k\\n::warning file=README.md::x\\u{1b}[31m"
        );
        assert_eq!(control("a\u{202e}b"), "a\\u{202e}b");
    }

    #[test]
    fn no_line_of_a_log_text_is_a_workflow_command() {
        let text =
            "table\n::warning file=README.md,line=1::pwned\n   ::error::x\nok ::not at start\n";
        let safe = log_text(text);
        for line in safe.lines() {
            assert!(!line.trim_start().starts_with("::"), "{line}");
        }
        assert!(safe.contains("\\::warning file=README.md"));
        assert!(safe.contains("ok ::not at start"));
        assert_eq!(log_text("a\tb\n"), "a\tb\n");
        assert_eq!(log_text("a\rb"), "a\\u{d}b");
    }

    /// What a pull request can put in a file name or a JSON key, for every format at once.
    pub(crate) const HOSTILE: &[&str] = &[
        "x\n# Heading\n::error::pwned",
        "<details><summary>x",
        "<img src=https://tracker.example/p.png>",
        "[click](https://evil.example)",
        "![t](https://tracker.example/p.png)",
        "a|b` ``c",
        "```\n::warning::x",
        "\u{1b}[31mred\r\n",
    ];

    #[test]
    fn every_format_keeps_hostile_text_inert() {
        for text in HOSTILE {
            for (format, out) in [
                ("markdown", markdown(text)),
                ("code", markdown_code(text)),
                ("html", html(&control(text))),
                ("log", control(text).into_owned()),
            ] {
                assert!(
                    !out.contains('\n') && !out.contains('\r'),
                    "{format}: {out}"
                );
                // Raw HTML is never live in Markdown text or HTML (in a code span that cannot
                // close it is text, and a terminal draws no HTML).
                if format == "markdown" || format == "html" {
                    assert!(
                        !out.contains("<details") && !out.contains("<img"),
                        "{format}: {out}"
                    );
                }
                if format == "markdown" {
                    assert!(
                        !out.contains("[click]") && !out.replace("\\](", "").contains("]("),
                        "{out}"
                    );
                    assert!(!out.contains("https://"), "{out}");
                    assert!(!out.contains("a|b"), "{out}");
                }
            }
            // A code span ends only where it began its fence.
            let code = markdown_code(text);
            let fence: String = code.chars().take_while(|c| *c == '`').collect();
            assert!(code.ends_with(&fence));
            assert!(!code[fence.len()..code.len() - fence.len()].contains(&fence));
        }
        assert_eq!(markdown_code("k"), "`k`");
        assert_eq!(markdown_code("a`b"), "``a`b``");
        assert_eq!(markdown("E=8,N=1.json"), "E=8,N=1.json");
    }

    #[test]
    fn workflow_escapes_follow_the_runner() {
        assert_eq!(workflow_data("50%\r\nx"), "50%25%0D%0Ax");
        assert_eq!(workflow_property("a:b,c\n"), "a%3Ab%2Cc%0A");
    }

    #[test]
    fn python_literals_are_one_safe_string() {
        assert_eq!(python_str("k.py"), "\"k.py\"");
        assert_eq!(
            python_str("x\"\nimport os  # \\"),
            "\"x\\\"\\u000aimport os  # \\\\\""
        );
        assert_eq!(python_str("é"), "\"\\u00e9\"");
    }
}
