//! Files from elsewhere are hostile: shards with edited ranges, Triton caches whose metadata names
//! paths, versions and workflow commands, reports whose fields hold newlines and code, reports of
//! another kernel handed to a gate, and options that would start work they cannot finish. Each
//! crafted input is made here from a real output, and each test checks what its kind calls for:
//! the exit code, the file and field named, no panic, nothing read or made outside its root, and
//! no control character or GitHub workflow command from outside data on stdout or stderr.

use std::path::Path;

use serde_json::Value;

use super::{Run, fixture, json_of, probe, python, scratch, tilefit, tilefit_with};

/// What every run on hostile input must hold, whatever its exit code.
fn assert_safe(run: &Run, what: &str) {
    assert_ne!(run.code, 101, "{what}: panicked: {}", run.stderr);
    for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        for line in text.lines() {
            let start = line.trim_start();
            assert!(
                !start.starts_with("::")
                    || start.starts_with("::error file=")
                    || start.starts_with("::error title=")
                    || start.starts_with("::warning title=tilefit::"),
                "{what}: {stream} has a workflow command line: {line:?}"
            );
            assert!(
                !line.chars().any(|c| c.is_control() && c != '\t'),
                "{what}: {stream} has a control character: {line:?}"
            );
        }
    }
}

fn write_json(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}

/// The names of everything under `dir`, to show nothing was made outside a root.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn edited_shards_are_refused_by_field_without_a_panic() {
    let dir = scratch("hostile-shards");
    let spec = fixture("specialize.toml");
    let out = dir.join("shard-1.json");
    let run = probe(
        &spec,
        &dir,
        &["--shard", "1/1", "--json", out.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let shard: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let max = usize::MAX.to_string();
    for (index, count, expect) in [
        ("0", "3", "the shard index must be between 1 and 3"),
        ("5", "3", "the shard index must be between 1 and 3"),
        ("1", "0", "the shard count must be between 1 and 10000"),
        (
            "1",
            max.as_str(),
            "the shard count must be between 1 and 10000",
        ),
        (
            "1",
            "2000000",
            "the shard count must be between 1 and 10000",
        ),
    ] {
        let mut edited = shard.clone();
        edited["shard"]["index"] = serde_json::from_str(index).unwrap();
        edited["shard"]["count"] = serde_json::from_str(count).unwrap();
        let path = dir.join(format!("edited-{index}-of-{}.json", count.len()));
        write_json(&path, &edited);
        let run = tilefit(&["merge", path.to_str().unwrap()], None);
        let what = format!("shard {index}/{count}");
        assert_safe(&run, &what);
        assert_eq!(run.code, 2, "{what}: {}", run.stderr);
        assert!(
            run.stderr.contains("field `shard`"),
            "{what}: {}",
            run.stderr
        );
        assert!(run.stderr.contains(expect), "{what}: {}", run.stderr);
        assert!(
            run.stderr.contains(path.to_str().unwrap()),
            "{}",
            run.stderr
        );
        assert!(
            run.stderr.len() < 2_000,
            "{what}: {} bytes",
            run.stderr.len()
        );
    }
    // A real shard of a 3-way split, alone: the missing ones are named in one short line.
    let mut lone = shard.clone();
    lone["shard"] = serde_json::json!({"index": 2, "count": 9000});
    let path = dir.join("lone.json");
    write_json(&path, &lone);
    let run = tilefit(&["merge", path.to_str().unwrap()], None);
    assert_safe(&run, "lone shard");
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains(
            "8999 of 9000 shards are missing: 1/9000, 3/9000, 4/9000, 5/9000, 6/9000 and 8994 more"
        ),
        "{}",
        run.stderr
    );
    assert!(run.stderr.len() < 2_000);
}

/// A Triton cache with one real kernel entry (the MLA example for sm_90), to edit.
fn real_cache(dir: &Path) -> std::path::PathBuf {
    let cache = dir.join("cache");
    super::direct_mla_compile("sm_90", ("bf16", 32, 1), &cache);
    cache
}

