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

/// Asserts that the report measured `name` of `measurement` on `host`: the
/// metric is there with a positive median.
pub fn assert_measured(report: &Value, measurement: &str, host: &str, name: &str) {
    let rows = metrics(report, measurement, host);
    let row = rows
        .iter()
        .find(|m| m["metric"] == name)
        .unwrap_or_else(|| panic!("{measurement} {host}: no {name} in {rows:?}"));
    assert!(
        row["summary"]["p50"].as_f64().is_some_and(|v| v > 0.0),
        "{measurement} {host} {name} not measured: {row}"
    );
}
