//! The figures a report leads with, one row each: where the wasm hosts stand
//! against native in every measurement, for the first function of the
//! benchmark file that has the figure (the report's tables have the rest).

use super::table::{fmt, readable_ratio};
use super::{Metric, Report, is_baseline};
use crate::model::Measurement;
use crate::stats;

/// (measurement, metric, what the row says), in the order they are shown.
const FIGURES: [(Measurement, &str, &str); 6] = [
    (
        Measurement::Load,
        "server_cpu_per_request",
        "server CPU per request",
    ),
    (Measurement::Load, "throughput", "throughput"),
    (
        Measurement::ProcessColdStart,
        "first_200",
        "process start to first 200",
    ),
    (
        Measurement::InstanceColdStart,
        "total",
        "fresh instance, in process",
    ),
    (
        Measurement::Memory,
        "pss_per_instance_fit",
        "memory per live instance (PSS)",
    ),
    (Measurement::BuildAndSize, "binary_size", "binary size"),
];

/// The baselines a row's ratio is taken against, the first present: the
/// native server, else (in-process cold start) a native process per request.
const BASELINES: [&str; 2] = ["native", "native-process"];

/// The headline table: a column per host that has a figure in it.
pub struct Headline {
    pub hosts: Vec<String>,
    pub rows: Vec<Row>,
}

pub struct Row {
    pub function: String,
    /// What the row says, with its unit: `server CPU per request (us)`.
    pub label: String,
    /// One per host: the median, "skipped", or empty.
    pub cells: Vec<String>,
    /// wasm over the baseline, e.g. `5.85× native`, or empty.
    pub ratio: String,
}

/// The headline of `report`; no rows when it has none of the figures.
pub fn of(report: &Report) -> Headline {
    let picked: Vec<(Vec<&Metric>, &str)> = FIGURES
        .iter()
        .filter_map(|&(measurement, metric, label)| {
            Some((first_measured(report, measurement, metric)?, label))
        })
        .collect();
    let mut hosts: Vec<String> = Vec::new();
    for m in picked.iter().flat_map(|(row, _)| row) {
        if !hosts.contains(&m.host) {
            hosts.push(m.host.clone());
        }
    }
    // Native baselines first, then wasm, then the other runtimes (as the tables).
    hosts.sort_by_key(|h| (!is_baseline(h), h != "wasm"));
    let rows = picked
        .iter()
        .map(|(row, label)| {
            let find = |host: &str| row.iter().copied().find(|m| m.host == host);
            Row {
                function: row[0].function.clone(),
                label: format!("{label} ({})", row[0].unit),
                cells: hosts
                    .iter()
                    .map(|h| find(h).map_or(String::new(), cell))
                    .collect(),
                ratio: ratio(find("wasm"), &find),
            }
        })
        .collect();
    Headline { hosts, rows }
}

/// Every host's figure of the first function (in the report's order) whose
/// `metric` wasm measured; for a measurement with several K, the first K.
fn first_measured<'a>(
    report: &'a Report,
    measurement: Measurement,
    metric: &str,
) -> Option<Vec<&'a Metric>> {
    let wasm = report
        .metrics_of(measurement)
        .find(|m| m.metric == metric && m.host == "wasm" && m.summary.is_some())?;
    Some(
        report
            .metrics_of(measurement)
            .filter(|m| m.same_row(wasm))
            .collect(),
    )
}

fn cell(m: &Metric) -> String {
    match (m.p50(), &m.skipped, &m.limit) {
        (Some(p50), _, _) => fmt(p50, m.unit),
        (None, _, Some(_)) => "limit".into(),
        (None, Some(why), _) if why.starts_with("failed") => "failed".into(),
        (None, Some(_), _) => "skipped".into(),
        (None, None, None) => String::new(),
    }
}

fn ratio<'a>(wasm: Option<&Metric>, find: &dyn Fn(&str) -> Option<&'a Metric>) -> String {
    let Some(w) = wasm.and_then(Metric::p50) else {
        return String::new();
    };
    BASELINES
        .iter()
        .find_map(|b| {
            let r = stats::ratio(w, find(b)?.p50()?)?;
            Some(format!("{} {b}", readable_ratio(r)))
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Better, PinInfo, PlanInfo};

    fn report(metrics: Vec<Metric>) -> Report {
        let mut report = Report::new(
            vec!["spinbench".into()],
            PlanInfo {
                functions: vec!["hello".into(), "echo".into()],
                hosts: vec!["native", "wasm"],
                measurements: Measurement::ALL.to_vec(),
                load_duration_s: 1.0,
                warmup_s: 0.2,
                samples: 10,
                runs: 5,
                ks: vec![1],
                quick: true,
                pinning: PinInfo {
                    mode: "off",
                    server_cpus: None,
                    generator_cpus: None,
                    note: String::new(),
                },
            },
        );
        report.metrics = metrics;
        report
    }

    fn m(measurement: Measurement, function: &str, host: &str, metric: &'static str) -> Metric {
        Metric::new(measurement, function, host, metric, "us", Better::Lower)
    }

    /// A row per headline figure the run has, of the first function wasm
    /// measured it for, with wasm's ratio to the first baseline present.
    #[test]
    fn leads_with_the_first_function_each_figure_has() {
        let r = report(vec![
            m(Measurement::Load, "hello", "wasm", "server_cpu_per_request")
                .skipped("failed: the host exited"),
            m(
                Measurement::Load,
                "echo",
                "native",
                "server_cpu_per_request",
            )
            .value(10.0),
            m(Measurement::Load, "echo", "wasm", "server_cpu_per_request").value(80.0),
            m(Measurement::Load, "echo", "spin", "server_cpu_per_request")
                .skipped("`spin` not on PATH"),
            m(
                Measurement::InstanceColdStart,
                "hello",
                "native-process",
                "total",
            )
            .value(1500.0),
            m(Measurement::InstanceColdStart, "hello", "wasm", "total").value(15.0),
        ]);
        let headline = of(&r);
        assert_eq!(headline.hosts, ["native", "native-process", "wasm", "spin"]);
        assert_eq!(headline.rows.len(), 2);
        let cpu = &headline.rows[0];
        assert_eq!(
            (cpu.function.as_str(), cpu.label.as_str()),
            ("echo", "server CPU per request (us)")
        );
        assert_eq!(cpu.cells, ["10.0 µs", "", "80.0 µs", "skipped"]);
        assert_eq!(cpu.ratio, "8.00× native");
        let cold = &headline.rows[1];
        assert_eq!(cold.ratio, "1/100× native-process");
        assert!(of(&report(Vec::new())).rows.is_empty());
    }
}
