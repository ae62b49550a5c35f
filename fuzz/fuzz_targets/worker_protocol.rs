//! Worker protocol lines: a handshake or a reply parses or is refused; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tilefit_core::compile::{Hello, Reply};

fuzz_target!(|data: &[u8]| {
    let _ = serde_json::from_slice::<Hello>(data);
    if let Ok(reply) = serde_json::from_slice::<Reply>(data) {
        let _ = tilefit_core::compile::outcome_of_reply(&reply);
    }
});
