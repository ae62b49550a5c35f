//! Every process a user's script started, found and ended at the script's end, wherever it went:
//! a child in a new session or process group, a double-forked daemon, a child whose parent died.
//! Each script run gets a [`Mark`], an environment variable with a value of its own that its
//! processes inherit; at the end, the live processes of this user that carry it (and their
//! descendants, for one whose environment was rebuilt) get SIGTERM, a grace, then SIGKILL, until
//! none are left. The mark is what keeps one target's end from touching another's processes
//! while several run side by side in this process. tilefit is a child subreaper, so an orphan
//! of the script is reparented to it and reaped here, not by init.
//!
//! A process is signalled through a pidfd opened after it was found and checked again, so a pid
//! reused between the scan and the signal is never hit. Nothing here prints.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::OwnedFd;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustix::process::{
    Pid, PidfdFlags, Signal, WaitOptions, getpid, pidfd_open, pidfd_send_signal, waitpid,
};

/// The variable that marks a script's processes; its value is the run's own.
pub const MARK_VAR: &str = "TILEFIT_CAPTURE_RUN";

/// Rounds of TERM/KILL before giving up on a process that keeps coming back (a fork bomb).
const ROUNDS: usize = 20;

/// How often the processes are looked for again while they are given time to end.
const POLL: Duration = Duration::from_millis(20);

/// The marks of the script runs in flight, for [`end_all_now`].
static ACTIVE: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// One script run's mark: registered while it lives, so a second Ctrl-C can end its processes.
#[derive(Debug)]
pub struct Mark {
    value: String,
}

impl Mark {
    /// A mark no other run of this machine carries: tilefit's pid (unique among live
    /// processes), a counter and random bits (so a leftover of a killed tilefit whose pid came
    /// back is not taken for ours).
    pub fn new() -> Mark {
        use std::hash::{BuildHasher as _, Hasher as _};
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let random = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let value = format!(
            "{}.{}.{random:016x}",
            getpid().as_raw_nonzero(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        if let Ok(mut active) = ACTIVE.lock() {
            active.insert(value.clone());
        }
        Mark { value }
    }

    /// The variable's value.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// End every process that carries the mark: `signal` first (SIGTERM, a grace of `grace`
    /// that ends early when they are gone or `urgent` says so, then SIGKILL), again until none
    /// are left. `leader` (the script, whose owner reaps it) is signalled but never reaped here;
    /// the orphans reparented to tilefit are.
    pub fn end(&self, leader: u32, grace: Duration, urgent: &dyn Fn() -> bool) {
        end_marked(&self.value, leader, grace, urgent);
    }
}

impl Default for Mark {
    fn default() -> Mark {
        Mark::new()
    }
}

impl Drop for Mark {
    fn drop(&mut self) {
        if let Ok(mut active) = ACTIVE.lock() {
            active.remove(&self.value);
        }
    }
}

/// Make tilefit a child subreaper (once): a process whose parent dies is reparented to tilefit
/// instead of init, so it stays among tilefit's descendants and its zombie is reaped here.
pub fn become_subreaper() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustix::process::set_child_subreaper(Some(getpid()));
    });
}

/// SIGKILL every process of every script run in flight, now (a second Ctrl-C: tilefit exits
/// next, and leaves nothing behind).
pub fn end_all_now() {
    let marks: Vec<String> = ACTIVE
        .lock()
        .map(|a| a.iter().cloned().collect())
        .unwrap_or_default();
    for mark in marks {
        end_marked(&mark, 0, Duration::ZERO, &|| true);
    }
}

fn end_marked(mark: &str, leader: u32, grace: Duration, urgent: &dyn Fn() -> bool) {
    let me = getpid();
    let mut adopted = BTreeSet::new();
    let mut signal = if urgent() { Signal::KILL } else { Signal::TERM };
    for _ in 0..ROUNDS {
        let found = find(mark);
        if found.is_empty() {
            break;
        }
        for process in &found {
            let _ = pidfd_send_signal(&process.fd, signal);
            if process.parent == me.as_raw_nonzero().get() && process.pid != leader {
                adopted.insert(process.pid);
            }
        }
        let until = Instant::now()
            + if signal == Signal::KILL {
                POLL * 5
            } else {
                grace
            };
        while Instant::now() < until && !(signal == Signal::TERM && urgent()) {
            std::thread::sleep(POLL);
            if find(mark).is_empty() {
                break;
            }
        }
        signal = Signal::KILL;
    }
    reap(&adopted);
}