/// The kernel entry's folder and its metadata JSON's path.
fn kernel_entry(cache: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    for entry in std::fs::read_dir(cache).unwrap().flatten() {
        for file in std::fs::read_dir(entry.path()).unwrap().flatten() {
            let path = file.path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.extension().is_some_and(|e| e == "json") && !name.starts_with("__grp__") {
                let json: Value =
                    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
                if json.get("target").is_some() {
                    return (entry.path(), path);
                }
            }
        }
    }
    panic!("no kernel entry in {}", cache.display());
}

/// One real cache entry and a replay of it with its own result folder.
struct CacheCase {
    dir: std::path::PathBuf,
    cache: std::path::PathBuf,
    entry: std::path::PathBuf,
    metadata: std::path::PathBuf,
    original: Value,
    name: String,
    results: std::path::PathBuf,
}

impl CacheCase {
    fn new(label: &str) -> CacheCase {
        let dir = scratch(label);
        let cache = real_cache(&dir);
        let (entry, metadata) = kernel_entry(&cache);
        let original: Value =
            serde_json::from_str(&std::fs::read_to_string(&metadata).unwrap()).unwrap();
        let name = original["name"].as_str().unwrap().to_owned();
        let results = dir.join("results");
        CacheCase {
            dir,
            cache,
            entry,
            metadata,
            original,
            name,
            results,
        }
    }

    fn replay(&self, extra: &[&str]) -> Run {
        let mut args = vec![
            "replay",
            self.cache.to_str().unwrap(),
            "--python",
            python().to_str().unwrap(),
            "--jobs",
            "1",
            "--targets",
            "h100",
        ];
        args.extend(extra);
        tilefit_with(&args, None, &[("TILEFIT_CACHE_DIR", &self.results)])
    }
}

#[test]
fn a_cache_kernel_name_holding_a_workflow_command_is_skipped_and_escaped() {
    let case = CacheCase::new("hostile-cache-command");
    let replay = |extra: &[&str]| case.replay(extra);
    let (entry, metadata, original, name) =
        (&case.entry, &case.metadata, &case.original, &case.name);
    // A name holding a newline and a workflow command: the entry is skipped, shown escaped.
    let command = format!("{name}\n::warning file=README.md,line=1::pwned");
    let mut edited = original.clone();
    edited["name"] = Value::from(command.clone());
    write_json(metadata, &edited);
    std::fs::copy(
        entry.join(format!("{name}.ttir")),
        entry.join(format!("{command}.ttir")),
    )
    .unwrap();
    for extra in [
        &["--list"][..],
        &["--fail-on", "over-budget"][..],
        &["--output-format", "github"][..],
    ] {
        let run = replay(extra);
        assert_safe(&run, &format!("command name {extra:?}"));
        assert!(
            run.stdout.contains("field `name`") || run.stderr.contains("field `name`"),
            "{extra:?}: {}\n{}",
            run.stdout,
            run.stderr
        );
        assert!(!run.stdout.contains("\n::warning"), "{}", run.stdout);
    }
    std::fs::remove_file(entry.join(format!("{command}.ttir"))).unwrap();
}

