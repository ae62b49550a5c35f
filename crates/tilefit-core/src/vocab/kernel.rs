//! What a kernel is made of, in the words every stage shares: how its module is loaded, its
//! parameters, a sweep config, an autotune list's configs and host-side tensor descriptors.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A kernel parameter, as the worker's inspection reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "the worker's inspection reply, one flag per property of a JITFunction parameter"
)]
pub struct KernelParam {
    /// Parameter name.
    pub name: String,
    /// Declared `tl.constexpr`.
    pub constexpr: bool,
    /// Has a default value.
    pub has_default: bool,
    /// Listed in `do_not_specialize`.
    #[serde(default)]
    pub do_not_specialize: bool,
    /// Set by the kernel's `@triton.heuristics` at every launch.
    #[serde(default)]
    pub heuristic: bool,
}

/// How a kernel's module is loaded (`[kernel] load`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadMode {
    /// Import the file; where that fails, extract the kernel from it.
    #[default]
    Auto,
    /// Import the file as a module, as Python would.
    Import,
    /// Extract the kernel and what it reaches from the file, without running the rest.
    Extract,
}

impl LoadMode {
    #[expect(
        clippy::trivially_copy_pass_by_ref,
        reason = "serde's skip_serializing_if passes a reference"
    )]
    fn is_auto(&self) -> bool {
        *self == LoadMode::Auto
    }
}

/// How a job's kernel is loaded: the mode and the module-level names the spec gives
/// (`[globals]`). Left out of requests (and so of cache keys) when they are the defaults.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct KernelSource {
    /// `[kernel] load`.
    #[serde(default, skip_serializing_if = "LoadMode::is_auto")]
    pub load: LoadMode,
    /// `[globals]`: values for module-level names, instead of the file's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub globals: BTreeMap<String, Value>,
    /// `[kernel] module`: the installed module the kernel is in, imported by that name (its
    /// file, found by the toolchain's Python, stands in where the import fails).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
}

/// A host-side `triton.tools.tensor_descriptor.TensorDescriptor` argument.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Descriptor {
    /// Element type of the tensor it describes (`bf16`; may hold `{placeholder}`s in a spec).
    pub dtype: String,
    /// The tensor's shape.
    pub shape: Vec<u64>,
    /// Its strides, in elements (the last must be 1).
    pub strides: Vec<u64>,
    /// The block each load reads.
    pub block_shape: Vec<u64>,
}

/// The argument type a spec writes for an argument passed as `None` at launch.
pub const NONE_TYPE: &str = "none";

/// The argument type of a host-side tensor descriptor.
pub const DESCRIPTOR_TYPE: &str = "tensordesc";

/// One point of the sweep: a value for every axis, in axis order.
pub type Config = Vec<(String, Value)>;

/// `kv_dtype=fp8e4nv num_stages=2`.
pub fn describe_config(config: &[(String, Value)]) -> String {
    config
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One `triton.Config` of an autotune list, as the worker reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutotuneConfig {
    /// Meta-parameters (constexpr values), in the order the config writes them.
    pub kwargs: Vec<(String, Value)>,
    /// `num_warps`.
    pub num_warps: u64,
    /// `num_stages`.
    pub num_stages: u64,
    /// `num_ctas`.
    #[serde(default = "one")]
    pub num_ctas: u64,
    /// `maxnreg`.
    #[serde(default)]
    pub maxnreg: Option<u64>,
    /// Has a pre-hook (run at launch; it does not change the compile).
    #[serde(default)]
    pub pre_hook: bool,
}

fn one() -> u64 {
    1
}

impl AutotuneConfig {
    /// Its values as a sweep config: kwargs, then the options that differ from Triton's
    /// defaults (num_warps and num_stages always).
    pub(crate) fn values(&self) -> Config {
        let mut values: Config = self
            .kwargs
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        values.push(("num_warps".to_owned(), Value::from(self.num_warps)));
        values.push(("num_stages".to_owned(), Value::from(self.num_stages)));
        if self.num_ctas != 1 {
            values.push(("num_ctas".to_owned(), Value::from(self.num_ctas)));
        }
        if let Some(maxnreg) = self.maxnreg {
            values.push(("maxnreg".to_owned(), Value::from(maxnreg)));
        }
        values
    }

    /// `triton.Config({...}, num_warps=8, num_stages=3)`, as Python.
    pub fn python(&self) -> String {
        let kwargs: Vec<String> = self
            .kwargs
            .iter()
            .map(|(k, v)| {
                format!(
                    "{}: {}",
                    python_value(&Value::from(k.as_str())),
                    python_value(v)
                )
            })
            .collect();
        let mut text = format!(
            "triton.Config({{{}}}, num_warps={}, num_stages={}",
            kwargs.join(", "),
            self.num_warps,
            self.num_stages
        );
        if self.num_ctas != 1 {
            let _ = write!(text, ", num_ctas={}", self.num_ctas);
        }
        if let Some(maxnreg) = self.maxnreg {
            let _ = write!(text, ", maxnreg={maxnreg}");
        }
        text.push(')');
        text
    }
}

/// A JSON scalar as a Python literal.
fn python_value(value: &Value) -> String {
    match value {
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Null => "None".to_owned(),
        Value::String(s) => crate::escape::python_str(s),
        other => other.to_string(),
    }
}

/// How a kernel's module was loaded, as the worker reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Loaded {
    /// `import` or `extract`.
    pub how: String,
    /// Extracted: the module-level names that ran, in file order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// Extracted: a digest of exactly the source that ran (and the `[globals]` given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Why the plain import failed, when extraction stood in for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import_error: Option<String>,
    /// Extracted: the decorators taken off the kernel because they do not evaluate here
    /// (`@libentry()`), outermost first; the kernel compiled is what they wrap.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peeled: Vec<String>,
}

