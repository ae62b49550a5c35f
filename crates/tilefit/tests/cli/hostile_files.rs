//! `probe --emit-files` on a config folder as a hostile pull request writes it (every fixture is
//! written here, in the shapes vLLM and SGLang ship): a link to a secret outside the folder and a
//! link loop, a file of a variant the spec does not describe, a key written twice, a name with
//! two `device_name=` parts, SGLang's `_down` file, a file with `NaN` the engine's loader reads,
//! one with a byte-order mark nobody reads, `num_stages: 100000000`, file names and keys that
//! inject Markdown and workflow commands, a CRLF file indented with tabs, and a link in the
//! output folder. Every written file is read back with Python's `json.load` and judged again.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Run, probe, python, scratch};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .unwrap()
}

const DESK: &str = "rtx-5090,gb10";
const FITS: &str = r#"{"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 3}"#;
const OVER: &str = r#"{"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 16, "num_warps": 8, "num_stages": 4}"#;
const H100: &str = "device_name=NVIDIA_H100_80GB_HBM3";
const RTX4090: &str = "device_name=NVIDIA_GeForce_RTX_4090";
const RTX5090: &str = "device_name=NVIDIA_GeForce_RTX_5090";
/// A key that injects an image, a link, a cell and a workflow command (one line: a key with a
/// newline is refused, as `NEWLINE_KEY` is).
const INJECTED_KEY: &str =
    "512 <img src=https://tracker.example/p.png> [click](https://evil.example) | ::error::pwned `";
const NEWLINE_KEY: &str = "1024\n## injected\n::error::pwned";

