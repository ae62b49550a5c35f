//! Flags `tilefit probe` cannot honour together are refused where the session is built, before
//! any work: with the flag named and what to do instead, exit 2, and nothing written (a refused
//! `--emit-files` folder is not made).

use std::path::Path;

use super::{fixture, scratch, tilefit_with};

#[test]
fn flags_that_cannot_go_together_are_refused_before_anything_is_written() {
    let dir = scratch("flags-refused");
    let spec = fixture("specialize.toml");
    let cache = dir.join("cache");
    let env: [(&str, &Path); 2] = [("TILEFIT_CACHE_DIR", &cache), ("XDG_CACHE_HOME", &dir)];
    let (json, html, files) = (dir.join("s.json"), dir.join("h.html"), dir.join("files"));
    let (json, html, files) = (
        json.to_str().unwrap(),
        html.to_str().unwrap(),
        files.to_str().unwrap(),
    );
    for (args, expect) in [
        (
            &["--shard", "1/2", "--json", json, "--html", html][..],
            "`--html` draws the whole run's cliff map",
        ),
        (&["--fail-on", "spills"][..], "add `--resources full`"),
        (
            &["--shard", "1/2", "--json", json, "--emit-files", files][..],
            "`--emit-files` needs the whole run",
        ),
    ] {
        let mut all = vec!["probe", spec.as_str()];
        all.extend(args);
        let run = tilefit_with(&all, None, &env);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(expect), "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{args:?}: {}", run.stderr);
    }
    for written in [json, html, files] {
        assert!(!Path::new(written).exists(), "{written} was made");
    }
    assert!(
        !cache.join("toolchains").exists(),
        "a toolchain was provisioned"
    );
}
