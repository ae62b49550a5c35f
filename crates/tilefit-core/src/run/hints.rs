//! The first hint along an error's cause chain (uv's `diagnostics.rs`): the binary returns the
//! library's errors with `?`, and at the top prints `error:`, each `Caused by:` and the hint this
//! finds. Every library error with a next step is listed here once.

use std::error::Error;

use crate::hint::Hint;

/// The hint of one error, when it is one of the library's hinting errors.
pub fn of(error: &(dyn Error + 'static)) -> Option<String> {
    macro_rules! hinting {
        ($($ty:ty),* $(,)?) => {
            $(
                if let Some(e) = error.downcast_ref::<$ty>() {
                    return Hint::hint(e);
                }
            )*
        };
    }
    hinting!(
        crate::hint::Hinted,
        crate::input::spec::SpecError,
        crate::input::untrusted::UntrustedError,
        crate::device::LookupError,
        crate::device::TableError,
        crate::compile::toolchain::ToolchainError,
        crate::cuda::LiveError,
        crate::model::saved::SavedReportError,
        crate::explain::ExplainError,
        crate::run::probe_error::ProbeError,
        crate::run::toolchains::SelectError,
        crate::run::fleet::FleetError,
        crate::run::diff::DiffError,
        crate::run::matrix::MatrixError,
        crate::run::replay::ReplayError,
        crate::run::verify_local::VerifyError,
        crate::input::caches::CachesError,
        crate::model::read::NotAProbeReport,
        crate::model::read::ReadError,
        crate::input::untrusted::Expected,
        crate::input::capture::RecordsError,
        crate::device::emulated::NotEmulable,
        crate::run::capture::CaptureError,
        crate::run::fix_files::FixFilesError,
        crate::write::WriteError,
    );
    None
}

/// The first hint along an error's cause chain, from the outermost error in.
pub fn of_chain<'a>(chain: impl IntoIterator<Item = &'a (dyn Error + 'static)>) -> Option<String> {
    chain.into_iter().find_map(of)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// Every error type of the library that implements `Hint` is in the list above: a new one
    /// that is not would lose its hint at the top without a word.
    #[test]
    fn every_hinting_error_is_listed() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let listed = include_str!("hints.rs");
        let implementation = regex::Regex::new(r"impl (?:crate::hint::)?Hint for (\w+)").unwrap();
        let mut missing = Vec::new();
        let mut found = 0;
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for name in implementation.captures_iter(&text).map(|c| c[1].to_owned()) {
                found += 1;
                if !listed.contains(&format!("::{name},")) {
                    missing.push(format!("{name} ({})", file.display()));
                }
            }
        }
        assert!(found >= 20, "{found}");
        assert!(missing.is_empty(), "not listed in run::hints: {missing:?}");
    }

    /// The hint of an error wrapped by another (a provisioning failure around pip's) is found
    /// along the chain.
    #[test]
    fn the_first_hint_along_the_chain_is_found() {
        let inner = crate::compile::toolchain::ToolchainError::BadVersion {
            given: "3.6".to_owned(),
            suggestion: Some("3.6.0".to_owned()),
        };
        let outer = crate::run::toolchains::SelectError::Provisioning {
            version: "3.6".to_owned(),
            source: inner,
        };
        let first: &(dyn Error + 'static) = &outer;
        let chain: Vec<&(dyn Error + 'static)> = vec![first, first.source().unwrap()];
        assert_eq!(chain.len(), 2);
        assert!(of_chain(chain).is_some());
        let plain = std::io::Error::other("no hint here");
        assert_eq!(of(&plain), None);
    }
}
