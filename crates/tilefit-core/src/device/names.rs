//! Device names as lookup keys: the one normalization every name in the table and every query goes
//! through, and what a key points at. Shared by the table's index (built at load) and the lookup.

/// Words that vendors and drivers put in front of product names and that never tell two products
/// apart in this table.
const VENDOR_WORDS: &[&str] = &["nvidia", "geforce", "amd", "radeon", "instinct", "tesla"];

/// What a lookup key points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum TargetRef {
    Arch(usize),
    Product(usize),
}

/// The one normalization every lookup key and query goes through.
///
/// Lowercase; AMD target features (`gfx942:sramecc+:xnack-`) dropped; a compute capability
/// (`12.0`) becomes `sm120`; punctuation and vendor words dropped; NVIDIA's arch-specific and
/// family suffixes (`sm_90a`, `sm_100f`) dropped, since they share the base arch's limits.
pub fn normalize_name(name: &str) -> String {
    let lower = name.trim().to_lowercase();
    let base = if lower.starts_with("gfx") {
        lower.split(':').next().unwrap_or_default()
    } else {
        lower.as_str()
    };
    if let Some((major, minor)) = base.split_once('.') {
        let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
        if digits(major) && digits(minor) && minor.len() == 1 {
            return format!("sm{major}{minor}");
        }
    }
    let joined: String = base
        .split(|c: char| !c.is_alphanumeric())
        .filter(|token| !token.is_empty() && !VENDOR_WORDS.contains(token))
        .collect();
    strip_arch_suffix(&joined).to_owned()
}

/// `sm90a` -> `sm90`, `sm100f` -> `sm100`; anything else unchanged.
fn strip_arch_suffix(key: &str) -> &str {
    let Some(rest) = key.strip_prefix("sm") else {
        return key;
    };
    let digits = rest.trim_end_matches(['a', 'f']);
    let suffix_len = rest.len() - digits.len();
    if suffix_len <= 1 && !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) {
        &key[..key.len() - suffix_len]
    } else {
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffix_stripping_leaves_other_names_alone() {
        assert_eq!(strip_arch_suffix("smaf"), "smaf");
        assert_eq!(strip_arch_suffix("sm120af"), "sm120af");
        assert_eq!(strip_arch_suffix("spark"), "spark");
    }
}
