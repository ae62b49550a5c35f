//! Before `--emit-files` says anything fits: every file to write, read back the way the engine's
//! loader reads it (Python's `json.load`: the last of repeated keys wins), each entry checked to be
//! the config judged, and every entry judged again on its device. A mismatch is an error.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::device::TargetDevice;
use crate::input::spec::Sweep;
use crate::model::fix_files::FileFix;
use crate::model::verdict::VerdictCode;

use super::error::FixFilesError;
use super::sweep::{Folder, sweep_files};
use crate::fix::rounds::Entries;
use crate::run::pipeline::Pipeline;

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

/// The engine's loader: Python's `json.load` on each file's text, as vLLM's and SGLang's
/// `get_moe_configs` call it (`with open(path) as f: json.load(f)`: `json.load` is `json.loads`
/// of the text the file holds, read in text mode, as `io.StringIO` hands it over here), each
/// file's object written back as one JSON line (or the loader's error). The texts come on stdin,
/// one JSON list: nothing is written to be read back.
pub(super) const LOADER: &str = r#"
import io, json, sys
for text in json.load(sys.stdin):
    try:
        with io.StringIO(text, newline=None) as f:
            print(json.dumps({"ok": json.load(f)}))
    except Exception as e:
        print(json.dumps({"error": type(e).__name__ + ": " + str(e)}))
"#;

/// Write every file as it will be written, read each back with the engine's loader, check each
/// entry is the one judged, and judge every entry again on the file's device. Returns how many
/// entries were judged again (`None`: interrupted).
pub(super) fn rejudge(
    pipeline: &Pipeline<'_>,
    spec: &Sweep,
    files: &[FileFix],
    checks: &[Check],
) -> Result<Option<usize>, FixFilesError> {
    if files.is_empty() {
        return Ok(Some(0));
    }
    let mut wrong = Vec::new();
    let python = &pipeline.toolchain().python;
    let loaded = load_as_the_engine(files, python, &mut wrong)?;
    // Judged again, per arch, from files of the entries as the loader read them.
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
    let Some(results) = sweep_files(pipeline, spec, &items)? else {
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

/// Each file's object as the engine's loader reads it (its text exactly as it will be written),
/// or `None` with the loader's error in `wrong`.
fn load_as_the_engine(
    files: &[FileFix],
    python: &Path,
    wrong: &mut Vec<String>,
) -> Result<Vec<Option<serde_json::Map<String, Value>>>, FixFilesError> {
    use std::io::Write as _;
    let texts: Vec<&str> = files.iter().map(|f| f.text.as_str()).collect();
    let input = serde_json::to_vec(&texts).unwrap_or_default();
    let loader_error = |e| FixFilesError::Loader(python.display().to_string(), e);
    let mut child = std::process::Command::new(python)
        .arg("-c")
        .arg(LOADER)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(loader_error)?;
    // Written from a thread: a loader that answers before reading everything cannot block us.
    let mut stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        if let Some(stdin) = stdin.as_mut() {
            let _ = stdin.write_all(&input);
        }
    });
    let output = child.wait_with_output().map_err(loader_error)?;
    let _ = writer.join();
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
