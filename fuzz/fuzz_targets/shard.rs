//! Shard files from elsewhere (probe and replay shards): any JSON is read, its strings checked and
//! its shard range checked, or refused with a message; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tilefit_core::model::shard::{ReplayShardReport, ShardReport, check_one_run};

fuzz_target!(|data: &[u8]| {
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let _ = tilefit_core::input::untrusted::check_strings(&json);
    if let Ok(shard) = serde_json::from_value::<ShardReport>(json.clone()) {
        let _ = check_one_run(&[shard.identity(), shard.identity()]);
        let _ = check_one_run(&[shard.identity()]);
    }
    if let Ok(shard) = serde_json::from_value::<ReplayShardReport>(json) {
        let _ = check_one_run(&[shard.identity()]);
    }
});
