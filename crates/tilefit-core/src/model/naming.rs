//! How a report names a config: by the axes that vary across the sweep, `BLOCK_N=64
//! num_stages=2`. One naming for the tables, the gate's findings and `--baseline`'s keys.

use serde_json::Value;

use crate::model::probe::ProbeReport;

/// A swept value as a config names it: strings bare, numbers as written.
pub fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `BLOCK_N=64 num_stages=2`, only the given axes, in report order.
pub fn config_text(config: &std::collections::BTreeMap<String, Value>, axes: &[String]) -> String {
    axes.iter()
        .filter_map(|axis| {
            config
                .get(axis)
                .map(|v| format!("{axis}={}", value_text(v)))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Axes with more than one value: the ones a row label needs.
pub fn varying_axes(report: &ProbeReport) -> Vec<String> {
    report
        .axes
        .iter()
        .filter(|axis| {
            let mut values = report.results.iter().filter_map(|r| r.config.get(*axis));
            let first = values.next();
            values.any(|v| Some(v) != first)
        })
        .cloned()
        .collect()
}

/// `#5`: an autotune config's place in the kernel's list, or a config file config's number among
/// the distinct configs of the files.
pub fn listed_label(report: &ProbeReport, config_index: usize) -> String {
    let Some(listed) = &report.listed else {
        return String::new();
    };
    let autotune: Vec<String> = listed
        .origins
        .get(config_index)
        .into_iter()
        .flatten()
        .filter_map(crate::vocab::Listing::autotune_place)
        .map(|place| format!("#{place}"))
        .collect();
    if autotune.is_empty() {
        format!("#{}", config_index % listed.distinct.max(1))
    } else {
        autotune.join("/")
    }
}

/// A workload variant (`kv_dtype=fp8e4nv dtype=fp8_w8a8`): every key, strings bare.
pub fn variant_text(variant: &std::collections::BTreeMap<String, Value>) -> String {
    variant
        .iter()
        .map(|(k, v)| {
            format!(
                "{k}={}",
                v.as_str().map_or_else(|| v.to_string(), str::to_owned)
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}
