//! Unit tests of the report: ratios, warnings, the time stamps.

use super::*;

fn metric(host: &str, p50: f64) -> Metric {
    Metric::new(
        Measurement::Load,
        "hello",
        host,
        "rps",
        "req/s",
        Better::Higher,
    )
    .value(p50)
}

#[test]
fn civil_dates() {
    assert_eq!(utc_parts(UNIX_EPOCH), ((1970, 1, 1), (0, 0, 0)));
    let t = UNIX_EPOCH + Duration::from_secs(1_709_251_199); // 2024-02-29T23:59:59Z
    assert_eq!(rfc3339(t), "2024-02-29T23:59:59Z");
}

#[test]
fn ratios_are_against_native_baselines_in_the_same_row() {
    let mut other = metric("native", 1.0);
    other.function = "echo".into();
    let rs = ratios(&[
        metric("native", 100.0),
        metric("wasm", 50.0),
        metric("spin", 25.0),
        other,
    ]);
    let got: Vec<_> = rs
        .iter()
        .map(|r| (r.host.as_str(), r.baseline.as_str(), r.ratio))
        .collect();
    assert_eq!(got, [("wasm", "native", 0.5), ("spin", "native", 0.25)]);
}

fn load(host: &str, name: &'static str, value: f64) -> Metric {
    Metric::new(
        Measurement::Load,
        "hello",
        host,
        name,
        "req/s",
        Better::Higher,
    )
    .value(value)
}

/// The server on one CPU and the generators on another, pinned.
const ONE_EACH: SplitCores = SplitCores {
    server: 1,
    generator: 1,
    pinned: true,
};

/// oha and wrk 20 % apart on wasm, with the same CPU per request and oha
/// on all of its CPU: warned, with why. 5 % apart on native: not warned.
#[test]
fn generators_that_disagree_are_warned_about_with_why() {
    let metrics = [
        load("native", "throughput", 20_000.0),
        load("native", "throughput_wrk", 21_000.0),
        load("wasm", "throughput", 10_000.0),
        load("wasm", "throughput_wrk", 12_000.0),
        load("wasm", "server_cpu_per_request", 60.0),
        load("wasm", "server_cpu_per_request_wrk", 62.0),
        load("wasm", "client_cpu", 0.97),
        load("wasm", "client_cpu_wrk", 0.5),
    ];
    let warnings = generators_disagree(&metrics, ONE_EACH);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    assert!(
        w.starts_with(
            "load hello wasm: oha and wrk differ by +20 % (10.0k req/s vs 12.0k req/s under wrk)"
        ),
        "{w}"
    );
    assert!(
        w.contains("the same CPU per request under both (60.0 vs 62.0 µs)"),
        "{w}"
    );
    assert!(
        w.contains("oha used 0.97 of its 1 CPU(s), all of them"),
        "{w}"
    );
    assert!(w.contains("wrk used 0.50 of its 1 CPU(s);"), "{w}");
    assert!(!w.contains("not pinned"), "{w}");
    // The server's work differing too is said; so is sharing the CPUs.
    let mut differing = metrics.to_vec();
    differing[5] = load("wasm", "server_cpu_per_request_wrk", 80.0);
    differing.push(load("wasm", "server_cpu", 0.3));
    differing.push(load("wasm", "other_cpu", 1.2));
    let shared = SplitCores {
        server: 2,
        generator: 2,
        pinned: false,
    };
    let w = &generators_disagree(&differing, shared)[0];
    assert!(
        w.contains("the server used 0.30 of its 2 CPU(s) under oha"),
        "{w}"
    );
    assert!(
        w.contains("the rest of the machine used 1.20 cores during oha's run"),
        "{w}"
    );
    assert!(
        w.contains("CPU per request differs too (60.0 µs under oha, 80.0 under wrk)"),
        "{w}"
    );
    assert!(w.contains("oha used 0.97 of its 2 CPU(s);"), "{w}");
    assert!(w.contains("not pinned"), "{w}");
    // Without wrk's figure there is nothing to compare.
    assert!(generators_disagree(&metrics[2..3], ONE_EACH).is_empty());
}

