//! Files another machine wrote (saved reports, shards, config exports) read as hostile: before
//! one is turned into typed data, every string in it is checked, so a path, a name or a version
//! holding a newline, an escape sequence or a bidirectional override is an error naming the file's
//! field, never text that reaches a log or generated code. Only fields that carry a compiler's, a
//! worker's or a captured script's words may hold control characters (a script's output has
//! tabs, carriage returns and colour codes): every renderer escapes them when it prints
//! (`escape`), and a report tilefit wrote must always read back. Records a captured script's
//! process wrote are read with [`read_json_escaping`]: a name or value holding a control
//! character becomes its escaped text, one field, never a lost target. Part of the input stage.

use serde_json::Value;

/// Fields whose text is a message (a compile diagnostic, a worker's stderr, a captured script's
/// output, error and traceback): any control character is allowed there, escaped when printed.
const MESSAGE_FIELDS: &[&str] = &[
    "message",
    "diagnostic",
    "detail",
    "stderr",
    "traceback",
    "reason",
    "import_error",
    "error",
    "fallback",
    // A captured kernel's scope file: Python source (its own text escaped by `repr`).
    "scopes",
    // A captured script's output, and a target's or child's failure (which quotes it).
    "stdout_tail",
    "stderr_tail",
    "failure",
    // The captured script's arguments, as the user gave them.
    "script_args",
];

/// The most strings one file may hold: far above any report tilefit writes (a 10,000-config
/// sweep has a few hundred thousand).
const MAX_STRINGS: usize = 20_000_000;

/// Why a file from elsewhere could not be read.
#[derive(Debug, thiserror::Error)]
pub enum UntrustedError {
    /// The OS could not read it.
    #[error("cannot read `{path}`")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Not JSON (or nested deeper than serde_json's limit of 128).
    #[error("`{path}` is not JSON: {detail}")]
    NotJson {
        /// The file.
        path: String,
        /// serde_json's words.
        detail: String,
    },
    /// A string that no field of its kind may hold.
    #[error("`{path}`: {detail}")]
    Field {
        /// The file.
        path: String,
        /// Which field, and what it holds.
        detail: String,
    },
}

impl UntrustedError {
    /// What to do about a value no field may hold (`None` for the other errors, whose hint
    /// depends on what the caller expected the file to be).
    pub fn field_hint(&self) -> Option<&'static str> {
        matches!(self, UntrustedError::Field { .. }).then_some(
            "tilefit never writes such a value: the file was edited or made elsewhere; write it again with tilefit",
        )
    }
}

/// Read a JSON file another machine may have written: parsed (serde_json refuses nesting deeper
/// than 128 levels) and every string checked by [`check_strings`].
pub fn read_json(path: &std::path::Path) -> Result<Value, UntrustedError> {
    let shown = crate::escape::control(&path.display().to_string()).into_owned();
    let text = std::fs::read(path).map_err(|source| UntrustedError::Io {
        path: shown.clone(),
        source,
    })?;
    let json: Value = serde_json::from_slice(&text).map_err(|e| UntrustedError::NotJson {
        path: shown.clone(),
        detail: e.to_string(),
    })?;
    check_strings(&json).map_err(|detail| UntrustedError::Field {
        path: shown,
        detail,
    })?;
    Ok(json)
}

/// Read a JSON file a captured script's process wrote (its records): parsed, and every string
/// or key outside a message that holds a control character replaced by its escaped text
/// (`escape::control`), so one bad string is one escaped field. The escaped text is what every
/// report shows of it anyway; nothing is compiled from it (a kernel compiles from its scope file,
/// a message field, kept whole).
pub fn read_json_escaping(path: &std::path::Path) -> Result<Value, UntrustedError> {
    let shown = crate::escape::control(&path.display().to_string()).into_owned();
    let text = std::fs::read(path).map_err(|source| UntrustedError::Io {
        path: shown.clone(),
        source,
    })?;
    let mut json: Value = serde_json::from_slice(&text).map_err(|e| UntrustedError::NotJson {
        path: shown.clone(),
        detail: e.to_string(),
    })?;
    let mut seen = 0usize;
    escape_strings(&mut json, false, &mut seen).map_err(|detail| UntrustedError::Field {
        path: shown,
        detail,
    })?;
    Ok(json)
}

