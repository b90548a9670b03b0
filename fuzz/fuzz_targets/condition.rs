//! The condition language: parse arbitrary text, then evaluate what parses against results of
//! each shape a provider returns. Errors are fine; panics and hangs are not.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use weir_control::expr::{Condition, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(condition) = Condition::parse(text) else {
        return;
    };
    let mut map = BTreeMap::new();
    map.insert("value".to_string(), Value::Number(0.5));
    let results = [
        Value::Number(0.97),
        Value::Number(f64::NAN),
        Value::Number(-1e308),
        Value::String("ok".into()),
        Value::Bool(true),
        Value::List(vec![Value::Number(1.0), Value::Number(2.0)]),
        Value::List(Vec::new()),
        Value::Map(map),
    ];
    for result in &results {
        let _ = condition.evaluate(result);
        let _ = condition.eval(result);
    }
});