/// The hostile folder, the spec over it (the MoE example's, plus the `_down` variant), and the
/// fake secret outside it.
fn hostile_folder(dir: &Path) -> (PathBuf, PathBuf) {
    let configs = dir.join("configs");
    std::fs::create_dir_all(&configs).unwrap();
    let write = |name: &str, text: &str| std::fs::write(configs.join(name), text).unwrap();
    // An RTX 4090 file with its 256 entry over budget (the example's).
    std::fs::copy(
        repo().join(format!("examples/moe/configs/E=8,N=14336,{RTX4090}.json")),
        configs.join(format!("E=8,N=14336,{RTX4090}.json")),
    )
    .unwrap();
    // A key written twice, CRLF and tabs: the loader keeps the last "256", which is over; a key
    // that injects a heading, an image and a workflow command, also over.
    write(
        &format!("E=16,N=14336,{RTX4090}.json"),
        &format!(
            "{{\r\n\t\"1\": {FITS},\r\n\t\"256\": {FITS},\r\n\t\"256\": {{\r\n\t\t\"BLOCK_SIZE_M\": 128,\r\n\t\t\"BLOCK_SIZE_N\": 256,\r\n\t\t\"BLOCK_SIZE_K\": 64,\r\n\t\t\"GROUP_SIZE_M\": 16,\r\n\t\t\"num_warps\": 8,\r\n\t\t\"num_stages\": 4\r\n\t}},\r\n\t{}: {OVER},\r\n\t{}: {OVER}\r\n}}\r\n",
            Value::from(INJECTED_KEY),
            Value::from(NEWLINE_KEY)
        ),
    );
    // A variant the spec does not describe: listed as not judged, never an aborted run.
    write(
        &format!("E=8,N=14336,{H100},dtype=fp8_w8a8.json"),
        &format!("{{\"1\": {FITS}}}"),
    );
    // Two device names: no device's file.
    write(
        &format!("E=8,N=4096,{H100},{RTX5090}.json"),
        &format!("{{\"256\": {OVER}}}"),
    );
    // SGLang's down-projection file: new files keep `_down`.
    write(
        &format!("E=8,N=7168,{H100}_down.json"),
        &format!("{{\"1\": {FITS}, \"256\": {OVER}}}"),
    );
    // NaN, which Python's json.load reads: the file is the RTX 5090's, read as the engine reads
    // it (its 256 entry patched), the NaN entry left out by name.
    write(
        &format!("E=32,N=14336,{RTX5090}.json"),
        &format!("{{\"1\": {{\"BLOCK_SIZE_M\": 16, \"num_warps\": NaN}}, \"256\": {OVER}}}"),
    );
    // A byte-order mark, which json.load refuses: nobody reads it, and no new file replaces it.
    write(
        &format!("E=64,N=14336,{RTX5090}.json"),
        &format!("\u{feff}{{\"256\": {OVER}}}"),
    );
    write(
        &format!("E=64,N=14336,{H100}.json"),
        &format!("{{\"1\": {FITS}, \"2\": {{\"BLOCK_SIZE_M\": 16, \"num_stages\": 100000000}}}}"),
    );
    // A name that injects Markdown and a workflow command (a variant nobody describes).
    write(
        &format!("E=8,N=14336,{H100},x=[click](https:evil)<details>\n::warning::x.json"),
        &format!("{{\"1\": {FITS}}}"),
    );
    // An entry the kernel cannot take (a key it lacks), one with a negative and one with a text
    // `num_stages`, beside an entry over budget: the run goes on, the new files carry only what
    // was judged.
    write(
        &format!("E=128,N=14336,{RTX4090}.json"),
        &format!(
            "{{\"1\": {{\"BLOCK_SIZE_M\": 16, \"X\": 1}}, \"2\": {{\"BLOCK_SIZE_M\": 16, \"num_stages\": -1}}, \"3\": {{\"BLOCK_SIZE_M\": 16, \"num_warps\": \"FAKE\"}}, \"4\": {{\"BLOCK_SIZE_M\": 16, \"{}\": 1}}, \"256\": {OVER}}}",
            "K".repeat(80) + "TAIL"
        ),
    );
    // A FIFO named like a config file: reading it would block forever.
    let fifo = configs.join(format!("E=8,N=2,{H100}.json"));
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // A link to a secret outside the folder, and a loop.
    let secret = dir.join("secret.json");
    std::fs::write(&secret, r#"{"auths": {"r": {"auth": "FAKE-TOKEN-a93c"}}}"#).unwrap();
    std::os::unix::fs::symlink(&secret, configs.join(format!("E=8,N=1,{H100}.json"))).unwrap();
    std::os::unix::fs::symlink(".", configs.join("loop-a")).unwrap();
    // A link whose name forges a line.
    std::os::unix::fs::symlink(".", configs.join("link\ntilefit: FORGED line\n.json")).unwrap();
    std::os::unix::fs::symlink(".", configs.join("loop-b")).unwrap();
    let spec = super::moe_spec("configs/**/*.json") + "\n[files.variants.\"down\"]\n";
    let spec_path = dir.join("spec.toml");
    std::fs::write(&spec_path, spec).unwrap();
    (spec_path, secret)
}

/// Each written config file as Python's `json.load` reads it.
fn python_loads(files: &[PathBuf]) -> Vec<serde_json::Map<String, Value>> {
    let output = std::process::Command::new(python())
        .arg("-c")
        .arg(
            "import json, math, sys\n\
             def plain(v):\n\
             \x20   if isinstance(v, dict):\n\
             \x20       return {k: plain(x) for k, x in v.items()}\n\
             \x20   return repr(v) if isinstance(v, float) and not math.isfinite(v) else v\n\
             for p in sys.argv[1:]:\n\
             \x20   print(json.dumps(plain(json.load(open(p)))))",
        )
        .args(files)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(json_files(&path));
        } else if path.extension().is_some_and(|e| e == "json")
            && !path.ends_with("tilefit-provenance.json")
        {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// No line a log would run as a workflow command or a Markdown reader as a heading, no secret;
/// in Markdown also no raw HTML and no link.
fn assert_inert(text: &str, what: &str, markdown: bool) {
    for line in text.lines() {
        assert!(!line.trim_start().starts_with("::"), "{what}: {line}");
        assert!(!line.starts_with("## injected"), "{what}: {line}");
    }
    for raw in ["FAKE-TOKEN", "secret.json"] {
        assert!(!text.contains(raw), "{what} holds {raw}: {text}");
    }
    if markdown {
        // Inside a code span text is inert (no HTML, no link); outside one, none may be raw.
        for line in text.lines() {
            let outside = outside_code(line);
            for raw in ["<details", "<img", "[click](", "![t]("] {
                assert!(!outside.contains(raw), "{what} holds {raw}: {line}");
            }
        }
    }
}

/// A Markdown line without its code spans (a run of N backticks up to the next run of N).
fn outside_code(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let run_at = |i: usize| chars[i..].iter().take_while(|c| **c == '`').count();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        // An escaped backtick is text.
        if chars[i] == '\\' && i + 1 < chars.len() {
            out.push(chars[i]);
            out.push(chars[i + 1]);
            i += 2;
            continue;
        }
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let n = run_at(i);
        let mut j = i + n;
        let mut closed = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let m = run_at(j);
                if m == n {
                    closed = Some(j + m);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        if let Some(end) = closed {
            i = end;
        } else {
            out.extend(&chars[i..]);
            break;
        }
    }
    out
}

/// The saved report, drawn in every format: the file names and keys the pull request wrote are
/// inert in each.
fn every_format_of_the_report_is_inert(saved: &Path, dir: &Path) {
    let html = dir.join("map.html");
    for format in ["terminal", "markdown", "github"] {
        let mut args = vec!["report", saved.to_str().unwrap(), "--output-format", format];
        if format == "terminal" {
            args.extend(["--html", html.to_str().unwrap()]);
        }
        let shown = super::tilefit(&args, None);
        let all = format!("{}{}", shown.stdout, shown.stderr);
        assert!(all.contains("E=16,N=14336"), "{format}: {all}");
        super::assert_no_forged_lines(&all, format, "## injected");
        if format == "markdown" {
            assert_inert(&shown.stdout, "markdown report", true);
        }
    }
    let page = std::fs::read_to_string(&html).unwrap();
    for raw in [
        "<details>\n",
        "<img src=https://tracker",
        "<details><summary>x",
    ] {
        assert!(!page.contains(raw), "map.html holds {raw}");
    }
}

/// The written folder probed again with the spec: every entry of every file fits its device.
fn judged_again_every_entry_fits(dir: &Path, spec: &Path, out: &Path, cache: &Path) {
    // Judged again from the written folder, every entry of every file fits its own device.
    let again_spec = std::fs::read_to_string(spec).unwrap().replace(
        "configs/**/*.json",
        &out.join("**").join("*.json").display().to_string(),
    );
    let again = dir.join("again.toml");
    std::fs::write(&again, again_spec).unwrap();
    let report = probe(
        again.to_str().unwrap(),
        cache,
        &["--targets", DESK, "--json", "-"],
    );
    let report: Value =
        serde_json::from_str(&report.stdout).unwrap_or_else(|e| panic!("{e}: {}", report.stderr));
    let judged = report["listed"]["files"].as_array().unwrap();
    let mut entries = 0;
    for file in judged {
        let name = file["file"].as_str().unwrap();
        if name == format!("E=32,N=14336,{RTX5090}.json") {
            // The NaN entry is the engine's to fix; it stays and is left out here too.
            assert_eq!(file["entries"].as_array().unwrap().len(), 1, "{file}");
        }
        for entry in file["entries"].as_array().unwrap() {
            entries += 1;
            assert_eq!(entry["verdict"], "fits", "{name}: {entry}");
        }
    }
    assert!(entries >= 20, "{entries}");
}

/// The files made: every one the folder calls for, none from what could not be judged.
fn made_every_other_file(out: &Path) {
    let written: Vec<String> = json_files(out)
        .iter()
        .map(|p| p.strip_prefix(out).unwrap().display().to_string())
        .collect();
    for name in [
        format!("E=8,N=14336,{RTX4090}.json"),
        format!("E=16,N=14336,{RTX4090}.json"),
        format!("E=32,N=14336,{RTX5090}.json"),
        // `_down` keeps its place after the new device's name.
        "E=8,N=7168,device_name=NVIDIA_GB10_down.json".to_owned(),
        format!("E=8,N=7168,{RTX5090}_down.json"),
        "E=64,N=14336,device_name=NVIDIA_GB10.json".to_owned(),
        "E=128,N=14336,device_name=NVIDIA_GB10.json".to_owned(),
    ] {
        assert!(written.contains(&name), "{name} not in {written:?}");
    }
    // No file replaces the one with a byte-order mark; none comes from the file with two names;
    // none from the variant nobody describes.
    assert!(
        !written.contains(&format!("E=64,N=14336,{RTX5090}.json")),
        "{written:?}"
    );
    assert!(!written.iter().any(|n| n.contains("N=4096")), "{written:?}");
    assert!(
        !written
            .iter()
            .any(|n| n.contains("fp8") || n.contains("click")),
        "{written:?}"
    );
}

/// Each refusal is one clear line naming the key and the rule; nothing forges a line.
fn every_refusal_is_a_clear_line(run: &Run) {
    assert!(!run.stdout.contains("TAIL") && !run.stderr.contains("TAIL"));
    for text in [&run.stdout, &run.stderr] {
        assert!(
            !text.lines().any(|l| l.starts_with("tilefit: FORGED")),
            "{text}"
        );
    }
    for line in [
        "one of its keys is longer than 64 bytes",
        "is not a regular file",
        "`num_stages` is a negative or fractional number",
        "`num_warps` is a string",
        "`X` is neither a parameter",
    ] {
        assert!(run.stdout.contains(line), "{line}: {}", run.stdout);
    }
}

#[test]
fn a_hostile_folder_gets_files_that_mean_what_the_engine_reads_and_nothing_leaks() {
    let dir = scratch("hostile-emit");
    let (spec, _secret) = hostile_folder(&dir);
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let cache = scratch("hostile-emit-cache");
    let started = std::time::Instant::now();
    let saved = dir.join("report.json");
    let run: Run = probe(
        spec.to_str().unwrap(),
        &cache,
        &[
            "--targets",
            DESK,
            "--emit-files",
            out.to_str().unwrap(),
            "--json",
            saved.to_str().unwrap(),
        ],
    );
    let took = started.elapsed();
    // Files that could not be read fail the gate --emit-files implies; everything else is made.
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("could not be read"), "{}", run.stderr);
    assert!(took.as_secs() < 600, "{took:?}");
    assert_inert(&run.stdout, "stdout", false);
    assert_inert(&run.stderr, "stderr", false);
    // The bounded option is a clear line naming the key and the rule, never the value.
    assert!(
        run.stdout.contains("`num_stages` is a number above 16"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("100000000"), "{}", run.stdout);
    assert!(run.stdout.contains("num_warps` is NaN"), "{}", run.stdout);
    assert!(run.stdout.contains("byte-order mark"), "{}", run.stdout);
    assert!(
        run.stdout.contains("2 `device_name=` parts"),
        "{}",
        run.stdout
    );
    every_refusal_is_a_clear_line(&run);

    made_every_other_file(&out);
    // A new file carries only what its source's own device judged.
    let carried: serde_json::Map<String, Value> = serde_json::from_str(
        &std::fs::read_to_string(out.join("E=128,N=14336,device_name=NVIDIA_GB10.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(carried.keys().collect::<Vec<_>>(), ["256"], "{carried:?}");

    // The key written twice: the copy the loader keeps is patched, the dead copy and the
    // file's CRLF and tabs as they were.
    let original =
        std::fs::read_to_string(dir.join(format!("configs/E=16,N=14336,{RTX4090}.json"))).unwrap();
    let patched =
        std::fs::read_to_string(out.join(format!("E=16,N=14336,{RTX4090}.json"))).unwrap();
    assert_eq!(
        original.matches("\r\n").count(),
        patched.matches("\r\n").count(),
        "{patched}"
    );
    assert_eq!(
        patched.matches('\n').count(),
        patched.matches("\r\n").count(),
        "{patched}"
    );
    assert!(patched.contains("\t\t\"num_stages\": 3\r\n"), "{patched:?}");
    assert!(
        patched.contains(&format!("\t\"256\": {FITS},\r\n")),
        "{patched:?}"
    );

    // Every written file, read with Python's json.load: the keys the engine sees.
    let files = json_files(&out);
    let loaded = python_loads(&files);
    assert_eq!(loaded.len(), files.len());
    let dup = files
        .iter()
        .position(|p| p.ends_with(format!("E=16,N=14336,{RTX4090}.json")))
        .unwrap();
    assert_eq!(loaded[dup]["256"]["num_stages"], 3, "{:?}", loaded[dup]);

    judged_again_every_entry_fits(&dir, &spec, &out, &cache);
    every_format_of_the_report_is_inert(&saved, &dir);

    // SUMMARY.md escapes whatever the pull request named, and lists what was not judged.
    let summary = std::fs::read_to_string(out.join("SUMMARY.md")).unwrap();
    assert_inert(&summary, "SUMMARY.md", true);
    assert!(summary.contains("Not judged"), "{summary}");
    assert!(
        summary.contains("dtype=fp8\\_w8a8") || summary.contains("dtype=fp8_w8a8"),
        "{summary}"
    );
    assert!(summary.contains("written more than once"), "{summary}");
    // The patched copy keeps the entries the probe left out, and says so.
    assert!(summary.contains("not judged (left out"), "{summary}");
    let provenance: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("tilefit-provenance.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(provenance["complete"], true);
    assert!(
        provenance["rejudged"].as_u64().unwrap() >= 20,
        "{provenance}"
    );
}

#[test]
fn a_link_in_the_output_folder_is_an_error_and_the_victim_is_untouched() {
    let dir = scratch("hostile-emit-link");
    let (spec, _) = hostile_folder(&dir);
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "keep").unwrap();
    std::os::unix::fs::symlink(&victim, out.join("SUMMARY.md")).unwrap();
    // A hard link where a config file will go: the name gets a new file, the victim its bytes.
    let hard = dir.join("hard-victim.txt");
    std::fs::write(&hard, "keep").unwrap();
    std::fs::hard_link(&hard, out.join(format!("E=8,N=14336,{RTX4090}.json"))).unwrap();
    let run = probe(
        spec.to_str().unwrap(),
        &scratch("hostile-emit-link-cache"),
        &["--targets", "gb10", "--emit-files", out.to_str().unwrap()],
    );
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("symbolic link"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert_eq!(std::fs::read_to_string(&hard).unwrap(), "keep");
}

/// `tilefit probe SPEC --json - EXTRA...` started, its stderr lines sent as they come.
fn spawn_probe(
    spec: &Path,
    cache: &Path,
    extra: &[&str],
) -> (
    std::process::Child,
    std::sync::mpsc::Receiver<String>,
    std::thread::JoinHandle<String>,
) {
    use std::io::{BufRead as _, Read as _};
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_tilefit"))
        .args(["probe", spec.to_str().unwrap(), "--python"])
        .arg(python())
        .args(["--jobs", "2", "--json", "-"])
        .args(extra)
        .env("TILEFIT_CACHE_DIR", cache)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (send, lines) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = send.send(line);
        }
    });
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    (child, lines, reader)
}

/// SIGTERM now: the process is gone within a second, exits 2, and its report (stdout) is
/// marked incomplete. Returns the report.
fn terminate(mut child: std::process::Child, stdout: std::thread::JoinHandle<String>) -> Value {
    let started = std::time::Instant::now();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let code = child.wait().unwrap().code();
    let took = started.elapsed();
    let stdout = stdout.join().unwrap();
    assert!(
        took < std::time::Duration::from_secs(1),
        "{took:?} after SIGTERM"
    );
    assert_eq!(code, Some(2), "{stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(report["stats"]["complete"], false);
    report
}

#[test]
fn sigterm_mid_round_stops_within_a_second_writes_nothing_and_marks_the_report_incomplete() {
    let dir = scratch("hostile-emit-sigterm-round");
    let out = dir.join("out");
    let (child, lines, stdout) = spawn_probe(
        &repo().join("examples/moe/spec.toml"),
        &scratch("hostile-emit-sigterm-round-cache"),
        &[
            "--targets",
            "rtx-pro-6000,rtx-5090,gb10",
            "--emit-files",
            out.to_str().unwrap(),
        ],
    );
    let mut seen = Vec::new();
    loop {
        let line = lines
            .recv_timeout(std::time::Duration::from_secs(300))
            .unwrap_or_else(|_| panic!("no round began: {seen:?}"));
        let round = line.contains("--emit-files round 1");
        seen.push(line);
        if round {
            break;
        }
    }
    terminate(child, stdout);
    // No file of a search that did not end: each would hold entries never judged.
    assert!(
        !out.exists() || json_files(&out).is_empty(),
        "{:?}",
        json_files(&out)
    );
}

#[test]
fn sigterm_mid_walk_stops_within_a_second_and_marks_the_report_incomplete() {
    let dir = scratch("hostile-emit-sigterm-walk");
    let configs = dir.join("configs");
    // A deep, wide folder: the walk takes long enough to be caught in it.
    std::fs::create_dir_all(&configs).unwrap();
    std::fs::write(
        configs.join(format!("E=8,N=14336,{RTX4090}.json")),
        format!("{{\"1\": {FITS}}}"),
    )
    .unwrap();
    for a in 0..60 {
        for b in 0..400 {
            let folder = configs.join(format!("d{a}")).join(format!("e{b}"));
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(
                folder.join(format!("E={b},N=1,{RTX4090}.json")),
                format!("{{\"1\": {FITS}}}"),
            )
            .unwrap();
        }
    }
    let spec = super::moe_spec("configs/**/*.json");
    let spec_path = dir.join("spec.toml");
    std::fs::write(&spec_path, spec).unwrap();
    let (child, _lines, stdout) = spawn_probe(
        &spec_path,
        &scratch("hostile-emit-sigterm-walk-cache"),
        &["--targets", "gb10"],
    );
    // Caught in the walk: the process holds one of the folder's folders open.
    let fds = PathBuf::from(format!("/proc/{}/fd", child.id()));
    let started = std::time::Instant::now();
    let in_walk = || {
        std::fs::read_dir(&fds)
            .into_iter()
            .flatten()
            .flatten()
            .any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|t| t.starts_with(&configs) && t != configs)
            })
    };
    while !in_walk() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(300),
            "the walk was never seen"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let report = terminate(child, stdout);
    let problems = report["listed"]["file_problems"].as_array().unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p["problem"].as_str().unwrap().contains("interrupted")),
        "{problems:?}"
    );
}
