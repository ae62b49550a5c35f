//! Forgiving name lookup: `rtx-pro-6000`, `RTX PRO 6000 Blackwell`, `NVIDIA RTX PRO 6000 Blackwell
//! Server Edition`, `sm_120`, `sm120`, `sm_120a`, `12.0`, `gfx942:sramecc+:xnack-` and `mi300x` all
//! resolve. Names are compared after one normalization (case, punctuation and vendor words
//! dropped), so the index holds exactly one key per spelling and a clash is caught at load. An
//! unknown name is an error carrying the closest known names, never a silent nearest match.

use std::collections::HashMap;

use super::names::{TargetRef, normalize_name};
use super::table::{ArchSpec, DeviceTable, Product};

/// How many close names an unknown-name error offers.
const MAX_SUGGESTIONS: usize = 5;

/// Similarity (0..1) above which a known name is offered as a suggestion.
const SUGGESTION_THRESHOLD: f64 = 0.5;

/// The result of resolving one name.
#[derive(Debug, Clone, Copy)]
pub enum Resolved<'a> {
    /// The name was an architecture (`sm_120`, `12.0`, `gfx942`).
    Arch(&'a ArchSpec),
    /// The name was a product; its arch comes with it.
    Product(&'a Product, &'a ArchSpec),
}

impl<'a> Resolved<'a> {
    /// The architecture whose limits apply.
    pub fn arch(&self) -> &'a ArchSpec {
        match self {
            Resolved::Arch(arch) | Resolved::Product(_, arch) => arch,
        }
    }

    /// The product, when a product was named.
    pub fn product(&self) -> Option<&'a Product> {
        match self {
            Resolved::Arch(_) => None,
            Resolved::Product(product, _) => Some(product),
        }
    }

    /// The canonical name of what was resolved.
    pub fn display_name(&self) -> &'a str {
        match self {
            Resolved::Arch(arch) => &arch.arch,
            Resolved::Product(product, _) => &product.name,
        }
    }
}

/// A name that did not resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// Nothing in the table has this name.
    #[error("unknown device `{query}`")]
    Unknown {
        /// What was asked for.
        query: String,
        /// Closest known names, best first.
        suggestions: Vec<String>,
    },
    /// The name was empty or only punctuation.
    #[error("empty device name `{0}`")]
    Empty(String),
    /// A known product on a backend tilefit does not compile for.
    #[error(
        "`{query}` is {name}, a GPU of Triton's `{backend}` backend, which tilefit does not compile for"
    )]
    Unsupported {
        /// What was asked for.
        query: String,
        /// The product's name.
        name: String,
        /// The backend it needs.
        backend: String,
    },
}

impl LookupError {
    /// What the user can do next.
    pub fn hint(&self) -> String {
        match self {
            LookupError::Unknown { suggestions, .. } if !suggestions.is_empty() => format!(
                "did you mean {}? `tilefit devices` lists every known name",
                suggestions
                    .iter()
                    .map(|s| format!("`{s}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => "`tilefit devices` lists every known name; an arch such as `sm_120` or `gfx942` always works".to_owned(),
        }
    }
}

impl DeviceTable {
    /// Resolve a name a person typed or a driver printed.
    pub fn resolve(&self, name: &str) -> Result<Resolved<'_>, LookupError> {
        let key = normalize_name(name);
        if key.is_empty() {
            return Err(LookupError::Empty(name.to_owned()));
        }
        if let Some(foreign) = self.foreign().iter().find(|f| {
            std::iter::once(&f.name)
                .chain(&f.aliases)
                .any(|n| normalize_name(n) == key)
        }) {
            return Err(LookupError::Unsupported {
                query: name.to_owned(),
                name: foreign.name.clone(),
                backend: foreign.backend.clone(),
            });
        }
        match self.index.get(&key) {
            Some(target) => Ok(self.target(*target)),
            None => Err(LookupError::Unknown {
                query: name.to_owned(),
                suggestions: self.suggestions(&key),
            }),
        }
    }

    fn target(&self, target: TargetRef) -> Resolved<'_> {
        match target {
            TargetRef::Arch(i) => Resolved::Arch(&self.archs()[i]),
            TargetRef::Product(i) => {
                let product = &self.products()[i];
                let arch = self
                    .arch(&product.arch)
                    .expect("validated at load: every product maps to a known arch");
                Resolved::Product(product, arch)
            }
        }
    }

    /// Known names closest to a normalized query, best first, one per target.
    fn suggestions(&self, key: &str) -> Vec<String> {
        let mut best: HashMap<TargetRef, f64> = HashMap::new();
        for (candidate, target) in &self.index {
            let mut score = strsim::normalized_damerau_levenshtein(key, candidate);
            if key.len() >= 2 && (candidate.contains(key) || key.contains(candidate.as_str())) {
                score = score.max(0.8);
            }
            let entry = best.entry(*target).or_insert(0.0);
            *entry = entry.max(score);
        }
        let mut ranked: Vec<(f64, String)> = best
            .into_iter()
            .map(|(target, score)| (score, self.target(target).display_name().to_owned()))
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let close: Vec<String> = ranked
            .iter()
            .filter(|(score, _)| *score >= SUGGESTION_THRESHOLD)
            .take(MAX_SUGGESTIONS)
            .map(|(_, name)| name.clone())
            .collect();
        if close.is_empty() {
            ranked.into_iter().take(3).map(|(_, name)| name).collect()
        } else {
            close
        }
    }
}

impl crate::hint::Hint for LookupError {
    fn hint(&self) -> Option<String> {
        Some(LookupError::hint(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalization_folds_spellings_together() {
        assert_eq!(normalize_name("rtx-pro-6000"), "rtxpro6000");
        assert_eq!(normalize_name("RTX PRO 6000"), "rtxpro6000");
        assert_eq!(normalize_name("NVIDIA GeForce RTX 4090"), "rtx4090");
        assert_eq!(normalize_name("sm_120"), "sm120");
        assert_eq!(normalize_name("sm_90a"), "sm90");
        assert_eq!(normalize_name("sm_100f"), "sm100");
        assert_eq!(normalize_name("12.0"), "sm120");
        assert_eq!(normalize_name(" 9.0 "), "sm90");
        assert_eq!(normalize_name("gfx942:sramecc+:xnack-"), "gfx942");
        assert_eq!(normalize_name("AMD Instinct MI300X"), "mi300x");
    }
}
