//! The child processes of a captured run: each writes a start marker and, when it ends, its own
//! records into the run's children folder (`RECORDS.json.d/`). Every file there was written by a
//! process running the user's code, so it is read as hostile, like the main records; a marker
//! with no records is a child whose launches cannot be had, and the run fails closed, naming it.

use std::path::Path;

use serde::Deserialize;

use super::capture::{self, ProcessName, Records};
use super::untrusted;

/// Markers and records read at most (a run that starts more children is refused past this).
const MAX_CHILDREN: usize = 4096;

/// One child of the run: its name, and its records or why there are none.
#[derive(Debug)]
pub struct Child {
    /// Its name and kind, from its marker (or its records).
    pub process: ProcessName,
    /// Its records, or why they cannot be had.
    pub records: Result<Records, String>,
    /// The exit status its parent collected (a `subprocess` child's), where it did.
    pub exit: Option<i64>,
}

#[derive(Deserialize)]
struct Marker {
    name: Option<String>,
    kind: Option<String>,
}

/// Every child in `folder`, in the order of their process ids (absent folder: none).
pub fn read(folder: &Path) -> Vec<Child> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut pids: Vec<u64> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.strip_prefix("child-")?
                .strip_suffix(".started")?
                .parse()
                .ok()
        })
        .collect();
    pids.sort_unstable();
    let mut children = Vec::new();
    for pid in pids.into_iter().take(MAX_CHILDREN) {
        let marker = folder.join(format!("child-{pid}.started"));
        let process = untrusted::read_json_escaping(&marker)
            .ok()
            .and_then(|v| serde_json::from_value::<Marker>(v).ok())
            .map_or_else(
                || ProcessName {
                    name: "a child process".to_owned(),
                    kind: "unknown".to_owned(),
                },
                |m| ProcessName {
                    name: m.name.unwrap_or_else(|| "a child process".to_owned()),
                    kind: m.kind.unwrap_or_else(|| "unknown".to_owned()),
                },
            );
        let path = folder.join(format!("child-{pid}.json"));
        let records = if process.kind == "not-followed" {
            Err("it was started with -I, -E or -S, so it reads no sitecustomize: it runs without the emulation, and what it launches cannot be seen (start it without those flags)".to_owned())
        } else if path.exists() {
            capture::read(&path)
                .map_err(|e| format!("its records cannot be read: {e}"))
                .and_then(|r| {
                    if r.complete {
                        Ok(r)
                    } else {
                        Err("its records are not whole".to_owned())
                    }
                })
        } else {
            Err("it ended without writing its records (killed, a crash, or `os._exit` where tilefit could not write first)".to_owned())
        };
        let mut process = process;
        if let Some(recorded) = records.as_ref().ok().and_then(|r| r.process.clone()) {
            // A multiprocessing child names itself; a subprocess was named by its parent.
            if process.kind != "subprocess" {
                process = recorded;
            }
        }
        // The status the script collected (`subprocess`), where it did.
        let collected = std::fs::read_to_string(folder.join(format!("child-{pid}.exit")))
            .ok()
            .and_then(|t| t.trim().parse::<i64>().ok());
        let records = records.map(|mut r| {
            if collected.is_some() {
                r.exit = collected;
            }
            r
        });
        children.push(Child {
            process,
            records,
            exit: collected,
        });
    }
    children
}

/// A child's records joined to the main process's: its launches (its autotuned groups
/// renumbered past the main's), stops, errors, checks, assumptions and scopes, each with its
/// process named.
pub fn join(main: &mut Records, child: Records, name: &str) {
    let offset = main
        .launches
        .iter()
        .filter_map(|l| l.autotune.as_ref().map(|a| a.group))
        .max()
        .unwrap_or(0);
    for mut launch in child.launches {
        if let Some(role) = launch.autotune.as_mut() {
            role.group += offset;
        }
        launch.process = Some(name.to_owned());
        main.launches.push(launch);
    }
    for mut stop in child.stopped {
        stop.process = Some(name.to_owned());
        main.stopped.push(stop);
    }
    for mut error in child.errors {
        error.process = Some(name.to_owned());
        main.errors.push(error);
    }
    for mut check in child.checks {
        check.process = Some(name.to_owned());
        main.checks.push(check);
    }
    for mut assumption in child.assumptions {
        assumption.process = Some(name.to_owned());
        main.assumptions.push(assumption);
    }
    main.scopes.extend(child.scopes);
    main.calls += child.calls;
}
