//! AOTInductor packages as shipped artifacts. A `.pt2` archive (`torch._inductor.
//! aoti_compile_and_package`), the folder it unzips to, or a `package_cpp_only` build folder
//! holds per model a wrapper `.cpp` whose generated `call_<kernel>` functions load each Triton
//! kernel and launch it with its dynamic shared memory and warps as host-side constants:
//!
//! ```text
//! kernels_.K = loadKernel("/build/path/c<hash>.fatbin", "K", 131072, cubin_dir_);
//! launchKernel(kernels_.K, grid_0, grid_1, grid_2, 8, 131072, kernel_args_, stream_);
//! ```
//!
//! and the binaries the driver loads (`.cubin`, `.fatbin`, or per-kernel `.ptx` in a cpp-only
//! build; at run time only the file name counts, the folder is the package's). Those bytes were
//! fixed when the package was made, for the device it was made on: every device that loads one
//! of the binary's images is asked for exactly them (`cuFuncSetAttribute` fails where they are
//! over its opt-in budget, pytorch/executorch#21827). This module reads what is recorded: the
//! calls, the kernel's source comment (its `BLOCK_*` constants, `num_stages`, and the compute
//! capability it was compiled for) and the binary's images. Nothing is executed or compiled; the
//! archive and its text are untrusted (sizes capped, names kept inside the package, a kernel
//! whose calls or binary cannot be read is a listed problem, not an aborted read).

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::input::cache_index::Skipped;
use crate::resources::images::{Image, holds_kernel, images_of};

/// The most bytes read from one member of a package.
const MEMBER_LIMIT: u64 = 256 << 20;

/// One Triton kernel of a package, as its wrapper loads and launches it.
#[derive(Debug, Clone, PartialEq)]
pub struct ShippedKernel {
    /// The kernel's symbol (Inductor's mangled name).
    pub name: String,
    /// The wrapper `.cpp`, as named in the package.
    pub wrapper: String,
    /// The line of its `loadKernel` call.
    pub line: usize,
    /// Dynamic shared memory the launch asks for.
    pub shared_bytes: u64,
    /// Warps per block the launch asks for (32 threads each).
    pub num_warps: u64,
    /// The binary's file name in the package (`embedded` when linked into the `.so`).
    pub binary: String,
    /// SHA-256 of the binary's bytes (for an embedded kernel, of its fatbin): with the name and
    /// the launch, what tells this kernel from another wherever the package lies.
    pub binary_digest: String,
    /// What the binary holds.
    pub images: Vec<Image>,
    /// `sm_80`: the arch Inductor compiled it for (`DeviceProperties(cc=...)` in its source).
    pub compiled_for: Option<String>,
    /// `num_stages`, `num_warps` and the `BLOCK_*`/`GROUP_*` constants of its source.
    pub config: BTreeMap<String, Value>,
}

/// What a package holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Package {
    /// The `.pt2` file or the folder.
    pub path: PathBuf,
    /// Its kernels, in wrapper order.
    pub kernels: Vec<ShippedKernel>,
    /// Kernels or members that could not be read.
    pub problems: Vec<Skipped>,
}

/// Why a package could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum AotiError {
    /// The file or a member could not be read.
    #[error("`{path}`: {message}")]
    Read {
        /// The package.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// No wrapper with kernel launches in it.
    #[error(
        "`{0}` holds no AOTInductor wrapper (`*.wrapper.cpp` with `loadKernel` calls): is it a CPU package, or not an AOTInductor package?"
    )]
    NoWrapper(PathBuf),
}

/// Whether `path` is an AOTInductor package: a `.pt2` file (there or not: reading it says what
/// is wrong), any zip archive (a package renamed), or a folder holding `data/aotinductor/` or a
/// `*.wrapper.cpp` at its top.
pub fn is_package(path: &Path) -> bool {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("pt2"))
    {
        return true;
    }
    if path.is_file() {
        let mut head = [0u8; 4];
        return std::fs::File::open(path)
            .and_then(|mut f| f.read_exact(&mut head))
            .is_ok_and(|()| head == *b"PK\x03\x04");
    }
    path.join("data/aotinductor").is_dir()
        || std::fs::read_dir(path).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.ends_with(".wrapper.cpp"))
            })
        })
}