#[test]
fn a_cache_s_metadata_cannot_lead_out_of_the_cache() {
    let case = CacheCase::new("hostile-cache-paths");
    let replay = |extra: &[&str]| case.replay(extra);
    let (dir, cache, entry, metadata, original, name, results) = (
        &case.dir,
        &case.cache,
        &case.entry,
        &case.metadata,
        &case.original,
        &case.name,
        &case.results,
    );
    // A name that walks out of the cache: the file outside is never read.
    let outside = dir.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::copy(entry.join(format!("{name}.ttir")), outside.join("x.ttir")).unwrap();
    let mut edited = original.clone();
    edited["name"] = Value::from("../../outside/x");
    write_json(metadata, &edited);
    // The only entry is skipped: nothing to replay is exit 2, with the entry and field named.
    let run = replay(&["--json", "-"]);
    assert_safe(&run, "path name");
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("field `name` is \"../../outside/x\""),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(metadata.to_str().unwrap()),
        "{}",
        run.stderr
    );

    // An IR file that is a link out of the entry: refused.
    let mut edited = original.clone();
    edited["name"] = Value::from("linked");
    write_json(metadata, &edited);
    std::os::unix::fs::symlink(outside.join("x.ttir"), entry.join("linked.ttir")).unwrap();
    let run = replay(&["--json", "-"]);
    assert_safe(&run, "link");
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("leads outside its cache folder"),
        "{}",
        run.stderr
    );
    std::fs::remove_file(entry.join("linked.ttir")).unwrap();

    // A version that is a path: skipped, nothing provisioned, no folder made outside.
    let before = listing(dir);
    let mut edited = original.clone();
    edited["triton_version"] = Value::from("../../../../x");
    write_json(metadata, &edited);
    let run = tilefit_with(
        &[
            "replay",
            cache.to_str().unwrap(),
            "--targets",
            "h100",
            "--json",
            "-",
        ],
        None,
        &[("TILEFIT_CACHE_DIR", results)],
    );
    assert_safe(&run, "path version");
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("field `triton_version` is \"../../../../x\""),
        "{}",
        run.stderr
    );
    assert_eq!(listing(dir), before, "a folder was made beside the cache");
    assert!(
        !results.join("toolchains").exists(),
        "a toolchain was provisioned"
    );
    assert!(!Path::new("/x").exists());

    // The entry as Triton wrote it replays (the edits above were the only trouble).
    write_json(metadata, original);
    let report = json_of(&replay(&["--json", "-"]));
    assert_eq!(report["kernels"].as_array().unwrap().len(), 1, "{report}");
}

/// A probe report of the small MLA spec on one device, saved.
fn mla_report(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("mla.json");
    let run = probe(
        &fixture("mla_small.toml"),
        dir,
        &["--targets", "h100", "--json", path.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    path
}

#[test]
fn reports_from_elsewhere_are_checked_by_field_and_written_as_literals() {
    let dir = scratch("hostile-reports");
    let saved = mla_report(&dir);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();

    // A kernel file holding a newline and code: refused, naming the field, nothing written.
    let mut edited = report.clone();
    edited["kernel"]["file"] =
        Value::from("k.py\nimport os; os.system('touch PWNED')\n::warning::x");
    let crafted = dir.join("crafted.json");
    write_json(&crafted, &edited);
    let out = dir.join("out.json");
    for args in [
        vec![
            "report",
            crafted.to_str().unwrap(),
            "--emit-configs",
            out.to_str().unwrap(),
        ],
        vec![
            "report",
            crafted.to_str().unwrap(),
            "--output-format",
            "github",
        ],
        vec!["report", crafted.to_str().unwrap(), "--markdown"],
    ] {
        let run = tilefit(&args, None);
        assert_safe(&run, &format!("{args:?}"));
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("field `kernel.file`"), "{}", run.stderr);
        assert!(run.stderr.contains("U+000A"), "{}", run.stderr);
    }
    assert!(!out.exists());

    // Other escapes anywhere: a terminal escape in a verdict's device name.
    let mut edited = report.clone();
    edited["results"][0]["verdicts"][0]["device"] = Value::from("h100\u{1b}]0;title\u{7}");
    write_json(&crafted, &edited);
    let run = tilefit(&["report", crafted.to_str().unwrap()], None);
    assert_safe(&run, "escape");
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("field `results[0].verdicts[0].device`"),
        "{}",
        run.stderr
    );

    // Nesting deeper than any report: an error, not a stack overflow.
    let deep = dir.join("deep.json");
    std::fs::write(&deep, "[".repeat(100_000) + &"]".repeat(100_000)).unwrap();
    let run = tilefit(&["report", deep.to_str().unwrap()], None);
    assert_safe(&run, "deep");
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("is not JSON"), "{}", run.stderr);
}

