//! `tilefit explain`: prose, JSON, stdin, and messages it cannot read.

use serde_json::Value;

use super::tilefit;

const ARTICLE: &str = "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 102400, Hardware limit: 101376. Reducing block sizes or `num_stages` may help.";

#[test]
fn the_article_s_message_in_plain_words() {
    let run = tilefit(&["explain", ARTICLE], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = &run.stdout;
    assert!(out.starts_with("Shared memory: the kernel needs 102,400 bytes (100 KiB) per block; the device allows 101,376 bytes (99 KiB) per block. Over by 1,024 bytes (1 KiB)."), "{out}");
    assert!(out.contains("the per-SM 102,400 bytes (100 KiB) minus the 1,024 bytes (1 KiB) the driver reserves for every block"));
    let devices = out
        .split("Devices with exactly this limit")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap();
    for arch in ["sm_86", "sm_89", "sm_120", "sm_121"] {
        assert!(devices.contains(arch), "{arch} missing from {devices}");
    }
    for product in [
        "RTX PRO 6000",
        "GeForce RTX 5090",
        "DGX Spark (GB10)",
        "GeForce RTX 4090",
        "L40S",
        "A10",
    ] {
        assert!(devices.contains(product), "{product} missing");
    }
    assert!(out.contains("Lower `num_stages`"));
    assert!(out.contains("tilefit probe SPEC.toml --targets sm_86,sm_89,sm_120,sm_121"));
}

#[test]
fn the_message_can_come_from_stdin() {
    let from_stdin = tilefit(&["explain"], Some(ARTICLE));
    let from_dash = tilefit(&["explain", "-"], Some(&format!("{ARTICLE}\n")));
    let from_args = tilefit(&["explain", ARTICLE], None);
    assert_eq!(from_stdin.code, 0);
    assert_eq!(from_stdin.stdout, from_args.stdout);
    assert_eq!(from_dash.stdout, from_args.stdout);
}

#[test]
fn an_unquoted_message_split_into_words_still_reads() {
    let words: Vec<&str> = ARTICLE.split(' ').collect();
    let mut args = vec!["explain"];
    args.extend(words);
    let run = tilefit(&args, None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("Over by 1,024 bytes"));
}

#[test]
fn json_carries_the_numbers() {
    let run = tilefit(&["explain", "--json", ARTICLE], None);
    assert_eq!(run.code, 0);
    let json: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(json["schema_version"], 1);
    assert_eq!(json["finding"]["kind"], "shared-memory");
    assert_eq!(json["finding"]["required"], 102_400);
    assert_eq!(json["finding"]["limit"], 101_376);
    let matches: Vec<&str> = json["limit_matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["arch"].as_str().unwrap())
        .collect();
    assert_eq!(matches, ["sm_86", "sm_89", "sm_120", "sm_121"]);
    assert_eq!(json["limit_matches"][2]["margin"], -1024);
    assert!(
        json["advice"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["code"] == "fewer-stages")
    );
}

#[test]
fn an_amd_message() {
    let run = tilefit(
        &[
            "explain",
            "error: <unknown>:0:0: local memory (131072) exceeds limit (65536) in function 'attn_fwd'",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("kernel `attn_fwd` needs 131,072 bytes (128 KiB)")
    );
    assert!(run.stdout.contains("LLVM's AMDGPU backend"));
    assert!(run.stdout.contains("Instinct MI300X"));
    assert!(
        !run.stdout.contains("sm_75"),
        "an AMD message lists AMD devices only"
    );
}

#[test]
fn an_unreadable_message_is_exit_2_never_a_guess() {
    let run = tilefit(&["explain", "Segmentation fault (core dumped)"], None);
    assert_eq!(run.code, 2);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr
            .starts_with("error: no GPU resource error that tilefit knows is in this message\n"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("hint: paste the whole error line"));
    let run = tilefit(&["explain"], Some(""));
    assert_eq!(run.code, 2);
    assert!(run.stderr.starts_with("error: the message is empty"));
}
