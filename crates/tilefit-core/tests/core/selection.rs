//! A max-autotune selection's verdict: none of its Triton choices fitting crashes the compile
//! only where Inductor has no ATen kernel to fall back to.

use std::collections::BTreeMap;

use tilefit_core::input::capture::{InductorChoices, InductorKernel};
use tilefit_core::judge::capture::with_fallback;
use tilefit_core::model::capture::LaunchVerdict;

fn selection(fallback: Option<&str>) -> InductorKernel {
    InductorKernel {
        kernel: "triton_mm_0".to_owned(),
        kind: "template-choice".to_owned(),
        source: "c.py".to_owned(),
        no_valid_configs: None,
        choices: Some(InductorChoices {
            op: Some("triton_mm".to_owned()),
            of: 21,
            triton: 20,
            fallback: fallback.map(str::to_owned),
        }),
        tiles: BTreeMap::new(),
        retry: None,
    }
}

#[test]
fn no_fitting_choice_is_skipped_where_aten_runs_and_crashes_where_none_does() {
    let aten = selection(Some("ATen mm"));
    let triton_only = selection(None);
    assert_eq!(
        with_fallback(LaunchVerdict::NoneFits, Some(&aten)),
        LaunchVerdict::SomeSkipped
    );
    assert_eq!(
        with_fallback(LaunchVerdict::NoneFits, Some(&triton_only)),
        LaunchVerdict::NoneFits
    );
    // Every other verdict, and a launch that is no selection, as it was.
    for verdict in [
        LaunchVerdict::Fits,
        LaunchVerdict::SomeSkipped,
        LaunchVerdict::Over,
        LaunchVerdict::CompileError,
        LaunchVerdict::NotJudged,
    ] {
        assert_eq!(with_fallback(verdict, Some(&aten)), verdict);
    }
    assert_eq!(
        with_fallback(LaunchVerdict::NoneFits, None),
        LaunchVerdict::NoneFits
    );
}