#[test]
fn generated_python_holds_outside_values_only_as_literals() {
    let dir = scratch("hostile-python");
    let spec = super::repo_file("examples/matmul/autotune.toml");
    let saved = dir.join("mm.json");
    let run = probe(
        &spec,
        &dir,
        &["--targets", "h100", "--json", saved.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut report: Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    // No control character (refused above), but quotes, a comment and code: a path may hold them.
    let file = r#"k.py" + __import__("os").system("touch PWNED") + "  # \"#;
    report["kernel"]["file"] = Value::from(file);
    report["triton_version"] = Value::from("3.7.1\" ; import os #");
    let crafted = dir.join("crafted.json");
    write_json(&crafted, &report);
    let out = dir.join("pruned.py");
    let run = tilefit(
        &[
            "report",
            crafted.to_str().unwrap(),
            "--emit-configs",
            out.to_str().unwrap(),
        ],
        None,
    );
    assert_safe(&run, "emit python");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let check = std::process::Command::new(python())
        .current_dir(&dir)
        .args([
            "-c",
            "import runpy, sys; m = runpy.run_path(sys.argv[1]); print(m['TILEFIT_SOURCE']['kernel_file']); print(m['TILEFIT_SOURCE']['triton_version'])",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let printed = String::from_utf8(check.stdout).unwrap();
    assert_eq!(printed, format!("{file}\n3.7.1\" ; import os #\n"));
    assert!(
        !dir.join("PWNED").exists(),
        "the generated module ran outside code"
    );
}

#[test]
fn gates_refuse_reports_of_another_kernel() {
    let dir = scratch("hostile-identity");
    let mla = mla_report(&dir);
    let other = dir.join("specialize.json");
    let run = probe(
        &fixture("specialize.toml"),
        &dir,
        &["--json", other.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);

    let gate = |rule: &str, baseline: &str| {
        tilefit(
            &[
                "report",
                mla.to_str().unwrap(),
                "--fail-on",
                rule,
                "--baseline",
                baseline,
            ],
            None,
        )
    };
    let run = gate("over-budget", other.to_str().unwrap());
    assert_safe(&run, "baseline");
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("is not a report of what this run judged"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("`scale_rows` in specialize.py"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("`mla_decode_stage1` in mla_decode.py"),
        "{}",
        run.stderr
    );

    // A replay report is not a probe's baseline either.
    let replay = fixture("reports/h200_replay.json");
    let run = gate("over-budget", &replay);
    assert_eq!(run.code, 2, "{}", run.stderr);

    // Its own report is a baseline: every finding is known, the gate passes.
    let run = gate("compile-error", mla.to_str().unwrap());
    assert_eq!(run.code, 0, "{}", run.stderr);

    let run = tilefit(
        &["diff", mla.to_str().unwrap(), other.to_str().unwrap()],
        None,
    );
    assert_safe(&run, "diff");
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("are not reports of one kernel"),
        "{}",
        run.stderr
    );

    // The same kernel with nothing in common (another fleet): not "0 of 0 changed".
    let mut moved: Value = serde_json::from_str(&std::fs::read_to_string(&mla).unwrap()).unwrap();
    for result in moved["results"].as_array_mut().unwrap() {
        result["arch"] = Value::from("sm_999");
    }
    let elsewhere = dir.join("elsewhere.json");
    write_json(&elsewhere, &moved);
    let run = tilefit(
        &["diff", mla.to_str().unwrap(), elsewhere.to_str().unwrap()],
        None,
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("no (config, arch) in common"),
        "{}",
        run.stderr
    );
}

#[test]
fn options_are_checked_before_any_work() {
    let dir = scratch("hostile-options");
    let spec = fixture("specialize.toml");
    let cache = dir.join("cache");
    let env: [(&str, &Path); 2] = [("TILEFIT_CACHE_DIR", &cache), ("XDG_CACHE_HOME", &dir)];
    let no_python = |args: &[&str]| -> Run {
        let mut all = vec!["probe", spec.as_str()];
        all.extend(args);
        let run = tilefit_with(&all, None, &env);
        assert_safe(&run, &format!("{args:?}"));
        run
    };
    let run = no_python(&["--triton", "3.6"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("`3.6` is not a Triton release"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("did you mean `3.6.0`?"),
        "{}",
        run.stderr
    );
    assert!(!cache.join("toolchains").exists() && !dir.join("tilefit").exists());
    let run = no_python(&["--triton", "../../x"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    for (args, expect) in [
        (&["-j", "0"][..], "0 workers would compile nothing"),
        (&["--timeout", "0"][..], "a timeout of 0 seconds"),
    ] {
        let run = no_python(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(expect), "{}", run.stderr);
    }

    // `--triton` that the given interpreter does not have: an error, not a run of another one.
    let py = python().to_str().unwrap();
    let run = no_python(&["--python", py, "--triton", "3.5.1"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("not the 3.5.1 that `--triton` asks for"),
        "{}",
        run.stderr
    );
    // Repeats are one version: the interpreter's, twice, is a plain run.
    let own = String::from_utf8(
        std::process::Command::new(python())
            .args(["-c", "import triton; print(triton.__version__)"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let twice = format!("{0},{0}", own.trim());
    let run = no_python(&["--python", py, "--triton", &twice, "--json", "-"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(json_of(&run)["kind"], "probe");

    // A cache folder that is a file is named as such, not blamed on the spec.
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let run = tilefit_with(
        &["probe", spec.as_str(), "--python", py],
        None,
        &[("TILEFIT_CACHE_DIR", &file)],
    );
    assert_safe(&run, "cache file");
    assert_eq!(run.code, 2, "{}", run.stderr);
    let named = format!("`{}` is not a folder", file.display());
    assert!(
        run.stderr.contains(&named) && run.stderr.contains("point `TILEFIT_CACHE_DIR` at a folder"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("[args]"), "{}", run.stderr);
}

#[test]
fn a_kernel_file_name_holding_a_command_is_shown_escaped() {
    let dir = scratch("hostile-file-name");
    let source = super::repo_file("crates/tilefit/tests/fixtures/specialize.py");
    let name = "k\n::warning file=README.md,line=1::pwned.py";
    std::fs::copy(&source, dir.join(name)).unwrap();
    let spec = std::fs::read_to_string(fixture("specialize.toml"))
        .unwrap()
        .replace("file = \"specialize.py\"", &format!("file = {name:?}"));
    let spec_path = dir.join("spec.toml");
    std::fs::write(&spec_path, spec).unwrap();
    for format in ["github", "terminal", "markdown"] {
        let run = probe(
            spec_path.to_str().unwrap(),
            &dir,
            &["--output-format", format, "--fail-on", "compile-error"],
        );
        assert_safe(&run, format);
        assert_eq!(run.code, 0, "{format}: {}", run.stderr);
    }
}

/// Copy a folder's files (not its links) to `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn a_config_folder_s_links_are_refused_a_secret_never_read_and_a_loop_never_walked() {
    let dir = scratch("hostile-links");
    copy_tree(
        Path::new(&fixture("field/folder.toml")).parent().unwrap(),
        &dir,
    );
    // A pull request adds a "config file" that is a link to a credential outside the folder,
    // and two links to the folder itself.
    let secret = dir.join("../hostile-links-secret.json");
    std::fs::write(
        &secret,
        r#"{"auths": {"registry": {"auth": "FAKE-TOKEN-5f1d"}}}"#,
    )
    .unwrap();
    let configs = dir.join("configs");
    std::os::unix::fs::symlink(
        std::fs::canonicalize(&secret).unwrap(),
        configs.join("E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3,dtype=leak.json"),
    )
    .unwrap();
    std::os::unix::fs::symlink(".", configs.join("loop-a")).unwrap();
    std::os::unix::fs::symlink(".", configs.join("loop-b")).unwrap();
    let spec = dir.join("folder.toml");
    let cache = scratch("hostile-links-cache");
    let started = std::time::Instant::now();
    let text = probe(spec.to_str().unwrap(), &cache, &[]);
    let json = probe(spec.to_str().unwrap(), &cache, &["--json", "-"]);
    assert!(started.elapsed().as_secs() < 600);
    for run in [&text, &json] {
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(!all.contains("FAKE-TOKEN"), "the secret leaked: {all}");
        assert!(
            !all.contains("hostile-links-secret"),
            "the link's target was shown: {all}"
        );
    }
    assert!(text.stdout.contains("symbolic link"), "{}", text.stdout);
    assert!(text.stdout.contains("dtype=leak.json"), "{}", text.stdout);
    assert!(
        json.stdout.contains("loop-a") && json.stdout.contains("loop-b"),
        "{}",
        json.stdout
    );
    let _ = std::fs::remove_file(secret);
}