/// [`read_json_escaping`]'s walk: strings and keys outside messages escaped in place.
fn escape_strings(value: &mut Value, message: bool, seen: &mut usize) -> Result<(), String> {
    *seen += 1;
    if *seen > MAX_STRINGS {
        return Err(format!(
            "more than {MAX_STRINGS} values: not a file tilefit wrote"
        ));
    }
    let escaped = |text: &str, message: bool| -> Option<String> {
        text.chars()
            .any(|c| forbidden(c, message))
            .then(|| crate::escape::control(text).into_owned())
    };
    match value {
        Value::String(text) => {
            if let Some(safe) = escaped(text, message) {
                *text = safe;
            }
        }
        Value::Array(items) => {
            for item in items {
                escape_strings(item, message, seen)?;
            }
        }
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (key, mut item) in entries {
                let inner = message || MESSAGE_FIELDS.contains(&key.as_str());
                escape_strings(&mut item, inner, seen)?;
                // A key is a name, even in a message.
                let key = escaped(&key, false).unwrap_or(key);
                map.insert(key, item);
            }
        }
        _ => {}
    }
    Ok(())
}

/// Where a value sits in the file, as `results[3].kernel.file`.
fn field_path(path: &[String]) -> String {
    if path.is_empty() {
        return "(the top level)".to_owned();
    }
    let mut out = String::new();
    for part in path {
        if part.starts_with('[') || out.is_empty() {
            out.push_str(part);
        } else {
            out.push('.');
            out.push_str(part);
        }
    }
    out
}

/// What no field but a message may hold ([`crate::escape`]'s set).
fn forbidden(c: char, message: bool) -> bool {
    !message && crate::escape::is_unsafe(c)
}

/// The first string (or object key) of `value` holding a character no field of its kind may hold:
/// its field path and the character, as a sentence. `Ok` when there is none.
pub fn check_strings(value: &Value) -> Result<(), String> {
    let mut path = Vec::new();
    let mut seen = 0usize;
    walk(value, &mut path, false, &mut seen)
}

fn walk(
    value: &Value,
    path: &mut Vec<String>,
    message: bool,
    seen: &mut usize,
) -> Result<(), String> {
    let bad = |text: &str, path: &[String], message: bool| -> Result<(), String> {
        match text.chars().find(|c| forbidden(*c, message)) {
            None => Ok(()),
            Some(c) => Err(format!(
                "field `{}` holds the control character U+{:04X}, which no {} may hold",
                crate::escape::control(&field_path(path)),
                u32::from(c),
                if message {
                    "message"
                } else {
                    "name, path or value"
                }
            )),
        }
    };
    *seen += 1;
    if *seen > MAX_STRINGS {
        return Err(format!(
            "more than {MAX_STRINGS} values: not a file tilefit wrote"
        ));
    }
    match value {
        Value::String(text) => bad(text, path, message),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(format!("[{i}]"));
                walk(item, path, message, seen)?;
                path.pop();
            }
            Ok(())
        }
        Value::Object(map) => {
            for (key, item) in map {
                path.push(key.clone());
                bad(key, path, false)?;
                walk(
                    item,
                    path,
                    message || MESSAGE_FIELDS.contains(&key.as_str()),
                    seen,
                )?;
                path.pop();
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

impl crate::hint::Hint for UntrustedError {
    fn hint(&self) -> Option<String> {
        self.field_hint().map(str::to_owned)
    }
}

/// An [`UntrustedError`] of a file that was to be of a known kind: the same words and causes, and
/// for the errors whose hint depends on that kind, the caller's hint.
#[derive(Debug)]
pub struct Expected {
    /// What went wrong.
    pub error: UntrustedError,
    /// What to pass instead.
    pub hint: &'static str,
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for Expected {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.error)
    }
}

impl crate::hint::Hint for Expected {
    fn hint(&self) -> Option<String> {
        match &self.error {
            UntrustedError::Io { .. } => None,
            other => Some(other.field_hint().unwrap_or(self.hint).to_owned()),
        }
    }
}

/// [`read_json`] of a file that should be of a known kind; `hint` says what to pass.
pub fn read_json_expecting(path: &std::path::Path, hint: &'static str) -> Result<Value, Expected> {
    read_json(path).map_err(|error| Expected { error, hint })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_refused_by_field() {
        let ok = serde_json::json!({"kernel": {"file": "k.py"}, "error": {"diagnostic": "a\n  b"}});
        assert_eq!(check_strings(&ok), Ok(()));
        let bad = serde_json::json!({"results": [{}, {"kernel": {"file": "k.py\n::warning::x"}}]});
        let e = check_strings(&bad).unwrap_err();
        assert!(e.contains("`results[1].kernel.file`"), "{e}");
        assert!(e.contains("U+000A"), "{e}");
        // A message may hold any control character (a script's colours): escaped when printed.
        let escape = serde_json::json!({"error": {"message": "x\u{1b}[2J\r"}});
        assert_eq!(check_strings(&escape), Ok(()));
        let key = serde_json::json!({"by_arch": {"sm_90\n": 1}});
        assert!(check_strings(&key).unwrap_err().contains("by_arch"));
    }
}
