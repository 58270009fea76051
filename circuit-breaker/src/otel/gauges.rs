//! The gauges' callbacks: read at each collection from the public API of every expeditor
//! still observed.

use std::sync::RwLock;

use opentelemetry::metrics::AsyncInstrument;
use opentelemetry::{KeyValue, StringValue};

use super::{Observed, STATE, TOOL_NAME, read};
use crate::model::breaker::CircuitState;
use crate::telemetry::state_name;

/// The state gauge's callback: three points per tool of each observed expeditor.
pub(super) fn observe_states(observed: &RwLock<Vec<Observed>>, gauge: &dyn AsyncInstrument<u64>) {
    const STATES: [CircuitState; 3] = [
        CircuitState::Closed,
        CircuitState::Open,
        CircuitState::HalfOpen,
    ];
    for one in read(observed).iter() {
        let Some(expeditor) = one.expeditor.upgrade() else {
            continue;
        };
        for tool in expeditor.tools() {
            let (Some(name), Some(current)) = (expeditor.tool_name(tool), expeditor.state(tool))
            else {
                continue;
            };
            let name = StringValue::from(name.to_owned());
            for state in STATES {
                let mut attributes = Vec::with_capacity(2 + one.attributes.len());
                attributes.push(KeyValue::new(TOOL_NAME, name.clone()));
                attributes.push(KeyValue::new(STATE, state_name(state)));
                attributes.extend(one.attributes.iter().cloned());
                gauge.observe(u64::from(state == current), &attributes);
            }
        }
    }
}

/// A budget gauge's callback: one point per observed expeditor.
pub(super) fn observe_budget(
    observed: &RwLock<Vec<Observed>>,
    gauge: &dyn AsyncInstrument<u64>,
    value: fn(u32, u32) -> u32,
) {
    for one in read(observed).iter() {
        let Some(expeditor) = one.expeditor.upgrade() else {
            continue;
        };
        let status = expeditor.budget().status();
        gauge.observe(
            u64::from(value(status.consumed, status.limit)),
            &one.attributes,
        );
    }
}
