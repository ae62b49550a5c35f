//! Output where reviewers look: `::error` annotations on the kernel's `@triton.jit` line and on a
//! config file's entry, the step summary, and Markdown that GitHub does not read as HTML.

use std::path::Path;

use pulldown_cmark::{Event, Options, Parser};

use super::{fixture, python, scratch, tilefit_with};

fn repository() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// `probe SPEC --output-format github` with the repository as `GITHUB_WORKSPACE`.
fn github_probe(spec: &str, cache: &Path, extra: &[&str]) -> super::Run {
    let root = repository().canonicalize().unwrap();
    let mut args = vec![
        "probe",
        spec,
        "--python",
        python().to_str().unwrap(),
        "--jobs",
        "2",
        "--output-format",
        "github",
    ];
    args.extend(extra);
    tilefit_with(
        &args,
        None,
        &[("TILEFIT_CACHE_DIR", cache), ("GITHUB_WORKSPACE", &root)],
    )
}

#[test]
fn a_baseline_that_misses_a_device_is_annotated_on_the_kernel_s_jit_line() {
    let cache = scratch("github-kernel");
    // moe_fp8.toml's baseline (its first config, SGLang's former fp8 default) misses both 99 KiB
    // cards; moe_launch.py has `@triton.jit` on line 20, under its `@triton.heuristics`.
    let spec = fixture("field/moe_fp8.toml");
    let run = github_probe(&spec, &cache, &[]);
    assert_eq!(run.code, 0, "annotations alone do not fail: {}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("::")).collect();
    assert_eq!(
        lines,
        [
            "::error file=crates/tilefit/tests/fixtures/field/moe_launch.py,line=20,title=tilefit baseline::BLOCK_SIZE_M=128 BLOCK_SIZE_N=256 on rtx-4090 +46,080",
            "::error file=crates/tilefit/tests/fixtures/field/moe_launch.py,line=20,title=tilefit baseline::BLOCK_SIZE_M=128 BLOCK_SIZE_N=256 on rtx-pro-6000 +46,080",
        ],
        "{}",
        run.stdout
    );
    // The table is still printed.
    assert!(run.stdout.contains("budget/block"), "{}", run.stdout);
}

#[test]
fn a_config_file_entry_is_annotated_on_its_line_and_the_summary_gets_markdown() {
    let cache = scratch("github-files");
    let summary = scratch("github-summary").join("summary.md");
    let spec = fixture("field/folder.toml");
    let root = repository().canonicalize().unwrap();
    let run = tilefit_with(
        &[
            "probe",
            &spec,
            "--python",
            python().to_str().unwrap(),
            "--jobs",
            "2",
            "--output-format",
            "github",
            "--summary",
            "--fail-on",
            "baseline",
        ],
        None,
        &[
            ("TILEFIT_CACHE_DIR", cache.as_path()),
            ("GITHUB_WORKSPACE", root.as_path()),
            ("GITHUB_STEP_SUMMARY", summary.as_path()),
        ],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let entry_line = std::fs::read_to_string(fixture(
        "field/configs/triton_3_5_1/E=8,N=14336,device_name=NVIDIA_GeForce_RTX_4090,dtype=fp8_w8a8.json",
    ))
    .unwrap()
    .lines()
    .position(|l| l.trim_start().starts_with("\"256\""))
    .unwrap()
        + 1;
    let expected = format!(
        "::error file=crates/tilefit/tests/fixtures/field/configs/triton_3_5_1/E=8%2CN=14336%2Cdevice_name=NVIDIA_GeForce_RTX_4090%2Cdtype=fp8_w8a8.json,line={entry_line},title=tilefit baseline::"
    );
    assert!(
        run.stdout.lines().any(|l| l.starts_with(&expected)),
        "{expected}\n{}",
        run.stdout
    );
    let markdown = std::fs::read_to_string(&summary).unwrap();
    assert!(markdown.contains("**Config files**"), "{markdown}");
    assert!(
        run.stdout.contains("budget/block"),
        "the log keeps the table"
    );
}

#[test]
fn replay_markdown_keeps_pointer_types_as_text() {
    let run = tilefit_with(
        &["report", &fixture("reports/h200_replay.json"), "--markdown"],
        None,
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut text = String::new();
    for event in Parser::new_ext(&run.stdout, Options::ENABLE_TABLES) {
        match event {
            Event::Text(t) | Event::Code(t) => text.push_str(&t),
            // The report's own collapsible sections are the only HTML it writes.
            Event::Html(html) | Event::InlineHtml(html) => assert!(
                [
                    "<details>",
                    "<summary>",
                    "</summary>",
                    "</details>",
                    "<sub>",
                    "</sub>"
                ]
                .iter()
                .any(|tag| html.contains(tag)),
                "GitHub would read `{html}` as HTML"
            ),
            _ => {}
        }
    }
    assert!(text.contains("!tt.ptr<bf16>"), "{text}");
}

/// The Action: a composite `action.yml` whose inputs are the ones documented, whose steps install
/// tilefit with pip and run the installed binary with annotations and the step summary, and an
/// example workflow of ten lines or fewer that uses it.
#[test]
fn the_action_installs_tilefit_and_runs_the_installed_binary() {
    let text = std::fs::read_to_string(repository().join("action.yml")).unwrap();
    let action: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(action["runs"]["using"], "composite");
    let inputs = action["inputs"].as_mapping().unwrap();
    let names: Vec<&str> = inputs.keys().map(|k| k.as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "command", "input", "targets", "fail-on", "baseline", "tilefit"
        ]
    );
    assert_eq!(action["inputs"]["input"]["required"], true);
    assert_eq!(action["inputs"]["fail-on"]["default"], "baseline,none-fits");
    let steps = action["runs"]["steps"].as_sequence().unwrap();
    let runs: Vec<&str> = steps.iter().filter_map(|s| s["run"].as_str()).collect();
    assert!(runs[0].contains("python3 -m pip install"), "{}", runs[0]);
    let run = runs.last().unwrap();
    assert!(run.contains("tilefit \"$COMMAND\" $INPUT"), "{run}");
    assert!(run.contains("--output-format github --summary"), "{run}");
    assert!(
        steps.iter().any(|s| s["uses"]
            .as_str()
            .is_some_and(|u| u.starts_with("actions/cache@"))),
        "the result and toolchain folders are cached"
    );
    // Every option the run step passes is one the installed binary takes.
    let help = tilefit_with(&["probe", "--help"], None, &[]);
    for flag in [
        "--output-format",
        "--summary",
        "--json",
        "--targets",
        "--fail-on",
        "--baseline",
    ] {
        assert!(
            help.stdout.contains(flag),
            "{flag} missing from `tilefit probe --help`"
        );
        assert!(run.contains(flag), "{flag}");
    }
    let example =
        std::fs::read_to_string(repository().join("examples/ci/tilefit-action.yml")).unwrap();
    assert!(example.lines().count() <= 10);
    let workflow: serde_yaml::Value = serde_yaml::from_str(&example).unwrap();
    let uses = workflow["jobs"]["tilefit"]["steps"][1]["uses"]
        .as_str()
        .unwrap();
    // A release tag, never a branch that moves under the user.
    assert!(uses.ends_with("/tilefit@v0.1.0"), "{uses}");
    assert_eq!(workflow["permissions"]["contents"], "read");
    assert_eq!(
        workflow["jobs"]["tilefit"]["steps"][1]["with"]["fail-on"],
        "baseline,none-fits"
    );
}

/// The conveniences people expect: completions and a man page from the CLI definition, and in a
/// log without a terminal a plain progress line instead of silence.
#[test]
fn completions_a_man_page_and_progress_without_a_terminal() {
    for (shell, marker) in [
        ("bash", "_tilefit()"),
        ("zsh", "#compdef tilefit"),
        ("fish", "complete -c tilefit"),
    ] {
        let run = tilefit_with(&["completions", shell], None, &[]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(run.stdout.contains(marker), "{shell}: {}", run.stdout);
        assert!(run.stdout.contains("probe"), "{shell}");
    }
    let man = tilefit_with(&["man"], None, &[]);
    assert_eq!(man.code, 0);
    assert!(man.stdout.contains(".TH tilefit 1"), "{}", man.stdout);
    assert!(man.stdout.contains("probe"), "{}", man.stdout);
    // The tests' stderr is a pipe, as a CI log is: progress comes as plain lines (every few seconds,
    // and at the end).
    let cache = scratch("plain-progress");
    let run = super::probe(&fixture("field/moe_launch.toml"), &cache, &["--no-cache"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("tilefit: 4/4 compiled"),
        "{}",
        run.stderr
    );
}

/// The sharded examples: a GitHub Actions matrix with a merge job, and a Kubernetes Indexed Job.
/// Both parse, install a pinned tilefit (never a bare name from the public index), and pass only
/// flags the commands take.
#[test]
fn the_sharded_examples_parse_and_use_real_flags() {
    let probe_help = tilefit_with(&["probe", "--help"], None, &[]).stdout;
    let merge_help = tilefit_with(&["merge", "--help"], None, &[]).stdout;
    let text =
        std::fs::read_to_string(repository().join("examples/ci/tilefit-sharded.yml")).unwrap();
    let workflow: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let probe = &workflow["jobs"]["probe"];
    assert_eq!(
        probe["strategy"]["matrix"]["shard"]
            .as_sequence()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(probe["env"]["TILEFIT_SHARD"], "${{ matrix.shard }}/3");
    assert_eq!(workflow["jobs"]["merge"]["needs"], "probe");
    let steps = |job: &str| -> String {
        workflow["jobs"][job]["steps"]
            .as_sequence()
            .unwrap()
            .iter()
            .filter_map(|s| s["run"].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    };
    for (job, help) in [("probe", &probe_help), ("merge", &merge_help)] {
        let run = steps(job);
        assert!(run.contains("pip install \"$TILEFIT_PIP\""), "{run}");
        for flag in run.split_whitespace().filter(|w| w.starts_with("--")) {
            assert!(help.contains(flag), "{flag} is not a `tilefit {job}` flag");
        }
    }
    assert!(steps("merge").contains("tilefit merge shard-*.json"));
    let text = std::fs::read_to_string(repository().join("examples/k8s/tilefit-indexed-job.yaml"))
        .unwrap();
    let job: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["env"][0]["name"], "TILEFIT_SHARD_COUNT");
    assert_eq!(
        container["env"][0]["value"].as_str().unwrap(),
        job["spec"]["completions"].as_u64().unwrap().to_string()
    );
    let command = container["args"][0].as_str().unwrap();
    assert!(
        command.contains("pip install --quiet \"${TILEFIT_WHEEL}\""),
        "{command}"
    );
    assert!(text.contains("TILEFIT_WHEEL"), "{text}");
    assert!(command.contains("--shard auto"), "{command}");
    for flag in command
        .split_whitespace()
        .filter(|w| w.starts_with("--") && *w != "--quiet")
    {
        assert!(
            probe_help.contains(flag),
            "{flag} is not a `tilefit probe` flag"
        );
    }
}

/// Every CI example installs a pinned tilefit, never a bare `pip install tilefit` from the public
/// index (whoever takes that name would run code in users' CI), sets `permissions:`, runs on
/// `pull_request` rather than `pull_request_target`, and the replay job's artifact comes from a
/// job of the same workflow.
#[test]
fn the_ci_examples_install_a_pinned_tilefit_with_read_only_permissions() {
    let bare = regex::Regex::new(r"pip install (--quiet )?tilefit(\s|$|==)").unwrap();
    for name in [
        "examples/ci/tilefit.yml",
        "examples/ci/tilefit-sharded.yml",
        "examples/ci/tilefit-action.yml",
        "examples/k8s/tilefit-indexed-job.yaml",
        "action.yml",
    ] {
        let text = std::fs::read_to_string(repository().join(name)).unwrap();
        for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
            assert!(!bare.is_match(line), "{name}: {line}");
            assert!(!line.contains("pull_request_target"), "{name}: {line}");
        }
        if name.starts_with("examples/ci/") {
            let workflow: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
            assert_eq!(workflow["permissions"]["contents"], "read", "{name}");
        }
    }
    let text = std::fs::read_to_string(repository().join("examples/ci/tilefit.yml")).unwrap();
    let workflow: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    assert!(
        workflow["env"]["TILEFIT_PIP"]
            .as_str()
            .unwrap()
            .starts_with("tilefit @ git+https://"),
        "{text}"
    );
    let replay = &workflow["jobs"]["replay"];
    let upstream = replay["needs"].as_str().unwrap();
    let uploads = workflow["jobs"][upstream]["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .any(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
                && s["with"]["name"] == "triton-cache"
        });
    assert!(
        uploads,
        "the replay job's `needs` job uploads `triton-cache`"
    );
    let downloads = replay["steps"].as_sequence().unwrap().iter().any(|s| {
        s["uses"]
            .as_str()
            .is_some_and(|u| u.starts_with("actions/download-artifact@"))
            && s["with"]["name"] == "triton-cache"
    });
    assert!(downloads);
}
