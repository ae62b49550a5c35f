//! An engine's config-file name from a pull request: split into parts and joined back byte for
//! byte; the name made for another device changes only the device (the variant, the shape and a
//! `_down` suffix keep their place); a name with no or several `device_name=` parts makes none.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tilefit_core::fix::files::file_name_for;
use tilefit_core::input::config_files::{NameSegments, parse_name};

fuzz_target!(|data: &[u8]| {
    let name: String = String::from_utf8_lossy(data)
        .chars()
        .filter(|c| *c != '/' && *c != '\0')
        .take(300)
        .collect();
    assert_eq!(NameSegments::of(&name).join(), name);
    let before = parse_name(&name);
    match file_name_for(&name, "NVIDIA GB10") {
        Some(new) => {
            assert_eq!(before.device_name_parts, 1, "{name:?}");
            assert!(!new.contains('/'), "{new:?}");
            let after = parse_name(&new);
            assert_eq!(after.device_name.as_deref(), Some("NVIDIA GB10"), "{name:?} -> {new:?}");
            assert_eq!(after.variant, before.variant, "{name:?} -> {new:?}");
            assert_eq!(after.shape, before.shape, "{name:?} -> {new:?}");
        }
        None => assert_ne!(before.device_name_parts, 1, "{name:?}"),
    }
});
