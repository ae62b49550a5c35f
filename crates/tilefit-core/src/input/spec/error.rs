//! Why a spec was refused: each error names the file and the field, with what to write instead.

/// Why a spec was refused. Each names the file and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// The spec file could not be read.
    #[error("cannot read the spec `{path}`: {reason}")]
    Read {
        /// The spec path.
        path: String,
        /// The OS error.
        reason: String,
    },
    /// The TOML does not parse or does not have the spec's shape.
    #[error("`{path}` is not a valid probe spec: {reason}")]
    Toml {
        /// The spec path.
        path: String,
        /// The parser's message, with line and column.
        reason: String,
    },
    /// A field's value is wrong.
    #[error("`{path}`: `{field}` {problem}")]
    Field {
        /// The spec path.
        path: String,
        /// The field, as `[section].key`.
        field: String,
        /// What is wrong with it.
        problem: String,
        /// What to write instead.
        fix: String,
    },
}

impl SpecError {
    /// What the user should do.
    pub fn hint(&self) -> String {
        match self {
            SpecError::Read { .. } => "check the path; spec paths are relative to the current directory".to_owned(),
            SpecError::Toml { reason, .. } => did_you_mean(reason).unwrap_or_else(|| {
                "the README's \"Probe specs\" section shows every field; examples/*/spec.toml are working specs".to_owned()
            }),
            SpecError::Field { fix, .. } => fix.clone(),
        }
    }
}

/// For serde's "unknown field `fucntion`, expected one of `file`, `function`": the closest one.
fn did_you_mean(reason: &str) -> Option<String> {
    let rest = reason.split("unknown field `").nth(1)?;
    let (unknown, rest) = rest.split_once('`')?;
    let expected: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    let (score, best) = expected
        .iter()
        .map(|e| (strsim::normalized_damerau_levenshtein(unknown, e), *e))
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    (score >= 0.5).then(|| format!("did you mean `{best}` instead of `{unknown}`?"))
}

pub(super) type FieldError<'a> = dyn Fn(&str, String, String) -> SpecError + 'a;

impl crate::hint::Hint for SpecError {
    fn hint(&self) -> Option<String> {
        Some(SpecError::hint(self))
    }
}
