//! A kernel's `@triton.autotune(configs=[...])` list as the worker reads it: each
//! `triton.Config`'s meta-parameters and options, and the list written back as Python.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::input::spec::Config;

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
