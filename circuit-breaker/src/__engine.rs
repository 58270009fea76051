//! The engine behind a plain driver, so that the model-based test (`tests/model_proptest.rs`)
//! drives the state machine directly as well as through the expeditor. Not a public API.
