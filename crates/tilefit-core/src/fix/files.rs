//! The fix as engine-ready config files: for an entry that misses its device, the nearest config
//! that fits with the fewest changes (fewer stages first, then a smaller tile along the largest
//! dimension); the file name the engine's own naming function gives a device; the source file a
//! device without one is derived from; and the engine's JSON written back with every untouched
//! entry byte for byte.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::input::config_files::NameSegments;
use crate::input::json_text;

/// The smallest tile edge a candidate goes down to (`tl.dot` needs 16).
pub const MIN_TILE: u64 = 16;

/// One candidate replacement of an entry: the entry as the engine's file would hold it, and what
/// changed (`num_stages 3 -> 2`, `BLOCK_SIZE_N 256 -> 128`).
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The entry with the change.
    pub entry: BTreeMap<String, Value>,
    /// The changes from the original, in words.
    pub changes: Vec<String>,
}

fn as_u64(value: Option<&Value>) -> Option<u64> {
    value.and_then(Value::as_u64)
}

/// The tile keys of an entry (`BLOCK_SIZE_M`, `BLOCK_SIZE_N`, `BLOCK_SIZE_K`), K first: among
/// equal edges, K is shrunk first, since it leaves the output tiling as it was.
fn tile_keys(entry: &BTreeMap<String, Value>) -> Vec<String> {
    let mut keys: Vec<String> = entry
        .keys()
        .filter(|k| k.starts_with("BLOCK_SIZE_") && as_u64(entry.get(*k)).is_some())
        .cloned()
        .collect();
    keys.sort_by_key(|k| (!k.ends_with('K'), k.clone()));
    keys
}

/// Every candidate for `entry`, fewest changes first: each lower `num_stages` with the tiles as
/// they are; then the largest tile edge halved, with every `num_stages` from the original down;
/// then the next largest, and so on down to [`MIN_TILE`]. The original is not among them.
pub fn candidates(entry: &BTreeMap<String, Value>) -> Vec<Candidate> {
    candidates_over(entry, &tile_keys(entry))
}

/// The tile sizes of a kernel launch's config (its constexprs): `BLOCK_M`, `BLOCK_N`, `BLOCK_K`
/// and `BLOCK_SIZE_M/N/K`, K first (a head dimension such as `BLOCK_DMODEL` is not a tile: it is
/// the shape of the data).
pub fn launch_tile_keys(config: &BTreeMap<String, Value>) -> Vec<String> {
    let mut keys: Vec<String> = config
        .keys()
        .filter(|k| {
            let edge = k
                .strip_prefix("BLOCK_SIZE_")
                .or_else(|| k.strip_prefix("BLOCK_"));
            matches!(edge, Some("M" | "N" | "K")) && as_u64(config.get(*k)).is_some()
        })
        .cloned()
        .collect();
    keys.sort_by_key(|k| (!k.ends_with('K'), k.clone()));
    keys
}

/// `candidates` of `entry` within a block's thread limit: where the entry's `num_warps` is
/// above `max_warps` (the device's threads per block over its warp size), the first candidate
/// lowers only `num_warps` (to the largest power of two within the limit), and every other
/// candidate lowers it too, since none would launch otherwise. Unchanged otherwise, or where
/// the limit is unknown.
pub fn within_warps(
    entry: &BTreeMap<String, Value>,
    candidates: Vec<Candidate>,
    max_warps: Option<u64>,
) -> Vec<Candidate> {
    let Some(max_warps) = max_warps else {
        return candidates;
    };
    let Some(warps) = as_u64(entry.get("num_warps")).filter(|w| *w > max_warps) else {
        return candidates;
    };
    if max_warps == 0 {
        return Vec::new();
    }
    let lowered = 1u64 << max_warps.ilog2();
    let change = format!("num_warps {warps} -> {lowered}");
    let mut first = entry.clone();
    first.insert("num_warps".to_owned(), Value::from(lowered));
    let mut out = vec![Candidate {
        entry: first,
        changes: vec![change.clone()],
    }];
    out.extend(candidates.into_iter().map(|mut c| {
        c.entry.insert("num_warps".to_owned(), Value::from(lowered));
        c.changes.insert(0, change.clone());
        c
    }));
    out
}