/// Rates within 10 % but the server's CPU per request 20 % apart (a server that
/// waited on a slower generator): warned, with both kernel shares and why; 10 %
/// apart, as issue 33 asks of the two generators: not warned.
#[test]
fn cpu_per_request_that_differs_between_generators_is_warned_about() {
    let mut metrics = vec![
        load("native", "throughput", 90_000.0),
        load("native", "throughput_wrk", 95_000.0),
        load("native", "server_cpu_per_request", 12.0),
        load("native", "server_cpu_per_request_wrk", 10.0),
        load("native", "server_kernel_cpu_per_request", 8.9),
        load("native", "server_kernel_cpu_per_request_wrk", 7.8),
    ];
    let warnings = generators_disagree(&metrics, ONE_EACH);
    let [w] = warnings.as_slice() else {
        panic!("one warning expected: {warnings:?}")
    };
    assert!(
        w.starts_with(
            "load hello native: the server's CPU per request differs by -17 % between oha and wrk at the same rate (12.0 vs 10.0 µs; of it the kernel's 8.9 vs 7.8)"
        ),
        "{w}"
    );
    assert!(w.contains("waking its thread where it waited"), "{w}");
    metrics[3] = load("native", "server_cpu_per_request_wrk", 11.0);
    assert!(generators_disagree(&metrics, ONE_EACH).is_empty());
}

/// A finished report with a load plan, two measured hosts and one skipped.
fn sample_report() -> Report {
    let plan = PlanInfo {
        functions: vec![],
        hosts: vec!["native", "wasm"],
        measurements: vec![Measurement::Load],
        load_duration_s: 1.0,
        warmup_s: 0.2,
        samples: 10,
        runs: 2,
        ks: vec![1, 10, 100],
        quick: true,
        pinning: PinInfo {
            mode: "auto",
            server_cpus: Some(vec![0]),
            generator_cpus: Some(vec![1]),
            note: "one each".into(),
        },
    };
    let mut report = Report::new(vec!["spinbench".into()], plan);
    report.push(metric("native", 100.0));
    report.push(metric("wasm", 50.0));
    report.push(
        Metric::new(
            Measurement::Load,
            "hello",
            "spin",
            "rps",
            "req/s",
            Better::Higher,
        )
        .skipped("`spin` not on PATH"),
    );
    report.finish(Duration::from_secs(3));
    report
}

#[test]
fn host_versions_appear_in_json_and_markdown_only_when_named() {
    let mut report = sample_report();
    let json = serde_json::to_value(&report).unwrap();
    // Empty unless `load --host-version` named what served the URL; the
    // Markdown names it then.
    assert_eq!(json["versions"]["host"], serde_json::json!({}));
    assert!(!table::markdown(&report).contains("Served by"));
    report
        .versions
        .host
        .insert("containerd".into(), "containerd 1.7.24".into());
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["versions"]["host"]["containerd"], "containerd 1.7.24");
    assert!(
        table::markdown(&report)
            .contains("Served by (as `--host-version` named it): containerd: containerd 1.7.24.")
    );
}

#[test]
fn json_shape_is_stable() {
    let report = sample_report();
    let json = serde_json::to_value(&report).unwrap();
    for key in [
        "schema",
        "started_at",
        "duration_s",
        "command",
        "machine",
        "versions",
        "plan",
        "metrics",
        "ratios",
        "warnings",
    ] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    assert_eq!(json["schema"], SCHEMA);
    assert_eq!(
        json["plan"]["pinning"]["server_cpus"],
        serde_json::json!([0])
    );
    assert_eq!(
        json["plan"]["pinning"]["generator_cpus"],
        serde_json::json!([1])
    );
    assert!(json["versions"].get("wrk").is_some());
    for key in [
        "cpu_model",
        "cores",
        "kernel",
        "memory_total_bytes",
        "sha_instructions",
    ] {
        assert!(json["machine"].get(key).is_some(), "machine.{key}");
    }
    let m = &json["metrics"][0];
    for key in [
        "measurement",
        "function",
        "host",
        "metric",
        "unit",
        "better",
        "k",
        "detail",
        "summary",
        "skipped",
    ] {
        assert!(m.get(key).is_some(), "metric.{key}");
    }
    assert!(m.get("samples").is_none());
    assert_eq!(m["measurement"], "load");
    for key in [
        "n",
        "min",
        "p50",
        "p90",
        "p99",
        "max",
        "mean",
        "mad",
        "rel_spread",
        "outliers",
    ] {
        assert!(m["summary"].get(key).is_some(), "summary.{key}");
    }
    assert_eq!(json["metrics"][2]["summary"], serde_json::Value::Null);
    assert_eq!(json["ratios"][0]["ratio"], 0.5);
    assert_eq!(json["ratios"][0]["baseline"], "native");
}
