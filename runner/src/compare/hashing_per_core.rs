//! SHA-1 block hashing on one core, without HTTP or a load generator sharing
//! the cores: the `sha1` function's own work, natively (its logic called in
//! process), in a wasm instance (one request at a time through the Host API,
//! so the body still streams into the guest), and `openssl speed sha1` on
//! 4 KiB blocks as the reference for what this CPU can do.

use super::hosts::HostKind;
use super::instance_cold_start::in_process_host;
use super::{Function, Run};
use crate::report::{Better, Metric};
use anyhow::{Context, Result, bail};
use bytes::Bytes;
use sha1_blocks::BlockHasher;
use std::process::Command;
use std::time::Instant;

const MEASUREMENT: &str = "hashing_per_core";
/// Bytes hashed per sample: the load scenario's body size.
const BODY: usize = 16 << 20;
/// Untimed samples first (page faults of the buffers, caches).
const WARMUP: usize = 2;

pub fn measure(run: &mut Run, runtime: &tokio::runtime::Runtime) -> Result<()> {
    let Some(f) = run
        .plan
        .functions
        .iter()
        .find(|f| f.name == "sha1")
        .copied()
    else {
        return Ok(());
    };
    let samples = if run.plan.quick { 5 } else { 20 };
    let bar = run.progress("hashing per core", 4);
    let metric = |host: &str| {
        Metric::new(
            MEASUREMENT,
            f.name,
            host,
            "throughput",
            "MB/s",
            Better::Higher,
        )
    };
    let body = Bytes::from((0..BODY).map(|i| (i % 251) as u8).collect::<Vec<u8>>());

    bar.set_message("openssl speed");
    run.record(match openssl_speed(run.plan.quick) {
        Ok(mb_s) => metric("native-openssl").value(mb_s),
        Err(why) => metric("native-openssl").skipped(format!("{why:#}")),
    });
    bar.inc(1);
    bar.set_message("native");
    run.record(metric("native-fn").samples(native(&body, samples)));
    bar.inc(1);
    for (kind, p3) in [(HostKind::Wasm, false), (HostKind::WasmP3, true)] {
        bar.set_message(kind.name());
        let m = metric(kind.name());
        run.record(if !run.plan.has_host(kind) {
            m.skipped(format!("host {} not selected", kind.name()))
        } else {
            match runtime.block_on(wasm(run, f, p3, &body, samples)) {
                Ok(series) => m.samples(series),
                Err(e) => m.skipped(format!("{e:#}")),
            }
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(())
}

fn mb_per_s(bytes: usize, started: Instant) -> f64 {
    bytes as f64 / started.elapsed().as_secs_f64() / 1e6
}

/// The function's logic on the calling thread, fed 64 KiB chunks as the native
/// server's body stream would.
fn native(body: &[u8], samples: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(samples);
    for i in 0..WARMUP + samples {
        let started = Instant::now();
        let mut hasher = BlockHasher::default();
        body.chunks(64 * 1024)
            .for_each(|chunk| hasher.update(chunk));
        let hashes = std::hint::black_box(hasher.finish());
        let mb_s = mb_per_s(body.len(), started);
        assert_eq!(hashes.blocks, body.len().div_ceil(sha1_blocks::BLOCK_SIZE));
        if i >= WARMUP {
            out.push(mb_s);
        }
    }
    out
}

/// One request at a time into a fresh (or, `p3`, reused) instance: one core's
/// worth of guest hashing, plus moving the body into the guest.
async fn wasm(run: &Run, f: &Function, p3: bool, body: &Bytes, samples: usize) -> Result<Vec<f64>> {
    let host = in_process_host(run, f, p3)?;
    let mut out = Vec::with_capacity(samples);
    for i in 0..WARMUP + samples {
        let request = http::Request::post("http://localhost/sha1")
            .header("host", "localhost")
            .header("content-type", "application/octet-stream")
            .header("content-length", body.len())
            .body(body.clone())?;
        let started = Instant::now();
        let response = host.handle_timed(f.name, request).await?;
        let mb_s = mb_per_s(body.len(), started);
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

/// `openssl speed -bytes 4096 sha1` (one process, one core), in MB/s.
fn openssl_speed(quick: bool) -> Result<f64> {
    let openssl = super::hosts::on_path("openssl").map_err(anyhow::Error::msg)?;
    let seconds = if quick { "1" } else { "3" };
    let out = super::group::output(
        Command::new(openssl).args(["speed", "-seconds", seconds, "-bytes", "4096", "sha1"]),
    )
    .context("running openssl speed")?;
    if !out.status.success() {
        bail!(
            "openssl speed failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    parse_openssl_speed(&String::from_utf8_lossy(&out.stdout))
        .context("no `sha1` line in openssl speed's output")
}

/// The figure on the `sha1  1867986.49k` line: thousands of bytes per second.
fn parse_openssl_speed(stdout: &str) -> Option<f64> {
    let line = stdout.lines().find(|l| l.starts_with("sha1 "))?;
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
        let mb_s = parse_openssl_speed(out).unwrap();
        assert!((mb_s - 1867.98649).abs() < 1e-6);
        assert_eq!(parse_openssl_speed("nothing here"), None);
    }

    #[test]
    fn native_hashing_reports_a_positive_rate() {
        let rates = native(&[7u8; 1 << 16], 2);
        assert_eq!(rates.len(), 2);
        assert!(rates.iter().all(|r| *r > 0.0));
    }
}
