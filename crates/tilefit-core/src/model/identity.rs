//! What a report judged, so two reports are compared only when they are about the same thing: a
//! probe's kernel (file name, function, source digest), a replay's kernels (their names). A
//! baseline or a diff of another kernel is refused, naming what differs; the same kernel edited
//! (another digest) is allowed and said, since gating a kernel change is what a baseline is for.
//! Data only: the gate (`--baseline`) and `tilefit diff` ask it.

use std::collections::BTreeSet;

/// The subject of one report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// A probe of one kernel.
    Probe {
        /// The kernel file's name (its folder is where the report was made, so not compared).
        file_name: String,
        /// The `@triton.jit` function.
        function: String,
        /// The digest of its source.
        source_sha256: String,
    },
    /// A replay of a cache's kernels.
    Replay {
        /// The kernels' function names.
        kernels: BTreeSet<String>,
    },
}

/// How two subjects compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Comparison {
    /// The same kernel(s).
    Same,
    /// The same kernel, edited (or kernels in common among others): comparable, with a note.
    Edited(String),
    /// Not the same subject: what differs, as a sentence.
    Different(String),
}

impl Subject {
    /// A probe report's subject.
    pub fn of_probe(kernel: &crate::model::probe::KernelInfo) -> Subject {
        Subject::Probe {
            file_name: std::path::Path::new(&kernel.file)
                .file_name()
                .map_or_else(|| kernel.file.clone(), |n| n.to_string_lossy().into_owned()),
            function: kernel.function.clone(),
            source_sha256: kernel.source_sha256.clone(),
        }
    }

    /// A replay report's subject.
    pub fn of_replay(report: &crate::model::replay::ReplayReport) -> Subject {
        Subject::Replay {
            kernels: report.kernels.iter().map(|k| k.name.clone()).collect(),
        }
    }

    /// In words.
    pub fn describe(&self) -> String {
        match self {
            Subject::Probe {
                file_name,
                function,
                ..
            } => format!("a probe of `{function}` in {file_name}"),
            Subject::Replay { kernels } => {
                let names: Vec<&str> = kernels.iter().take(4).map(String::as_str).collect();
                let more = if kernels.len() > names.len() {
                    ", ..."
                } else {
                    ""
                };
                format!(
                    "a replay of {} kernels ({}{more})",
                    kernels.len(),
                    names.join(", ")
                )
            }
        }
    }

    /// Whether a report about `self` may be compared with one about `new`.
    pub fn compare(&self, new: &Subject) -> Comparison {
        let different = || {
            Comparison::Different(format!(
                "the old report is {}, the new one {}",
                self.describe(),
                new.describe()
            ))
        };
        match (self, new) {
            (
                Subject::Probe {
                    file_name: old_file,
                    function: old_function,
                    source_sha256: old_sha,
                },
                Subject::Probe {
                    file_name,
                    function,
                    source_sha256,
                },
            ) => {
                if old_function != function || old_file != file_name {
                    different()
                } else if old_sha != source_sha256 {
                    Comparison::Edited(format!(
                        "`{function}` in {file_name} changed since the old report (source sha256 {} -> {})",
                        short(old_sha),
                        short(source_sha256)
                    ))
                } else {
                    Comparison::Same
                }
            }
            (Subject::Replay { kernels: old }, Subject::Replay { kernels }) => {
                if old == kernels {
                    Comparison::Same
                } else if old.is_disjoint(kernels) && !(old.is_empty() && kernels.is_empty()) {
                    different()
                } else {
                    Comparison::Edited(format!(
                        "the replays share {} of their kernels ({} old, {} new)",
                        old.intersection(kernels).count(),
                        old.len(),
                        kernels.len()
                    ))
                }
            }
            _ => different(),
        }
    }
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(file: &str, function: &str, sha: &str) -> Subject {
        Subject::Probe {
            file_name: file.into(),
            function: function.into(),
            source_sha256: sha.into(),
        }
    }

    #[test]
    fn another_kernel_is_different_an_edited_one_is_said() {
        let a = probe("mla.py", "mla_decode", "aaaa");
        assert_eq!(a.compare(&a), Comparison::Same);
        assert!(matches!(
            a.compare(&probe("mla.py", "mla_decode", "bbbb")),
            Comparison::Edited(_)
        ));
        match a.compare(&probe("matmul.py", "matmul_kernel", "aaaa")) {
            Comparison::Different(why) => {
                assert!(why.contains("`mla_decode` in mla.py"), "{why}");
                assert!(why.contains("`matmul_kernel` in matmul.py"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        let r = |names: &[&str]| Subject::Replay {
            kernels: names.iter().map(|n| (*n).to_owned()).collect(),
        };
        assert!(matches!(a.compare(&r(&["k"])), Comparison::Different(_)));
        assert!(matches!(
            r(&["a"]).compare(&r(&["b"])),
            Comparison::Different(_)
        ));
        assert!(matches!(
            r(&["a", "b"]).compare(&r(&["b"])),
            Comparison::Edited(_)
        ));
    }
}