/// The most pipeline stages a candidate has: Triton's software pipeliner gains nothing useful
/// past a handful (the engines' tuned files stop at 5 or 6, Inductor's lists at 5). An entry
/// with more gets candidates from this depth down, and a note says so.
pub const MAX_CANDIDATE_STAGES: u64 = 8;

/// The most candidates tried for one entry (each is a compile per device).
pub const MAX_CANDIDATES: usize = 64;

/// [`candidates`] over the tile keys given (K first).
pub fn candidates_over(entry: &BTreeMap<String, Value>, tile_keys: &[String]) -> Vec<Candidate> {
    bounded_candidates(entry, tile_keys).0
}

/// [`candidates`], and what bounded them, in words: the stages clamped to
/// [`MAX_CANDIDATE_STAGES`], the list cut at [`MAX_CANDIDATES`].
pub fn candidates_noted(entry: &BTreeMap<String, Value>) -> (Vec<Candidate>, Vec<String>) {
    bounded_candidates(entry, &tile_keys(entry))
}

fn bounded_candidates(
    entry: &BTreeMap<String, Value>,
    tile_keys: &[String],
) -> (Vec<Candidate>, Vec<String>) {
    let written = as_u64(entry.get("num_stages")).unwrap_or(1);
    let mut notes = Vec::new();
    if written > MAX_CANDIDATE_STAGES {
        notes.push(format!(
            "`num_stages` is above {MAX_CANDIDATE_STAGES}, the most Triton pipelines usefully: its candidates start at {MAX_CANDIDATE_STAGES} stages"
        ));
    }
    let mut out = unbounded(entry, tile_keys, written.min(MAX_CANDIDATE_STAGES), written);
    if out.len() > MAX_CANDIDATES {
        out.truncate(MAX_CANDIDATES);
        notes.push(format!(
            "only its first {MAX_CANDIDATES} candidates (fewest changes first) were tried"
        ));
    }
    (out, notes)
}

/// Every candidate, stages from `stages` down (`written`: the entry's own depth).
fn unbounded(
    entry: &BTreeMap<String, Value>,
    tile_keys: &[String],
    stages: u64,
    written: u64,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    let mut tiles: BTreeMap<String, u64> = tile_keys
        .iter()
        .cloned()
        .filter_map(|k| as_u64(entry.get(&k)).map(|v| (k, v)))
        .collect();
    let mut tile_changes: Vec<String> = Vec::new();
    let mut first_round = true;
    loop {
        let top = if first_round && stages == written {
            stages.saturating_sub(1)
        } else {
            stages
        };
        for s in (1..=top).rev() {
            let mut candidate = entry.clone();
            let mut words = tile_changes.clone();
            for (k, v) in &tiles {
                candidate.insert(k.clone(), Value::from(*v));
            }
            if s != written {
                candidate.insert("num_stages".to_owned(), Value::from(s));
                words.push(format!("num_stages {written} -> {s}"));
            }
            out.push(Candidate {
                entry: candidate,
                changes: words,
            });
        }
        first_round = false;
        if out.len() > MAX_CANDIDATES {
            break;
        }
        // The largest edge (K first among equals) above the minimum, halved.
        let Some(key) = tile_keys
            .iter()
            .filter(|k| tiles.get(*k).is_some_and(|v| *v / 2 >= MIN_TILE))
            .max_by_key(|k| (tiles[*k], k.ends_with('K')))
            .cloned()
        else {
            break;
        };
        let before = as_u64(entry.get(&key)).unwrap_or(0);
        let now = tiles[&key] / 2;
        tiles.insert(key.clone(), now);
        tile_changes.retain(|c| !c.starts_with(&format!("{key} ")));
        tile_changes.push(format!("{key} {before} -> {now}"));
    }
    out
}

