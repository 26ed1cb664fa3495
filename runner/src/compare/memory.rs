//! Memory: each host's idle footprint, and what one more concurrently live
//! instance costs. K requests are held in flight (the benchmark file's `memory.hold`,
//! io's `/io?ms=30000` in this repository) (each keeps an instance, a
//! task, or a whole process alive), and the server's RSS and PSS growth is divided
//! by K. PSS splits shared pages between the processes mapping them, so for the
//! process-per-request model the sum of PSS over the K processes is the fair cost.
//! RSS during and after load is recorded by the load measurement.

use super::hosts::{self, Cache, HostKind, Server};
use super::http::{self, Request};
use super::{Function, Run};
use crate::procfs::{self, Memory};
use crate::report::{Better, Metric};
use anyhow::{Context, Result};
use std::net::TcpStream;
use std::time::Duration;

const MEASUREMENT: &str = "memory";
/// Requests answered before the idle reading, so lazily touched pages are counted.
const WARM_REQUESTS: usize = 20;

pub fn measure(run: &mut Run) -> Result<()> {
    let functions = run.plan.functions.clone();
    let hosts = run.plan.hosts.clone();
    // The function whose benchmark-file entry holds requests open (`memory.hold`).
    let holder = functions
        .iter()
        .find(|f| f.spec.memory_hold.is_some())
        .cloned();
    let per_instance_steps = if holder.is_some() {
        run.plan.ks.len() * (hosts.len() + usize::from(run.plan.has_host(HostKind::Native)))
    } else {
        0
    };
    let bar = run.progress("memory", functions.len() * hosts.len() + per_instance_steps);
    for f in &functions {
        for kind in &hosts {
            bar.set_message(format!("idle {} on {}", f.name, kind.name()));
            for metric in idle(run, f, *kind) {
                run.record(metric);
            }
            bar.inc(1);
        }
    }
    if let Some(f) = holder {
        for &k in &run.plan.ks.clone() {
            for kind in &hosts {
                bar.set_message(format!("K={k} on {}", kind.name()));
                let result = per_instance_one_server(run, &f, *kind, k);
                record_per_instance(run, &f.name, kind.name(), k, result);
                bar.inc(1);
            }
            if run.plan.has_host(HostKind::Native) {
                bar.set_message(format!("K={k} native processes"));
                let result = per_instance_processes(run, &f, k);
                record_per_instance(run, &f.name, "native-process", k, result);
                bar.inc(1);
            }
        }
        record_fits(run, &f.name);
    } else if let Some(f) = functions.first() {
        let m = Metric::new(
            MEASUREMENT,
            &f.name,
            "wasm",
            "pss_per_instance_fit",
            "bytes",
            Better::Lower,
        );
        run.record(
            m.skipped("no function of the benchmark file holds requests open (memory.hold)"),
        );
    }
    bar.finish_and_clear();
    Ok(())
}

/// One figure per host from all K: the least-squares slope of total PSS growth
/// against K. A single K's growth / K is noisy at small K (growth below a page
/// rounds to zero) and carries fixed costs; the slope is the marginal instance.
fn record_fits(run: &mut Run, function: &str) {
    let per_k: Vec<(String, f64, f64)> = run
        .report
        .metrics_of(MEASUREMENT)
        .filter(|m| m.metric == "pss_per_instance")
        .filter_map(|m| Some((m.host.clone(), m.k? as f64, m.p50()? * m.k? as f64)))
        .collect();
    let mut hosts: Vec<&String> = per_k.iter().map(|(h, _, _)| h).collect();
    hosts.dedup();
    let fits: Vec<(String, Option<f64>)> = hosts
        .into_iter()
        .map(|h| {
            let points: Vec<(f64, f64)> = per_k
                .iter()
                .filter(|p| &p.0 == h)
                .map(|p| (p.1, p.2))
                .collect();
            (h.clone(), crate::stats::slope(&points))
        })
        .collect();
    for (host, slope) in fits {
        let m = Metric::new(
            MEASUREMENT,
            function,
            &host,
            "pss_per_instance_fit",
            "bytes",
            Better::Lower,
        );
        run.record(match slope {
            Some(s) => m.value(s),
            None => m.skipped("fewer than two K measured"),
        });
    }
}

fn start(run: &Run, f: &Function, kind: HostKind, label: &str) -> Result<Server, String> {
    let addr = hosts::free_addr().map_err(|e| e.to_string())?;
    let cmd = hosts::command(
        kind,
        f,
        &run.paths,
        &Cache::Dir(run.paths.cache_dir()),
        addr,
    )?;
    let (server, _) = Server::start(cmd, addr, &f.probe(), label).map_err(|e| format!("{e:#}"))?;
    for _ in 0..WARM_REQUESTS {
        http::call(server.addr, &f.probe(), Duration::from_secs(10))
            .map_err(|e| format!("warm-up: {e:#}"))?;
    }
    // Let the allocator and the runtime settle after the warm-up.
    std::thread::sleep(Duration::from_millis(100));
    Ok(server)
}

