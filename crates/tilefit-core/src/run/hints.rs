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
        crate::run::probe::ProbeError,
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
    );
    None
}

/// The first hint along an error's cause chain, from the outermost error in.
pub fn of_chain<'a>(chain: impl IntoIterator<Item = &'a (dyn Error + 'static)>) -> Option<String> {
    chain.into_iter().find_map(of)
}