/// The members of a package: names (relative, `/`-separated) and their bytes on demand.
trait Members {
    fn names(&self) -> Vec<String>;
    fn read(&mut self, name: &str) -> Result<Vec<u8>, String>;
}

struct Archive(zip::ZipArchive<std::fs::File>);

impl Members for Archive {
    fn names(&self) -> Vec<String> {
        (0..self.0.len())
            .filter_map(|i| {
                self.0
                    .name_for_index(i)
                    .and_then(Result::ok)
                    .map(std::borrow::Cow::into_owned)
            })
            .collect()
    }

    fn read(&mut self, name: &str) -> Result<Vec<u8>, String> {
        let member = self.0.by_name(name).map_err(|e| e.to_string())?;
        if member.size() > MEMBER_LIMIT {
            return Err(format!(
                "`{name}` is {} bytes, over the limit",
                member.size()
            ));
        }
        let mut bytes = Vec::new();
        member
            .take(MEMBER_LIMIT)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("`{name}`: {e}"))?;
        Ok(bytes)
    }
}

struct Folder {
    root: PathBuf,
    names: Vec<String>,
}

impl Folder {
    /// Plain files below `root` (links not followed), at most 8 levels down.
    fn open(root: &Path) -> Folder {
        let mut names = Vec::new();
        let mut stack = vec![(root.to_path_buf(), 0)];
        while let Some((dir, depth)) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let path = entry.path();
                if kind.is_dir() && depth < 8 {
                    stack.push((path, depth + 1));
                } else if kind.is_file()
                    && let Some(name) = path
                        .strip_prefix(root)
                        .ok()
                        .and_then(|p| p.to_str())
                        .map(str::to_owned)
                {
                    names.push(name);
                }
            }
        }
        names.sort();
        Folder {
            root: root.to_path_buf(),
            names,
        }
    }
}

impl Members for Folder {
    fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    fn read(&mut self, name: &str) -> Result<Vec<u8>, String> {
        let file =
            std::fs::File::open(self.root.join(name)).map_err(|e| format!("`{name}`: {e}"))?;
        let mut bytes = Vec::new();
        file.take(MEMBER_LIMIT + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("`{name}`: {e}"))?;
        if bytes.len() as u64 > MEMBER_LIMIT {
            return Err(format!("`{name}` is over {MEMBER_LIMIT} bytes"));
        }
        Ok(bytes)
    }
}

/// Read a package: every wrapper's kernels with their binaries' images.
pub fn read(path: &Path) -> Result<Package, AotiError> {
    let failed = |message: String| AotiError::Read {
        path: path.to_path_buf(),
        message,
    };
    let mut members: Box<dyn Members> = if path.is_dir() {
        Box::new(Folder::open(path))
    } else {
        let file = std::fs::File::open(path).map_err(|e| failed(e.to_string()))?;
        let archive = zip::ZipArchive::new(file)
            .map_err(|e| failed(format!("not a readable `.pt2` (zip) archive: {e}")))?;
        Box::new(Archive(archive))
    };
    let names = members.names();
    let wrappers: Vec<&String> = names
        .iter()
        .filter(|n| n.ends_with(".wrapper.cpp"))
        .collect();
    let mut package = Package {
        path: path.to_path_buf(),
        ..Package::default()
    };
    for wrapper in wrappers {
        let text = match members.read(wrapper) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(message) => {
                package.problems.push(problem(path, wrapper, message));
                continue;
            }
        };
        for call in super::aoti_wrapper::calls(&text) {
            let call = match call {
                Ok(call) => call,
                Err(message) => {
                    package.problems.push(problem(path, wrapper, message));
                    continue;
                }
            };
            match binary_images(&mut *members, &names, wrapper, &call) {
                Ok((binary, images, binary_digest)) => package.kernels.push(ShippedKernel {
                    name: call.name,
                    wrapper: wrapper.clone(),
                    line: call.line,
                    shared_bytes: call.shared_bytes,
                    num_warps: call.num_warps,
                    binary,
                    binary_digest,
                    images,
                    compiled_for: call.compiled_for,
                    config: call.config,
                }),
                Err(message) => package.problems.push(problem(
                    path,
                    wrapper,
                    format!("kernel `{}` (line {}): {message}", call.name, call.line),
                )),
            }
        }
    }
    if package.kernels.is_empty() && package.problems.is_empty() {
        return Err(AotiError::NoWrapper(path.to_path_buf()));
    }
    Ok(package)
}