/// Reap the orphans that were reparented to tilefit and have been killed: only those pids, so
/// no other thread's child is taken from it.
fn reap(adopted: &BTreeSet<u32>) {
    let deadline = Instant::now() + Duration::from_millis(500);
    let mut left: Vec<u32> = adopted.iter().copied().collect();
    while !left.is_empty() && Instant::now() < deadline {
        left.retain(|&pid| {
            let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
                return false;
            };
            matches!(waitpid(Some(pid), WaitOptions::NOHANG), Ok(None))
        });
        if !left.is_empty() {
            std::thread::sleep(POLL);
        }
    }
}

/// A live process found, held by a pidfd.
struct Found {
    pid: u32,
    parent: i32,
    fd: OwnedFd,
}

/// The state and parent of a process, from `/proc/PID/stat`.
fn stat(pid: u32) -> Option<(char, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the fields start after the last `)`.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some((state, parent))
}

fn carries(pid: u32, needle: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|environ| environ.split(|&b| b == 0).any(|entry| entry == needle))
}

/// The live processes that carry `mark`, and their live descendants (a child whose environment
/// was rebuilt without it), each held by a pidfd and checked again once held.
fn find(mark: &str) -> Vec<Found> {
    let needle = format!("{MARK_VAR}={mark}").into_bytes();
    let me = getpid().as_raw_nonzero().get();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut parents: BTreeMap<u32, i32> = BTreeMap::new();
    let mut marked: BTreeSet<u32> = BTreeSet::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if i32::try_from(pid).is_ok_and(|p| p == me) {
            continue;
        }
        let Some((state, parent)) = stat(pid) else {
            continue;
        };
        if matches!(state, 'Z' | 'X' | 'x') {
            continue;
        }
        parents.insert(pid, parent);
        if carries(pid, &needle) {
            marked.insert(pid);
        }
    }
    let mut chosen = marked.clone();
    loop {
        let more: Vec<u32> = parents
            .iter()
            .filter(|(pid, parent)| {
                !chosen.contains(pid) && u32::try_from(**parent).is_ok_and(|p| chosen.contains(&p))
            })
            .map(|(pid, _)| *pid)
            .collect();
        if more.is_empty() {
            break;
        }
        chosen.extend(more);
    }
    chosen
        .into_iter()
        .filter_map(|pid| {
            let raw = i32::try_from(pid).ok().and_then(Pid::from_raw)?;
            let fd = pidfd_open(raw, PidfdFlags::empty()).ok()?;
            // Held now: the same process it was when found, or another that took its pid.
            let (_, parent) = stat(pid)?;
            let same = if marked.contains(&pid) {
                carries(pid, &needle)
            } else {
                parents.get(&pid) == Some(&parent)
            };
            same.then_some(Found { pid, parent, fd })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn alive(pid: u32) -> bool {
        stat(pid).is_some_and(|(state, _)| !matches!(state, 'Z' | 'X'))
    }

    /// SIGKILLs what still carries the mark when dropped, so a failing test leaves nothing.
    struct Guard<'a>(&'a Mark);

    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            self.0.end(0, Duration::ZERO, &|| true);
        }
    }

    #[test]
    fn a_marked_orphan_in_a_new_session_is_ended_and_another_mark_s_is_not() {
        become_subreaper();
        let (ours, theirs) = (Mark::new(), Mark::new());
        let (_a, _b) = (Guard(&ours), Guard(&theirs));
        let spawn = |mark: &Mark| {
            // setsid, and the shell exits: the sleep is an orphan in a session of its own.
            let out = Command::new("sh")
                .args(["-c", "setsid sleep 60 >/dev/null 2>&1 & echo $!"])
                .env(MARK_VAR, mark.value())
                .output()
                .unwrap();
            let pid = String::from_utf8_lossy(&out.stdout).trim().parse::<u32>();
            pid.unwrap()
        };
        let (mine, other) = (spawn(&ours), spawn(&theirs));
        assert!(alive(mine) && alive(other));
        ours.end(0, Duration::from_millis(500), &|| false);
        assert!(!alive(mine), "the marked orphan outlived its run's end");
        assert!(alive(other), "another run's process was ended");
        theirs.end(0, Duration::from_millis(500), &|| false);
        assert!(!alive(other));
        // Reparented to this process (the subreaper), and reaped by the end.
        assert!(stat(mine).is_none() && stat(other).is_none());
    }
}
