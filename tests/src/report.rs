//! Reading a report.json: checking it against
//! the JSON Schema in the repository (schema/report.schema.json), and picking
//! its metrics.

use crate::workspace_root;
use serde_json::Value;

/// Panics with every violation if `report` does not match the schema.
pub fn assert_valid_report(report: &Value) {
    let path = workspace_root().join("schema/report.schema.json");
    let schema: Value = serde_json::from_slice(&std::fs::read(&path).expect("the schema file"))
        .expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the schema is a valid JSON Schema");
    let errors: Vec<String> = validator
        .iter_errors(report)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "report.json does not match {}:\n{}",
        path.display(),
        errors.join("\n")
    );
}

/// The report's metrics of one measurement on one host, in report order.
pub fn metrics<'a>(report: &'a Value, measurement: &str, host: &str) -> Vec<&'a Value> {
    report["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["measurement"] == measurement && m["host"] == host)
        .collect()
}