/// The name an engine gives a device's config file: `source`'s name with its `device_name=` part
/// replaced by the name the device reports, spaces as underscores (vLLM's and SGLang's
/// `get_config_file_name`: `current_platform.get_device_name().replace(" ", "_")`). Built from the
/// name's parsed parts: every other part, and a suffix such as SGLang's `_down`, stays as the
/// source has it. `None` when the source name has no `device_name=` part, or more than one.
pub fn file_name_for(source: &str, reported: &str) -> Option<String> {
    let (folder, name) = match source.rsplit_once('/') {
        Some((folder, name)) => (Some(folder), name),
        None => (None, source),
    };
    let mut segments = NameSegments::of(name);
    let [at] = segments.device_parts()[..] else {
        return None;
    };
    let leading: String = segments.parts[at]
        .chars()
        .take_while(|c| c.is_whitespace())
        .collect();
    segments.parts[at] = format!("{leading}device_name={}", reported.replace(' ', "_"));
    let renamed = segments.join();
    Some(match folder {
        Some(folder) => format!("{folder}/{renamed}"),
        None => renamed,
    })
}

/// SGLang's folder for configs tuned with a Triton version: `3.6.0` -> `triton_3_6_0`.
pub fn triton_folder(version: &str) -> String {
    format!(
        "triton_{}",
        version
            .split('+')
            .next()
            .unwrap_or(version)
            .replace('.', "_")
    )
}

/// A file's entries written the way the engines write them (`json.dump(configs, f, indent=4)`):
/// keys in the order given, numbers as JSON numbers.
pub fn render_file(entries: &[(String, BTreeMap<String, Value>)], order: &[Vec<String>]) -> String {
    let mut text = String::from("{\n");
    for (i, (key, entry)) in entries.iter().enumerate() {
        let _ = write!(text, "    {}: ", Value::from(key.as_str()));
        text.push_str(&render_entry(
            entry,
            order.get(i).map(Vec::as_slice),
            "    ",
        ));
        text.push_str(if i + 1 < entries.len() { ",\n" } else { "\n" });
    }
    text.push('}');
    text.push('\n');
    text
}

/// How a file lays out its lines: the line ending and one level of indentation.
#[derive(Debug, Clone, Copy)]
struct Layout<'a> {
    newline: &'a str,
    unit: &'a str,
}

const ENGINE_LAYOUT: Layout<'static> = Layout {
    newline: "\n",
    unit: "    ",
};

/// One entry as a JSON object at `indent`, its keys in `order` (then any others).
fn render_entry(entry: &BTreeMap<String, Value>, order: Option<&[String]>, indent: &str) -> String {
    render_entry_as(entry, order, indent, ENGINE_LAYOUT)
}

/// [`render_entry`] in a file's own layout.
fn render_entry_as(
    entry: &BTreeMap<String, Value>,
    order: Option<&[String]>,
    indent: &str,
    layout: Layout<'_>,
) -> String {
    let mut keys: Vec<&String> = order
        .unwrap_or_default()
        .iter()
        .filter(|k| entry.contains_key(*k))
        .collect();
    for k in entry.keys() {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let Layout { newline, unit } = layout;
    let mut text = format!("{{{newline}");
    for (i, k) in keys.iter().enumerate() {
        let _ = write!(
            text,
            "{indent}{unit}{}: {}",
            Value::from(k.as_str()),
            entry[*k]
        );
        if i + 1 < keys.len() {
            text.push(',');
        }
        text.push_str(newline);
    }
    let _ = write!(text, "{indent}}}");
    text
}

/// Where an entry's object is in a file's text: the byte range of the `{...}` of the top-level
/// key `KEY` (of repeated keys, the last: the copy the engine's `json.load` keeps), and the
/// indentation of the key's line.
fn entry_span(text: &str, key: &str) -> Option<(usize, usize, String)> {
    let member = json_text::top_level_members(text)?
        .into_iter()
        .rev()
        .find(|m| m.key == key)?;
    if !text[member.value_start..].starts_with('{') {
        return None;
    }
    let line_start = text[..member.key_start].rfind('\n').map_or(0, |n| n + 1);
    let indent: String = text[line_start..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    Some((member.value_start, member.value_end, indent))
}

/// The layout of a multi-line object: its line ending, and the indentation of its members
/// beyond the line it opens on (`indent`).
fn layout_of<'a>(object: &'a str, indent: &str) -> Layout<'a> {
    let newline = if object.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let unit = object
        .split('\n')
        .nth(1)
        .map(|line| {
            let blank = line.len() - line.trim_start_matches([' ', '\t']).len();
            let lead = &line[..blank];
            lead.strip_prefix(indent).unwrap_or(lead)
        })
        .filter(|u| !u.is_empty())
        .unwrap_or("    ");
    Layout { newline, unit }
}

