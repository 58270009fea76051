//! Bytes -> `Snapshot` (serde_json) -> `restore` into an expeditor over a fixed map. Never
//! panics; a refused snapshot changes nothing; an accepted one leaves a working expeditor.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = circuit_breaker_fuzz::snapshot_decode(data);
});
