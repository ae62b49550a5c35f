//! A max-autotune selection's verdict: none of its Triton choices fitting crashes the compile
//! only where Inductor has no ATen kernel to fall back to. And a template's fix candidates: its
//! tiles, constants of its generated source, edited where Inductor wrote them.

use std::collections::BTreeMap;

use tilefit_core::fix::launch::edit_tiles;
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

#[test]
fn a_template_s_tiles_are_edited_only_where_inductor_wrote_them_and_only_tile_names() {
    let scope = "_f = _define('jit', 'k', 'm', 'k.py', 1, 'def k(x):\\n    BLOCK_M : tl.constexpr = 64\\n    BLOCK_M1 : tl.constexpr = 64\\n    return x\\n')\n";
    let tiles = BTreeMap::from([("BLOCK_M".to_owned(), 64), ("BLOCK_M1".to_owned(), 64)]);
    let edited = edit_tiles(scope, &tiles, &BTreeMap::from([("BLOCK_M".to_owned(), 32)])).unwrap();
    assert!(
        edited.contains("BLOCK_M : tl.constexpr = 32\\n"),
        "{edited}"
    );
    // BLOCK_M1 is another constant: kept.
    assert!(
        edited.contains("BLOCK_M1 : tl.constexpr = 64\\n"),
        "{edited}"
    );
    // A tile the source does not set as captured: no edit.
    let moved = BTreeMap::from([("BLOCK_M".to_owned(), 128)]);
    assert!(edit_tiles(scope, &moved, &BTreeMap::from([("BLOCK_M".to_owned(), 32)])).is_none());
    // A name that is not a tile's never reaches the code that is compiled.
    let hostile = "BLOCK_M = 1\\nimport os".to_owned();
    let tiles = BTreeMap::from([(hostile.clone(), 64)]);
    assert!(edit_tiles(scope, &tiles, &BTreeMap::from([(hostile, 32)])).is_none());
}