fn problem(package: &Path, member: &str, reason: String) -> Skipped {
    Skipped {
        path: package.join(member),
        reason,
    }
}

/// The binary a call loads, found beside its wrapper by file name (or, in a cpp-only build, the
/// kernel's `.ptx`), or the fatbins linked into the wrapper's `.so` for an embedded one.
fn binary_images(
    members: &mut dyn Members,
    names: &[String],
    wrapper: &str,
    call: &super::aoti_wrapper::Call,
) -> Result<(String, Vec<Image>, String), String> {
    let folder = wrapper.rsplit_once('/').map_or("", |(folder, _)| folder);
    let beside = |file: &str| {
        names
            .iter()
            .find(|n| {
                n.rsplit_once('/')
                    .map_or(n.as_str(), |(f, base)| if f == folder { base } else { "" })
                    == file
            })
            .cloned()
    };
    let candidates: Vec<String> = match &call.binary {
        Some(file) => {
            let base = file.rsplit('/').next().unwrap_or(file);
            let stem = base.rsplit_once('.').map_or(base, |(stem, _)| stem);
            vec![
                base.to_owned(),
                format!("{stem}.ptx"),
                format!("{}.ptx", call.name),
            ]
        }
        None => Vec::new(),
    };
    if let Some(found) = candidates.iter().find_map(|c| beside(c)) {
        let bytes = members.read(&found)?;
        let images = images_of(&bytes).map_err(|e| format!("binary `{found}`: {e}"))?;
        let base = found.rsplit('/').next().unwrap_or(&found).to_owned();
        if holds_kernel(&bytes, &call.name) == Some(false) {
            return Err(format!(
                "the binary `{base}` holds no kernel `{}` (the driver would not find it)",
                call.name
            ));
        }
        return Ok((base, images, crate::digest::sha256(&bytes)));
    }
    if call.binary.is_none() {
        return embedded(members, names, folder, &call.name);
    }
    Err(format!(
        "its binary `{}` is not in the package",
        candidates.first().map_or("", String::as_str)
    ))
}

/// An embedded kernel's images: the fatbins in the wrapper's `.so` whose bytes name the kernel.
fn embedded(
    members: &mut dyn Members,
    names: &[String],
    folder: &str,
    kernel: &str,
) -> Result<(String, Vec<Image>, String), String> {
    let magic = 0xBA55_ED50u32.to_le_bytes();
    for so in names.iter().filter(|n| {
        Path::new(n.as_str())
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("so"))
            && n.rsplit_once('/').map_or("", |(f, _)| f) == folder
    }) {
        let bytes = members.read(so)?;
        let mut at = 0;
        while let Some(found) = memchr::memmem::find(&bytes[at..], &magic) {
            let start = at + found;
            at = start + magic.len();
            let Some(size) = bytes
                .get(start + 8..start + 16)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_le_bytes)
                .and_then(|s| usize::try_from(s).ok())
            else {
                continue;
            };
            let end = start
                .saturating_add(16)
                .saturating_add(size)
                .min(bytes.len());
            let blob = &bytes[start..end];
            if memchr::memmem::find(blob, kernel.as_bytes()).is_some()
                && let Ok(images) = images_of(blob)
            {
                return Ok(("embedded".to_owned(), images, crate::digest::sha256(blob)));
            }
        }
    }
    Err("it is embedded (`__K_start`) and no fatbin in the wrapper's `.so` names it".to_owned())
}
