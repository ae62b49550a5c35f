//! Before `--emit-files` says anything fits: every file to write, read back the way the engine's
//! loader reads it (Python's `json.load`: the last of repeated keys wins), each entry checked to be
//! the config judged, and every entry judged again on its device. A mismatch is an error.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::compile::toolchain::Toolchain;
use crate::compile::{Event, Settings};
use crate::device::TargetDevice;
use crate::input::spec::ProbeSpec;
use crate::model::fix_files::FileFix;
use crate::model::verdict::VerdictCode;

use super::error::FixFilesError;
use super::sweep::{Folder, checked_name, sweep_folders};
use super::work::Entries;

/// One entry: a config.
type Entry = BTreeMap<String, Value>;

/// What a written file must say when read back: per key, the entry the engine must read (when
/// tilefit wrote or chose it) and whether it must fit its device.
pub(super) struct Check {
    pub(super) device: TargetDevice,
    /// (key, the entry read back must equal this, the verdict it must have).
    pub(super) expect: Vec<(String, Option<Entry>, Expect)>,
    /// A new file holds exactly the keys it was given.
    pub(super) exact_keys: bool,
}

/// The verdict a written entry must have when judged again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Expect {
    Fits,
    /// Left as the source has it: the verdict it had.
    Same(Option<VerdictCode>),
    /// No candidate fits (left in a patched copy as it was): anything but fits.
    NotFits,
}

/// The engine's loader: Python's `json.load` on each file, as vLLM's and SGLang's
/// `get_moe_configs` call it (`with open(path) as f: json.load(f)`), each file's object written
/// back as one JSON line (or the loader's error).
pub(super) const LOADER: &str = r#"
import json, sys
for path in sys.argv[1:]:
    try:
        with open(path) as f:
            print(json.dumps({"ok": json.load(f)}))
    except Exception as e:
        print(json.dumps({"error": type(e).__name__ + ": " + str(e)}))
"#;

/// Write every file as it will be written, read each back with the engine's loader, check each
/// entry is the one judged, and judge every entry again on the file's device. Returns how many
/// entries were judged again (`None`: interrupted).
pub(super) fn rejudge(
    spec: &ProbeSpec,
    files: &[FileFix],
    checks: &[Check],
    root: &Path,
    toolchain: &Toolchain,
    settings: &Settings,
    on_event: &mut dyn FnMut(Event),
) -> Result<Option<usize>, FixFilesError> {
    if files.is_empty() {
        return Ok(Some(0));
    }
    let mut wrong = Vec::new();
    let loaded = load_as_the_engine(files, &root.join("loaded"), &toolchain.python, &mut wrong)?;
    // Judged again, per arch, from a folder of the entries as the loader read them.
    let mut items: BTreeMap<String, (Vec<TargetDevice>, Folder)> = BTreeMap::new();
    for (w, (file, check)) in files.iter().zip(checks).enumerate() {
        let Some(map) = &loaded[w] else { continue };
        let entries = compare(file, check, map, &mut wrong);
        let (fleet, folder) = items.entry(check.device.arch.clone()).or_default();
        if !fleet.iter().any(|d| d.name == check.device.name) {
            fleet.push(check.device.clone());
        }
        // Its own folder, under its base name: the device as it reports itself, which resolves
        // to the same device.
        let base = file.name.rsplit('/').next().unwrap_or(&file.name);
        folder.insert(w, (format!("file-{w}/{base}"), entries));
    }
    let judged = root.join("judged");
    let Some(results) = sweep_folders(spec, &items, &judged, toolchain, settings, on_event)? else {
        return Ok(None);
    };
    let mut count = 0;
    for (w, (file, check)) in files.iter().zip(checks).enumerate() {
        if loaded[w].is_none() {
            continue;
        }
        for (key, _, expect) in &check.expect {
            let verdict = results.get(&(w, key.clone())).and_then(|(v, _)| *v);
            count += 1;
            if !expect.holds(verdict) {
                wrong.push(format!(
                    "`{}` entry `{key}` on {}: judged again it is {}, and {} was expected",
                    file.name,
                    check.device.device,
                    verdict.map_or("not judged", VerdictCode::as_str),
                    expect.words()
                ));
            }
        }
    }
    if wrong.is_empty() {
        Ok(Some(count))
    } else {
        Err(FixFilesError::Rejudged(wrong))
    }
}

impl Expect {
    fn holds(self, verdict: Option<VerdictCode>) -> bool {
        match self {
            Expect::Fits => verdict == Some(VerdictCode::Fits),
            Expect::NotFits => verdict != Some(VerdictCode::Fits),
            Expect::Same(before) => verdict == before,
        }
    }

    fn words(self) -> &'static str {
        match self {
            Expect::Fits => "fits",
            Expect::NotFits => "none fits",
            Expect::Same(v) => v.map_or("not judged", VerdictCode::as_str),
        }
    }
}

/// Each file's object as the engine's loader reads it (written under `root` first, exactly as it
/// will be written), or `None` with the loader's error in `wrong`.
fn load_as_the_engine(
    files: &[FileFix],
    root: &Path,
    python: &Path,
    wrong: &mut Vec<String>,
) -> Result<Vec<Option<serde_json::Map<String, Value>>>, FixFilesError> {
    let mut paths = Vec::new();
    for file in files {
        let path = root.join(checked_name(&file.name)?);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| FixFilesError::Scratch(parent.display().to_string(), e))?;
        }
        std::fs::write(&path, &file.text)
            .map_err(|e| FixFilesError::Scratch(path.display().to_string(), e))?;
        paths.push(path);
    }
    let output = std::process::Command::new(python)
        .arg("-c")
        .arg(LOADER)
        .args(&paths)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| FixFilesError::Loader(python.display().to_string(), e))?;
    let lines: Vec<&str> = std::str::from_utf8(&output.stdout)
        .unwrap_or_default()
        .lines()
        .collect();
    let mut loaded = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let read = lines
            .get(i)
            .and_then(|l| crate::input::json_text::python_loads(l).ok());
        let map = read
            .as_ref()
            .and_then(|r| r.get("ok"))
            .and_then(Value::as_object);
        if map.is_none() {
            let why = read
                .as_ref()
                .and_then(|r| r.get("error"))
                .and_then(Value::as_str)
                .unwrap_or("the loader gave no answer");
            wrong.push(format!(
                "`{}`: the engine's json.load fails: {why}",
                file.name
            ));
        }
        loaded.push(map.cloned());
    }
    Ok(loaded)
}

/// The entries the loader read from `file`, each checked to be the config judged; a new file
/// must hold exactly the keys written.
fn compare(
    file: &FileFix,
    check: &Check,
    map: &serde_json::Map<String, Value>,
    wrong: &mut Vec<String>,
) -> Entries {
    let entries: Entries = map
        .iter()
        .filter_map(|(k, v)| {
            v.as_object().map(|o| {
                (
                    k.clone(),
                    o.iter().map(|(a, b)| (a.clone(), b.clone())).collect(),
                )
            })
        })
        .collect();
    for (key, want, _) in &check.expect {
        let got = entries.iter().find(|(k, _)| k == key).map(|(_, e)| e);
        if let Some(want) = want
            && got != Some(want)
        {
            wrong.push(format!(
                "`{}` entry `{key}`: the engine reads another config than the one judged",
                file.name
            ));
        }
    }
    if check.exact_keys && map.len() != check.expect.len() {
        wrong.push(format!(
            "`{}`: the engine reads {} keys, and {} were written",
            file.name,
            map.len(),
            check.expect.len()
        ));
    }
    entries
}