/// The key order of an entry object as the text has it.
fn key_order(object: &str) -> Vec<String> {
    let parsed: Result<serde_json::Map<String, Value>, _> = serde_json::from_str(object);
    let Ok(map) = parsed else { return Vec::new() };
    let mut keys: Vec<(usize, String)> = map
        .keys()
        .filter_map(|k| {
            object
                .find(&format!("{}", Value::from(k.as_str())))
                .map(|i| (i, k.clone()))
        })
        .collect();
    keys.sort();
    keys.into_iter().map(|(_, k)| k).collect()
}

/// The key order of entry `key`'s object in a file's text (empty when it is not there).
pub fn entry_key_order(text: &str, key: &str) -> Vec<String> {
    entry_span(text, key).map_or_else(Vec::new, |(start, end, _)| key_order(&text[start..end]))
}

/// `text` (a config file) with the entries of `replacements` written anew and every other byte as
/// it was. An entry whose object cannot be found is an error naming it.
pub fn patch_text(
    text: &str,
    replacements: &[(String, BTreeMap<String, Value>)],
) -> Result<String, String> {
    let mut spans = Vec::new();
    for (key, entry) in replacements {
        let (start, end, indent) = entry_span(text, key)
            .ok_or_else(|| format!("entry \"{key}\" is not a top-level object"))?;
        let object = &text[start..end];
        let single_line = !object.contains('\n');
        let new = if single_line {
            let order = key_order(object);
            let mut keys: Vec<&String> = order.iter().filter(|k| entry.contains_key(*k)).collect();
            for k in entry.keys() {
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
            let sep = if object.contains(", ") { ", " } else { "," };
            let colon = if object.contains(": ") { ": " } else { ":" };
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{}{colon}{}", Value::from(k.as_str()), entry[*k]))
                .collect();
            format!("{{{}}}", parts.join(sep))
        } else {
            let layout = layout_of(object, &indent);
            render_entry_as(entry, Some(&key_order(object)), &indent, layout)
        };
        spans.push((start, end, new));
    }
    spans.sort_by_key(|(start, _, _)| *start);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, new) in spans {
        out.push_str(&text[at..start]);
        out.push_str(&new);
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pairs: &[(&str, u64)]) -> BTreeMap<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
            .collect()
    }

    #[test]
    fn a_block_over_the_thread_limit_lowers_its_warps_first_and_in_every_candidate() {
        // 32 warps on a wavefront-64 part: at most 16 (1,024 threads).
        let original = entry(&[("BLOCK_M", 64), ("num_warps", 32), ("num_stages", 2)]);
        let found = within_warps(&original, candidates(&original), Some(16));
        assert_eq!(found[0].changes, ["num_warps 32 -> 16"]);
        assert_eq!(found[0].entry["num_warps"], 16);
        assert_eq!(found[0].entry["num_stages"], 2);
        assert!(found.iter().all(|c| c.entry["num_warps"] == 16));
        assert_eq!(
            found[1].changes,
            ["num_warps 32 -> 16", "num_stages 2 -> 1"]
        );
        // A limit that is not a power of two gives the largest power of two below it.
        assert_eq!(
            within_warps(&original, Vec::new(), Some(24))[0].entry["num_warps"],
            16
        );
        // Within the limit, or without num_warps: the candidates as they were.
        let fine = entry(&[("num_warps", 16), ("num_stages", 2)]);
        assert_eq!(
            within_warps(&fine, candidates(&fine), Some(16)),
            candidates(&fine)
        );
        let none = entry(&[("num_stages", 2)]);
        assert_eq!(
            within_warps(&none, candidates(&none), Some(16)),
            candidates(&none)
        );
    }

    #[test]
    fn a_stage_drops_before_a_tile_shrinks() {
        let original = entry(&[
            ("BLOCK_SIZE_M", 64),
            ("BLOCK_SIZE_N", 128),
            ("BLOCK_SIZE_K", 64),
            ("GROUP_SIZE_M", 1),
            ("num_warps", 4),
            ("num_stages", 3),
        ]);
        let found = candidates(&original);
        let words: Vec<String> = found.iter().map(|c| c.changes.join(", ")).collect();
        assert_eq!(words[0], "num_stages 3 -> 2");
        assert_eq!(words[1], "num_stages 3 -> 1");
        // Then the largest edge (N = 128) halved, with every depth from the original down.
        assert_eq!(words[2], "BLOCK_SIZE_N 128 -> 64");
        assert_eq!(words[3], "BLOCK_SIZE_N 128 -> 64, num_stages 3 -> 2");
        assert_eq!(words[4], "BLOCK_SIZE_N 128 -> 64, num_stages 3 -> 1");
        // Among equal edges K goes first.
        assert_eq!(words[5], "BLOCK_SIZE_N 128 -> 64, BLOCK_SIZE_K 64 -> 32");
        // Other keys are never touched; no tile goes below 16.
        assert!(
            found
                .iter()
                .all(|c| c.entry["GROUP_SIZE_M"] == 1 && c.entry["num_warps"] == 4)
        );
        assert!(found.iter().all(|c| {
            tile_keys(&c.entry)
                .iter()
                .all(|k| c.entry[k].as_u64().unwrap() >= MIN_TILE)
        }));
        assert!(!found.iter().any(|c| c.entry == original));
    }

    #[test]
    fn names_are_the_engines_own() {
        assert_eq!(
            file_name_for(
                "E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8.json",
                "NVIDIA GeForce RTX 5090"
            )
            .as_deref(),
            Some("E=8,N=14336,device_name=NVIDIA_GeForce_RTX_5090,dtype=fp8_w8a8.json")
        );
        assert_eq!(
            file_name_for(
                "E=64,N=640,device_name=NVIDIA_H200.json",
                "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"
            )
            .as_deref(),
            Some("E=64,N=640,device_name=NVIDIA_RTX_PRO_6000_Blackwell_Workstation_Edition.json")
        );
        assert_eq!(
            file_name_for("triton_3_4_0/E=8,N=7168,device_name=NVIDIA_H100_80GB_HBM3,dtype=int8_w8a16_down.json", "NVIDIA GB10").as_deref(),
            Some("triton_3_4_0/E=8,N=7168,device_name=NVIDIA_GB10,dtype=int8_w8a16_down.json")
        );
        assert_eq!(file_name_for("no_device.json", "NVIDIA GB10"), None);
        assert_eq!(triton_folder("3.6.0"), "triton_3_6_0");
    }

    #[test]
    fn fitting_entries_stay_byte_for_byte() {
        let text = "{\n    \"1\": {\n        \"BLOCK_SIZE_M\": 16,\n        \"num_stages\": 4\n    },\n    \"2\": {\n        \"BLOCK_SIZE_M\": 32,\n        \"num_stages\": 5\n    },\n    \"triton_version\": \"3.4.0\"\n}\n";
        let patched = patch_text(
            text,
            &[(
                "2".to_owned(),
                entry(&[("BLOCK_SIZE_M", 32), ("num_stages", 3)]),
            )],
        )
        .unwrap();
        assert_eq!(
            patched,
            "{\n    \"1\": {\n        \"BLOCK_SIZE_M\": 16,\n        \"num_stages\": 4\n    },\n    \"2\": {\n        \"BLOCK_SIZE_M\": 32,\n        \"num_stages\": 3\n    },\n    \"triton_version\": \"3.4.0\"\n}\n"
        );
        // One-line entries keep their one-line shape.
        let compact = "{\"1\": {\"BLOCK_SIZE_M\": 16, \"num_stages\": 4}, \"16\": {\"BLOCK_SIZE_M\": 64, \"num_stages\": 4}}";
        let patched = patch_text(
            compact,
            &[(
                "16".to_owned(),
                entry(&[("BLOCK_SIZE_M", 64), ("num_stages", 2)]),
            )],
        )
        .unwrap();
        assert_eq!(
            patched,
            "{\"1\": {\"BLOCK_SIZE_M\": 16, \"num_stages\": 4}, \"16\": {\"BLOCK_SIZE_M\": 64, \"num_stages\": 2}}"
        );
    }

    #[test]
    fn names_come_from_parsed_parts_so_suffixes_keep_their_place() {
        // SGLang's down-projection file keeps `_down` after the device it names.
        assert_eq!(
            file_name_for(
                "E=8,N=7168,device_name=NVIDIA_H200_down.json",
                "NVIDIA GB10"
            )
            .as_deref(),
            Some("E=8,N=7168,device_name=NVIDIA_GB10_down.json")
        );
        assert_eq!(
            file_name_for(
                "E=8,N=7168,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128, 128]_down.json",
                "NVIDIA GB10"
            )
            .as_deref(),
            Some("E=8,N=7168,device_name=NVIDIA_GB10,dtype=fp8_w8a8,block_shape=[128, 128]_down.json")
        );
        // Found by the fuzzer: an unmatched `]` in the device part does not join the parts
        // after it.
        assert_eq!(
            file_name_for(
                "E=8,device_name=A_1]_x,block_shape=[128, 128]_down.json",
                "NVIDIA GB10"
            )
            .as_deref(),
            Some("E=8,device_name=NVIDIA_GB10,block_shape=[128, 128]_down.json")
        );
        // Two `device_name=` parts: no device's file, so no name is made from it.
        assert_eq!(
            file_name_for(
                "E=8,device_name=NVIDIA_H100_80GB_HBM3,device_name=NVIDIA_GeForce_RTX_5090.json",
                "NVIDIA GB10"
            ),
            None
        );
    }

    #[test]
    fn candidates_are_bounded_and_say_so() {
        let deep = entry(&[
            ("BLOCK_SIZE_M", 1 << 40),
            ("BLOCK_SIZE_N", 1 << 40),
            ("num_stages", 16),
        ]);
        let (found, notes) = candidates_noted(&deep);
        assert_eq!(found.len(), MAX_CANDIDATES);
        assert_eq!(found[0].changes, ["num_stages 16 -> 8"]);
        assert!(
            found
                .iter()
                .all(|c| c.entry["num_stages"].as_u64().unwrap() <= MAX_CANDIDATE_STAGES)
        );
        assert_eq!(notes.len(), 2, "{notes:?}");
        let (_, none) = candidates_noted(&entry(&[("BLOCK_SIZE_M", 64), ("num_stages", 3)]));
        assert!(none.is_empty());
    }

    #[test]
    fn the_copy_the_loader_keeps_is_patched_in_the_file_s_own_layout() {
        // Two `"2"` entries: Python's json.load keeps the last, so that is the one rewritten.
        let text = "{\r\n\t\"2\": {\r\n\t\t\"num_stages\": 9\r\n\t},\r\n\t\"2\": {\r\n\t\t\"BLOCK_SIZE_M\": 32,\r\n\t\t\"num_stages\": 5\r\n\t}\r\n}\r\n";
        let patched = patch_text(
            text,
            &[(
                "2".to_owned(),
                entry(&[("BLOCK_SIZE_M", 32), ("num_stages", 3)]),
            )],
        )
        .unwrap();
        assert_eq!(
            patched,
            "{\r\n\t\"2\": {\r\n\t\t\"num_stages\": 9\r\n\t},\r\n\t\"2\": {\r\n\t\t\"BLOCK_SIZE_M\": 32,\r\n\t\t\"num_stages\": 3\r\n\t}\r\n}\r\n"
        );
        let kept = crate::input::json_text::python_loads(&patched).unwrap();
        assert_eq!(kept["2"]["num_stages"], 3);
    }

    #[test]
    fn new_files_are_written_as_the_engines_write_them() {
        let entries = vec![(
            "1".to_owned(),
            entry(&[("num_stages", 2), ("BLOCK_SIZE_M", 16)]),
        )];
        let order = vec![vec!["BLOCK_SIZE_M".to_owned(), "num_stages".to_owned()]];
        let text = render_file(&entries, &order);
        assert_eq!(
            text,
            "{\n    \"1\": {\n        \"BLOCK_SIZE_M\": 16,\n        \"num_stages\": 2\n    }\n}\n"
        );
        let back: BTreeMap<String, BTreeMap<String, Value>> = serde_json::from_str(&text).unwrap();
        assert_eq!(back["1"], entries[0].1);
    }
}
