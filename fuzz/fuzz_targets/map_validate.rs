//! Bytes -> `CapabilityMap` (serde_json) -> `validate` -> `Expeditor::new`, then routing over
//! every tool. Never panics; validation and building agree; routes end and list each tool once.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = circuit_breaker_fuzz::map_validate(data);
});
