//! The entry patcher on a config file from elsewhere: an entry rewritten in place either fails
//! with a reason or gives a file that Python's `json.load` reads (the reader's own rules) with the
//! new entry under its key, in the copy the loader keeps, and every other key as it was.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tilefit_core::fix::files::patch_text;
use tilefit_core::input::json_text::python_loads;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(Value::Object(before)) = python_loads(text) else {
        return;
    };
    let Some(key) = before
        .iter()
        .find(|(_, v)| v.is_object())
        .map(|(k, _)| k.clone())
    else {
        return;
    };
    let entry: BTreeMap<String, Value> = [
        ("BLOCK_SIZE_M".to_owned(), Value::from(64)),
        ("num_stages".to_owned(), Value::from(2)),
    ]
    .into_iter()
    .collect();
    let Ok(patched) = patch_text(text, &[(key.clone(), entry.clone())]) else {
        return;
    };
    let Ok(Value::Object(after)) = python_loads(&patched) else {
        panic!("the patched file does not read: {patched:?}");
    };
    let got: BTreeMap<String, Value> = after[&key]
        .as_object()
        .expect("the entry is an object")
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(got, entry, "{patched:?}");
    for (k, v) in &before {
        if *k != key {
            assert_eq!(after.get(k), Some(v), "{k}: {patched:?}");
        }
    }
    assert_eq!(after.len(), before.len());
});
