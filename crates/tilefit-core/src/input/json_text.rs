//! JSON text read the way the engines' loaders read it: Python's `json.load`, which takes `NaN`,
//! `Infinity` and `-Infinity`, keeps the *last* of repeated keys, and refuses a byte-order mark.
//! Also the one scanner of an object's top-level members as they sit in the text (where each
//! key and value starts and ends), which the reader uses to find repeated keys and the patcher to
//! rewrite one entry in place. Nothing here reads files.

use serde_json::Value;

/// A top-level member of a JSON object as it sits in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The key, decoded.
    pub key: String,
    /// Where the key's string literal starts.
    pub key_start: usize,
    /// Where the value starts and ends (exclusive).
    pub value_start: usize,
    /// Where the value ends (exclusive).
    pub value_end: usize,
}

/// The strings that stand for Python's non-finite floats once read (a JSON number cannot hold
/// them): config values are checked for them by name, never by value.
const NON_FINITE: [(&str, &str); 3] = [
    ("-Infinity", "\u{0}tilefit:-Infinity"),
    ("Infinity", "\u{0}tilefit:Infinity"),
    ("NaN", "\u{0}tilefit:NaN"),
];

/// Which non-finite float a value read by [`python_loads`] stands for (`NaN`, `Infinity`,
/// `-Infinity`), if it is one.
pub fn non_finite(value: &Value) -> Option<&'static str> {
    let text = value.as_str()?;
    NON_FINITE
        .iter()
        .find(|(_, stand_in)| *stand_in == text)
        .map(|(name, _)| *name)
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn skip_space(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && is_space(bytes[i]) {
        i += 1;
    }
    i
}

/// The end (exclusive) of the string literal that starts at `i` (a `"`).
fn string_end(bytes: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < bytes.len() {
        match bytes[j] {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// The end (exclusive) of the value that starts at `i`: a string, an object or array (brackets
/// balanced, strings skipped), or a scalar up to the next `,`, `}`, `]` or space.
fn value_end(bytes: &[u8], i: usize) -> Option<usize> {
    match bytes.get(i)? {
        b'"' => string_end(bytes, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < bytes.len() {
                match bytes[j] {
                    b'"' => {
                        j = string_end(bytes, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < bytes.len() && !matches!(bytes[j], b',' | b'}' | b']') && !is_space(bytes[j])
            {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

/// The top-level members of the object `text` holds, in the order written (repeated keys
/// included), or `None` when the text is not one object. The values are delimited, not checked:
/// parse the text for that.
pub fn top_level_members(text: &str) -> Option<Vec<Member>> {
    let bytes = text.as_bytes();
    let mut i = skip_space(bytes, 0);
    if bytes.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_space(bytes, i + 1);
    let mut members = Vec::new();
    if bytes.get(i) == Some(&b'}') {
        return Some(members);
    }
    loop {
        if bytes.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(bytes, i)?;
        let key: String = serde_json::from_str(text.get(i..key_end)?).ok()?;
        let colon = skip_space(bytes, key_end);
        if bytes.get(colon) != Some(&b':') {
            return None;
        }
        let value_start = skip_space(bytes, colon + 1);
        let end = value_end(bytes, value_start)?;
        members.push(Member {
            key,
            key_start: i,
            value_start,
            value_end: end,
        });
        i = skip_space(bytes, end);
        match bytes.get(i) {
            Some(b',') => i = skip_space(bytes, i + 1),
            Some(b'}') => return Some(members),
            _ => return None,
        }
    }
}

/// The keys written more than once at the top level, each once, in the order first written.
pub fn repeated_keys(members: &[Member]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut repeated: Vec<String> = Vec::new();
    for member in members {
        if !seen.insert(member.key.as_str()) && !repeated.contains(&member.key) {
            repeated.push(member.key.clone());
        }
    }
    repeated
}

/// Why a text is not what Python's `json.load` reads, or the value it reads: `NaN`, `Infinity`
/// and `-Infinity` are read (as stand-ins [`non_finite`] names), and of repeated keys the last
/// one wins, as in Python. A byte-order mark is refused, as Python refuses it.
pub fn python_loads(text: &str) -> Result<Value, String> {
    if text.starts_with('\u{feff}') {
        return Err(
            "starts with a UTF-8 byte-order mark, which Python's `json.load` refuses (\"Unexpected UTF-8 BOM\")"
                .to_owned(),
        );
    }
    // The non-finite words outside strings, written as stand-in strings.
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'"' {
            i = string_end(bytes, i).unwrap_or(bytes.len());
            continue;
        }
        let found = NON_FINITE
            .iter()
            .find(|(word, _)| bytes[i..].starts_with(word.as_bytes()));
        if let Some((word, stand_in)) = found {
            out.push_str(&text[at..i]);
            out.push_str(&Value::from(*stand_in).to_string());
            i += word.len();
            at = i;
            continue;
        }
        i += 1;
    }
    out.push_str(&text[at..]);
    serde_json::from_str(&out).map_err(|e| format!("is not valid JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_found_as_written_repeats_included() {
        let text = "{\"1\": {\"a\": [1, {\"}\": 2}]}, \"2\":3 ,\"1\" : {\"b\": \"x\\\"}\"}}";
        let members = top_level_members(text).unwrap();
        let keys: Vec<&str> = members.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(keys, ["1", "2", "1"]);
        assert_eq!(
            &text[members[2].value_start..members[2].value_end],
            "{\"b\": \"x\\\"}\"}"
        );
        assert_eq!(repeated_keys(&members), ["1"]);
        assert_eq!(top_level_members("[1]"), None);
        assert_eq!(top_level_members("{\"a\" 1}"), None);
        assert_eq!(top_level_members(" { } "), Some(Vec::new()));
    }

    #[test]
    fn python_s_reading_of_non_finite_numbers_repeats_and_marks() {
        let value = python_loads(
            "{\"1\": {\"num_warps\": NaN, \"x\": -Infinity, \"s\": \"NaN\"}, \"1\": {\"k\": 1}}",
        );
        // The last repeat wins, as in Python.
        assert_eq!(value.unwrap(), serde_json::json!({"1": {"k": 1}}));
        let value = python_loads("{\"1\": {\"num_warps\": NaN, \"s\": \"NaN Infinity\"}}").unwrap();
        assert_eq!(non_finite(&value["1"]["num_warps"]), Some("NaN"));
        assert_eq!(value["1"]["s"], "NaN Infinity");
        assert_eq!(non_finite(&value["1"]["s"]), None);
        assert!(
            python_loads("\u{feff}{}")
                .unwrap_err()
                .contains("byte-order mark")
        );
        assert!(python_loads("{,}").is_err());
        // Found by the fuzzer: a word search that starts inside a character.
        assert!(python_loads("{\"\u{133}\": Infinity x}").is_err());
    }
}
