//! Hashing on one core, without HTTP or a load generator sharing the cores:
//! the work of the function whose benchmark-file entry has `hashing_per_core`
//! (`sha1` here), natively (its logic called in process, `plain`), in a wasm instance (one request at a time through the Host API,
//! so the body still streams into the guest), and `openssl speed sha1` on
//! 4 KiB blocks as the reference for what this CPU can do.

use super::hosts::HostKind;
use super::http::Request;
use super::instance_cold_start::{http_request, in_process_host};
use super::progress::Step;
use super::{Function, Plan, Run};
use crate::benchfile::{Body, Hashing};
use crate::model::Measurement;
use crate::report::{Better, Metric};
use anyhow::{Context, Result, bail};
use std::process::Command;
use std::time::{Duration, Instant};

const MEASUREMENT: Measurement = Measurement::HashingPerCore;
/// Untimed samples first (page faults of the buffers, caches).
const WARMUP: usize = 2;

/// The function whose benchmark-file entry has `hashing_per_core`.
fn hashing(plan: &Plan) -> Option<(Function, Hashing)> {
    plan.functions
        .iter()
        .find_map(|f| Some((f.clone(), f.spec.hashing_per_core.clone()?)))
}

/// Large requests timed per host.
fn samples(plan: &Plan) -> usize {
    if plan.quick { 5 } else { 20 }
}

/// The hosts of its steps, in order.
const HOSTS: [&str; 4] = ["native-openssl", "native-fn", "wasm", "wasm-p3"];

pub fn steps(plan: &Plan) -> Vec<Step> {
    hashing(plan).map_or_else(Vec::new, |(f, spec)| {
        HOSTS.map(|host| step(plan, &f, &spec, host)).into()
    })
}

/// openssl runs for its seconds; the others hash their samples at a few hundred MB/s.
fn step(plan: &Plan, f: &Function, spec: &Hashing, host: &str) -> Step {
    let planned = if host == "native-openssl" {
        Duration::from_secs(openssl_seconds(plan.quick))
    } else {
        let bytes = large_request(spec, plan.quick).body.len() * (WARMUP + samples(plan));
        Duration::from_secs_f64(bytes as f64 / 500e6)
    };
    Step::new(MEASUREMENT, &f.name, host, planned)
}

fn openssl_seconds(quick: bool) -> u64 {
    if quick { 1 } else { 3 }
}

pub fn measure(run: &mut Run, runtime: &tokio::runtime::Runtime) {
    let Some((f, spec)) = hashing(&run.plan) else {
        return;
    };
    let samples = samples(&run.plan);
    let begin = |run: &Run, host: &str| run.progress.begin(&step(&run.plan, &f, &spec, host));
    let metric = |host: &str| {
        Metric::new(
            MEASUREMENT,
            &f.name,
            host,
            "throughput",
            "MB/s",
            Better::Higher,
        )
    };
    let request = large_request(&spec, run.plan.quick);
    let bytes = request.body.len();

    begin(run, "native-openssl");
    let openssl = match &spec.openssl_speed {
        Some(algorithm) => openssl_speed(algorithm, run.plan.quick).map_err(|e| format!("{e:#}")),
        None => Err("no openssl_speed in the benchmark file".to_string()),
    };
    run.record(match openssl {
        Ok(mb_s) => metric("native-openssl").value(mb_s),
        Err(why) => metric("native-openssl").skipped(why),
    });
    begin(run, "native-fn");
    // The logic in process, one call per sample, fed 64 KiB chunks as the
    // native server's body stream would be.
    let native = super::plain::time_calls(&run.paths, &f, &request, 200, samples)
        .map(|us| us.iter().map(|us| bytes as f64 / us).collect());
    run.record(match native {
        Ok(series) => metric("native-fn").samples(series),
        Err(why) => metric("native-fn").skipped(why),
    });
    for (kind, p3) in [(HostKind::Wasm, false), (HostKind::WasmP3, true)] {
        begin(run, kind.name());
        let m = metric(kind.name());
        run.record(if run.plan.has_host(kind) {
            match runtime.block_on(wasm(run, &f, p3, &request, samples)) {
                Ok(series) => m.samples(series),
                Err(e) => m.skipped(format!("{e:#}")),
            }
        } else {
            m.skipped(format!("host {} not selected", kind.name()))
        });
    }
    run.progress.end(MEASUREMENT);
}

/// The file's request, with the quick body size under `--quick`.
fn large_request(spec: &Hashing, quick: bool) -> Request {
    let mut request = spec.request.clone();
    if let (true, Some(n)) = (quick, spec.quick_body_bytes) {
        request.body = Body::Generated(n);
    }
    Request::from(&request)
}

fn mb_per_s(bytes: usize, started: Instant) -> f64 {
    bytes as f64 / started.elapsed().as_secs_f64() / 1e6
}

/// One request at a time into a fresh (or, `p3`, reused) instance: one core's
/// worth of guest hashing, plus moving the body into the guest.
async fn wasm(
    run: &Run,
    f: &Function,
    p3: bool,
    request: &Request,
    samples: usize,
) -> Result<Vec<f64>> {
    let host = in_process_host(run, f, p3)?;
    let mut out = Vec::with_capacity(samples);
    for i in 0..WARMUP + samples {
        let started = Instant::now();
        let response = host.handle_timed(&f.name, http_request(request)?).await?;
        let mb_s = mb_per_s(request.body.len(), started);
        if response.status != 200 {
            bail!(
                "answered {}: {}",
                response.status,
                String::from_utf8_lossy(&response.body)
            );
        }
        if i >= WARMUP {
            out.push(mb_s);
        }
    }
    Ok(out)
}

/// `openssl speed -bytes 4096 <algorithm>` (one process, one core), in MB/s.
fn openssl_speed(algorithm: &str, quick: bool) -> Result<f64> {
    let openssl = super::hosts::on_path("openssl").map_err(anyhow::Error::msg)?;
    let seconds = openssl_seconds(quick).to_string();
    let out = super::group::output(
        Command::new(openssl).args(["speed", "-seconds", &seconds, "-bytes", "4096", algorithm]),
    )
    .context("running openssl speed")?;
    if !out.status.success() {
        bail!(
            "openssl speed failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    parse_openssl_speed(&String::from_utf8_lossy(&out.stdout), algorithm)
        .with_context(|| format!("no `{algorithm}` line in openssl speed's output"))
}

/// The figure on the `sha1  1867986.49k` line: thousands of bytes per second.
fn parse_openssl_speed(stdout: &str, algorithm: &str) -> Option<f64> {
    let line = stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(algorithm))?;
    let k = line.split_whitespace().last()?.strip_suffix('k')?;
    Some(k.parse::<f64>().ok()? * 1e3 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_openssl_speed_output() {
        let out = "Doing sha1 ops for 1s on 4096 size blocks: 456 sha1 ops in 1.00s\n\
                   The 'numbers' are in 1000s of bytes per second processed.\n\
                   type           4096 bytes\n\
                   sha1           1867986.49k\n";
        let mb_s = parse_openssl_speed(out, "sha1").unwrap();
        assert!((mb_s - 1867.98649).abs() < 1e-6);
        assert_eq!(parse_openssl_speed("nothing here", "sha1"), None);
    }
}