/// What a kernel's inspection says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelInterface {
    /// The `@triton.jit` function's parameters.
    pub params: Vec<KernelParam>,
    /// The configs of its `@triton.autotune`, when it is wrapped by one.
    pub autotune: Option<Vec<AutotuneConfig>>,
    /// The compile options each backend of the worker's Triton takes (`cuda`, `hip`).
    #[serde(default)]
    pub backend_options: BTreeMap<String, Vec<String>>,
    /// How the kernel's module was loaded (imported, or extracted from the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded: Option<crate::vocab::Loaded>,
}

/// Where a listed config was listed: its place in a kernel's `@triton.autotune` list, or an entry
/// of an engine's config file. Written in reports as `autotune #3` and `FILE: KEY`; read back from
/// those words, so a report of an earlier version reads the same.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Listing {
    /// The config's place in the autotune list.
    Autotune(usize),
    /// A config file's entry: the file's name and the entry's key (a batch size).
    Entry {
        /// The file's name.
        file: String,
        /// The entry's key.
        key: String,
    },
}

impl Listing {
    /// The config file it is an entry of, if it is one.
    pub fn file(&self) -> Option<&str> {
        match self {
            Listing::Entry { file, .. } => Some(file),
            Listing::Autotune(_) => None,
        }
    }

    /// Its place in the autotune list, if it is one.
    pub fn autotune_place(&self) -> Option<usize> {
        match self {
            Listing::Autotune(place) => Some(*place),
            Listing::Entry { .. } => None,
        }
    }
}

impl std::fmt::Display for Listing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listing::Autotune(place) => write!(f, "autotune #{place}"),
            Listing::Entry { file, key } => write!(f, "{file}: {key}"),
        }
    }
}

impl std::str::FromStr for Listing {
    type Err = String;

    fn from_str(text: &str) -> Result<Listing, String> {
        if let Some(place) = text.strip_prefix("autotune #") {
            return place
                .parse()
                .map(Listing::Autotune)
                .map_err(|_| format!("`{text}` is not an autotune place"));
        }
        match text.rsplit_once(": ") {
            Some((file, key)) => Ok(Listing::Entry {
                file: file.to_owned(),
                key: key.to_owned(),
            }),
            None => Err(format!("`{text}` is neither `autotune #N` nor `FILE: KEY`")),
        }
    }
}

impl Serialize for Listing {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Listing {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Listing, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_read_back_the_words_they_are_written_as() {
        for text in [
            "autotune #3",
            "E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json: 256",
        ] {
            let listing: Listing = text.parse().unwrap();
            assert_eq!(listing.to_string(), text);
            let json = serde_json::to_string(&listing).unwrap();
            assert_eq!(serde_json::from_str::<Listing>(&json).unwrap(), listing);
        }
        assert_eq!(
            "autotune #3".parse::<Listing>().unwrap().autotune_place(),
            Some(3)
        );
        assert!("autotune #x".parse::<Listing>().is_err());
        assert!("no separator".parse::<Listing>().is_err());
    }
}