fn idle(run: &Run, f: &Function, kind: HostKind) -> Vec<Metric> {
    let metric = |name, value: Result<f64, String>| {
        let m = Metric::new(
            MEASUREMENT,
            &f.name,
            kind.name(),
            name,
            "bytes",
            Better::Lower,
        );
        match value {
            Ok(v) => m.value(v),
            Err(why) => m.skipped(why),
        }
    };
    let reading = start(run, f, kind, &format!("idle-{}-{}", f.name, kind.name()))
        .and_then(|server| procfs::memory(server.pid()).map_err(|e| format!("{e:#}")));
    vec![
        metric("idle_rss", reading.clone().map(|m| m.rss_bytes as f64)),
        metric("idle_pss", reading.map(|m| m.pss_bytes as f64)),
    ]
}

/// Opens `k` connections each carrying `f`'s request the server will hold.
fn hold(addr: std::net::SocketAddr, f: &Function, k: usize) -> Result<Vec<TcpStream>> {
    let request = f
        .spec
        .memory_hold
        .as_ref()
        .map(Request::from)
        .context("no memory.hold request")?;
    (0..k)
        .map(|i| {
            http::send(addr, &request, Duration::from_secs(10))
                .with_context(|| format!("held request {i}"))
        })
        .collect()
}

/// Fails unless every held request is still unanswered, so a figure is never
/// computed from requests the server refused (a 503) or finished early.
fn still_in_flight(held: &[TcpStream]) -> Result<(), String> {
    let mut buf = [0u8; 1];
    let answered = held
        .iter()
        .filter(|s| {
            s.set_nonblocking(true).is_ok()
                && !matches!(s.peek(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
        })
        .count();
    match answered {
        0 => Ok(()),
        n => Err(format!(
            "{n} of {} held requests were answered or closed before the reading",
            held.len()
        )),
    }
}

/// Gives the server time to accept and start every held request.
fn settle(k: usize) {
    std::thread::sleep(Duration::from_millis(300 + k as u64 / 2));
}

/// K requests in flight on one server: (memory growth) / K.
fn per_instance_one_server(
    run: &Run,
    f: &Function,
    kind: HostKind,
    k: usize,
) -> Result<Memory, String> {
    let server = start(run, f, kind, &format!("k{k}-{}", kind.name()))?;
    let before = procfs::memory(server.pid()).map_err(|e| format!("{e:#}"))?;
    let held = hold(server.addr, f, k).map_err(|e| format!("{e:#}"))?;
    settle(k);
    let during = procfs::memory(server.pid()).map_err(|e| format!("{e:#}"))?;
    still_in_flight(&held)?;
    drop(held);
    Ok(Memory {
        rss_bytes: during.rss_bytes.saturating_sub(before.rss_bytes) / k as u64,
        pss_bytes: during.pss_bytes.saturating_sub(before.pss_bytes) / k as u64,
    })
}

/// K native processes, each with one request in flight: total memory / K.
fn per_instance_processes(run: &Run, f: &Function, k: usize) -> Result<Memory, String> {
    let mut servers = Vec::with_capacity(k);
    let mut held = Vec::with_capacity(k);
    for i in 0..k {
        let addr = hosts::free_addr().map_err(|e| e.to_string())?;
        let cmd = hosts::command(HostKind::Native, f, &run.paths, &Cache::Off, addr)?;
        let (server, _) = Server::start(cmd, addr, &f.probe(), &format!("k{k}-process-{i}"))
            .map_err(|e| format!("{e:#}"))?;
        held.extend(hold(server.addr, f, 1).map_err(|e| format!("{e:#}"))?);
        servers.push(server);
    }
    settle(0);
    let mut total = Memory::default();
    for server in &servers {
        let m = procfs::memory(server.pid()).map_err(|e| format!("{e:#}"))?;
        total.rss_bytes += m.rss_bytes;
        total.pss_bytes += m.pss_bytes;
    }
    still_in_flight(&held)?;
    drop(held);
    Ok(Memory {
        rss_bytes: total.rss_bytes / k as u64,
        pss_bytes: total.pss_bytes / k as u64,
    })
}

fn record_per_instance(
    run: &mut Run,
    function: &str,
    host: &str,
    k: usize,
    result: Result<Memory, String>,
) {
    for (name, pick) in [
        (
            "pss_per_instance",
            (|m: &Memory| m.pss_bytes) as fn(&Memory) -> u64,
        ),
        ("rss_per_instance", |m: &Memory| m.rss_bytes),
    ] {
        let m = Metric::new(MEASUREMENT, function, host, name, "bytes", Better::Lower).k(k);
        run.record(match &result {
            Ok(mem) => m.value(pick(mem) as f64),
            Err(why) => m.skipped(why.clone()),
        });
    }
}
