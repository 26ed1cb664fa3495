//! Memory: each host's idle footprint, and what one more concurrently live
//! instance costs. K requests are held in flight (the benchmark file's `memory.hold`,
//! io's `/io?ms=30000` in this repository) (each keeps an instance, a
//! task, or a whole process alive), and the server's RSS and PSS growth is divided
//! by K. PSS splits shared pages between the processes mapping them, so for the
//! process-per-request model the sum of PSS over the K processes is the fair cost.
//! A host is its whole process tree (`tree`): `spin up` serves from a child.
//! A host that cannot hold K requests at once has hit its limit: how many it
//! held is its figure, with what the others' clients got.
//! RSS during and after load is recorded by the load measurement.

use super::estimate;
use super::hosts::{self, Cache, HostKind, Server};
use super::http::{self, Request};
use super::outcome::MeasureError;
use super::progress::Step;
use super::tree::{self, Kind};
use super::{Function, Plan, Run};
use crate::model::Measurement;
use crate::procfs::{self, Memory};
use crate::report::{Better, Counted, Metric};
use anyhow::Result;
use std::collections::BTreeMap;
use std::net::TcpStream;
use std::time::Duration;

const MEASUREMENT: Measurement = Measurement::Memory;
/// Requests answered before the idle reading, so lazily touched pages are counted.
const WARM_REQUESTS: usize = 20;
/// The pause between the warm-up requests and the reading.
const SETTLE_AFTER_WARM_UP: Duration = Duration::from_millis(100);
const SETTLE_AFTER_WARM_UP_QUICK: Duration = Duration::from_millis(20);
/// How long a host that could not hold K requests gets to answer the probe
/// again, once the requests it held have ended, before it counts as broken
/// rather than full.
const RECOVERY: Duration = Duration::from_secs(10);
/// How long the requests a full host held may take to end. A host that does not
/// cancel a request when its client hangs up (`wasmtime serve`) stays full
/// until they do, so it is probed for recovery only afterwards; the hold
/// requests of a benchmark file should end well within this.
const HELD_REQUESTS_END_WITHIN: Duration = Duration::from_secs(90);

/// The function whose benchmark-file entry holds requests open (`memory.hold`).
fn holder(plan: &Plan) -> Option<&Function> {
    plan.functions.iter().find(|f| f.spec.memory_hold.is_some())
}

/// Each function's idle footprint on each host, then K held requests on each
/// host (and K native processes) for the holder.
pub fn steps(plan: &Plan) -> Vec<Step> {
    let mut steps: Vec<Step> = plan
        .functions
        .iter()
        .flat_map(|f| plan.hosts.iter().map(|kind| idle_step(f, *kind)))
        .collect();
    if let Some(f) = holder(plan) {
        for &k in &plan.ks {
            steps.extend(plan.hosts.iter().map(|kind| held_step(f, kind.name(), k)));
            if plan.has_host(HostKind::Native) {
                steps.push(held_step(f, "native-process", k));
            }
        }
    }
    steps
}

/// A start, its warm-up requests and the pause after them.
fn idle_step(f: &Function, kind: HostKind) -> Step {
    let planned = estimate::start(f, kind != HostKind::Native) + Duration::from_millis(150);
    Step::new(MEASUREMENT, &f.name, kind.name(), planned).detail("idle")
}

/// A start, K requests held, the settling pause, and (K processes) K starts.
fn held_step(f: &Function, host: &str, k: usize) -> Step {
    let starts = if host == "native-process" { k } else { 1 };
    let planned = estimate::warm_start(f) * starts as u32
        + Duration::from_millis(450 + k as u64 / 2 + 2 * k as u64);
    Step::new(MEASUREMENT, &f.name, host, planned).detail(format!("K={k}"))
}

pub fn measure(run: &mut Run) {
    let functions = run.plan.functions.clone();
    let hosts = run.plan.hosts.clone();
    let holder = holder(&run.plan).cloned();
    for f in &functions {
        for kind in &hosts {
            run.progress.begin(&idle_step(f, *kind));
            for metric in idle(run, f, *kind) {
                run.record(metric);
            }
        }
    }
    if let Some(f) = holder {
        for &k in &run.plan.ks.clone() {
            for kind in &hosts {
                run.progress.begin(&held_step(&f, kind.name(), k));
                let result = per_instance_one_server(run, &f, *kind, k);
                record_per_instance(run, &f.name, kind.name(), k, result);
            }
            if run.plan.has_host(HostKind::Native) {
                run.progress.begin(&held_step(&f, "native-process", k));
                let result = per_instance_processes(run, &f, k);
                record_per_instance(run, &f.name, "native-process", k, result);
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
    run.progress.end(MEASUREMENT);
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

fn start(run: &Run, f: &Function, kind: HostKind, label: &str) -> Result<Server, MeasureError> {
    // Held until the host listens (Server::start waits for it).
    let lease = hosts::free_addr().map_err(|e| MeasureError::Skipped(e.to_string()))?;
    let addr = lease.addr();
    let cmd = hosts::command(
        kind,
        f,
        &run.paths,
        &Cache::Dir(run.paths.cache_dir()),
        addr,
    )?;
    let (server, _) =
        Server::start(cmd, addr, &f.probe(), label).map_err(|e| MeasureError::skipped(&e))?;
    for _ in 0..WARM_REQUESTS {
        http::call(server.addr, &f.probe(), Duration::from_secs(10))
            .map_err(|e| MeasureError::Skipped(format!("warm-up: {e:#}")))?;
    }
    // Let the allocator and the runtime settle after the warm-up (`--quick`,
    // not for figures, less: its ~36 starts would wait 3.6 s in all).
    std::thread::sleep(if run.plan.quick {
        SETTLE_AFTER_WARM_UP_QUICK
    } else {
        SETTLE_AFTER_WARM_UP
    });
    Ok(server)
}

fn idle(run: &Run, f: &Function, kind: HostKind) -> Vec<Metric> {
    let reading =
        start(run, f, kind, &format!("idle-{}-{}", f.name, kind.name())).and_then(|server| {
            procfs::tree_memory(server.pid()).map_err(|e| MeasureError::skipped(&e))
        });
    [("idle_rss", Kind::Rss), ("idle_pss", Kind::Pss)]
        .into_iter()
        .map(|(name, kind_of)| {
            let m = Metric::new(
                MEASUREMENT,
                &f.name,
                kind.name(),
                name,
                "bytes",
                Better::Lower,
            );
            match &reading {
                Ok(reading) => {
                    let (total, counted) = tree::memory(reading, kind_of);
                    m.value(total).processes(counted)
                }
                Err(why) => m.skipped(why.reason()),
            }
        })
        .collect()
}

/// The request of `f` the server holds (the benchmark file's `memory.hold`).
fn hold_request(f: &Function) -> Result<Request, MeasureError> {
    f.spec
        .memory_hold
        .as_ref()
        .map(Request::from)
        .ok_or_else(|| MeasureError::Skipped(format!("{} has no memory.hold request", f.name)))
}

/// Opens `k` connections each carrying `request`, which the server holds;
/// a connection that fails is counted by its error (the host's limit).
fn hold(
    addr: std::net::SocketAddr,
    request: &Request,
    k: usize,
) -> (Vec<TcpStream>, BTreeMap<String, u64>) {
    let mut held = Vec::with_capacity(k);
    let mut failed = BTreeMap::new();
    for _ in 0..k {
        match http::send(addr, request, Duration::from_secs(10)) {
            Ok(stream) => held.push(stream),
            Err(e) => *failed.entry(error_kind(&e)).or_default() += 1,
        }
    }
    (held, failed)
}

/// An error as a client sees it: "connection refused", "timed out", ...
fn error_kind(e: &anyhow::Error) -> String {
    e.chain()
        .find_map(|c| c.downcast_ref::<std::io::Error>())
        .map_or_else(|| format!("{e:#}"), |io| io.kind().to_string())
}

/// The held requests still in flight, and those answered or closed before the
/// reading, counted by what their client got (a status code, or how the
/// connection ended).
fn answered_early(held: Vec<TcpStream>) -> (Vec<TcpStream>, BTreeMap<String, u64>) {
    let mut buf = [0u8; 1];
    let mut in_flight = Vec::new();
    let mut got = BTreeMap::new();
    for stream in held {
        let waiting = stream.set_nonblocking(true).is_ok()
            && matches!(stream.peek(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        if waiting {
            in_flight.push(stream);
            continue;
        }
        let _ = stream.set_nonblocking(false);
        let outcome = match http::finish(stream) {
            Ok((status, _)) => status.to_string(),
            Err(e)
                if e.chain()
                    .any(<dyn std::error::Error + 'static>::is::<std::io::Error>) =>
            {
                error_kind(&e)
            }
            Err(_) => "closed without an answer".into(),
        };
        *got.entry(outcome).or_default() += 1;
    }
    (in_flight, got)
}

/// Reads each held request's answer (or its end) until `within` has passed.
fn wait_for_answers(held: Vec<TcpStream>, within: Duration) {
    let deadline = std::time::Instant::now() + within;
    for mut stream in held {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() || stream.set_nonblocking(false).is_err() {
            return;
        }
        let _ = stream.set_read_timeout(Some(left));
        let _ = std::io::copy(&mut stream, &mut std::io::sink());
    }
}

/// Gives the server time to accept and start every held request.
fn settle(k: usize) {
    std::thread::sleep(Duration::from_millis(300 + k as u64 / 2));
}

/// What K requests held at once on one host came to.
enum Held {
    /// All K in flight at the reading: memory growth / K, with the processes it was in.
    All {
        per_instance: Memory,
        pss_parts: Option<Vec<Counted>>,
        rss_parts: Option<Vec<Counted>>,
    },
    /// The host kept serving but held fewer: its limit.
    Limit {
        held: usize,
        clients_saw: BTreeMap<String, u64>,
    },
}

/// K requests in flight on one server: (memory growth of its tree) / K.
fn per_instance_one_server(
    run: &Run,
    f: &Function,
    kind: HostKind,
    k: usize,
) -> Result<Held, MeasureError> {
    let request = hold_request(f)?;
    let server = start(run, f, kind, &format!("k{k}-{}", kind.name()))?;
    let tree_memory = || procfs::tree_memory(server.pid()).map_err(|e| MeasureError::skipped(&e));
    let before = tree_memory()?;
    let (held, refused) = hold(server.addr, &request, k);
    settle(k);
    let during = tree_memory()?;
    let (waiting, mut clients_saw) = answered_early(held);
    let in_flight = waiting.len();
    if in_flight < k {
        for (what, n) in refused {
            *clients_saw.entry(what).or_default() += n;
        }
        let limit = Held::Limit {
            held: in_flight,
            clients_saw,
        };
        wait_for_answers(waiting, HELD_REQUESTS_END_WITHIN);
        return match server.still_serves(&f.probe(), RECOVERY) {
            Ok(()) => Ok(limit),
            Err(broke) => Err(MeasureError::Failed(anyhow::anyhow!(
                "{in_flight} of {k} held requests stayed in flight, then {broke}"
            ))),
        };
    }
    let growth = |kind_of| {
        let (total, parts) = tree::memory_growth(&before, &during, kind_of);
        (total as u64 / k as u64, parts)
    };
    let ((pss, pss_parts), (rss, rss_parts)) = (growth(Kind::Pss), growth(Kind::Rss));
    Ok(Held::All {
        per_instance: Memory {
            rss_bytes: rss,
            pss_bytes: pss,
        },
        pss_parts: Some(pss_parts),
        rss_parts: Some(rss_parts),
    })
}

/// K native processes, each with one request in flight: total memory / K.
fn per_instance_processes(run: &Run, f: &Function, k: usize) -> Result<Held, MeasureError> {
    let request = hold_request(f)?;
    let mut servers = Vec::with_capacity(k);
    let mut held = Vec::with_capacity(k);
    for i in 0..k {
        // Held until the host listens (Server::start waits for it).
        let lease = hosts::free_addr().map_err(|e| MeasureError::Skipped(e.to_string()))?;
        let addr = lease.addr();
        let cmd = hosts::command(HostKind::Native, f, &run.paths, &Cache::Off, addr)?;
        let (server, _) = Server::start(cmd, addr, &f.probe(), &format!("k{k}-process-{i}"))
            .map_err(|e| MeasureError::skipped(&e))?;
        held.push(
            http::send(server.addr, &request, Duration::from_secs(10))
                .map_err(|e| MeasureError::Skipped(format!("held request {i}: {e:#}")))?,
        );
        servers.push(server);
    }
    settle(0);
    let mut total = Memory::default();
    for server in &servers {
        let m = procfs::memory(server.pid()).map_err(|e| MeasureError::skipped(&e))?;
        total.rss_bytes += m.rss_bytes;
        total.pss_bytes += m.pss_bytes;
    }
    let (waiting, got) = answered_early(held);
    let in_flight = waiting.len();
    if in_flight < k {
        return Err(MeasureError::Skipped(format!(
            "{} of {k} held requests were answered or closed before the reading: {got:?}",
            k - in_flight
        )));
    }
    Ok(Held::All {
        per_instance: Memory {
            rss_bytes: total.rss_bytes / k as u64,
            pss_bytes: total.pss_bytes / k as u64,
        },
        pss_parts: None,
        rss_parts: None,
    })
}

fn record_per_instance(
    run: &mut Run,
    function: &str,
    host: &str,
    k: usize,
    result: Result<Held, MeasureError>,
) {
    let metric =
        |name, unit, better| Metric::new(MEASUREMENT, function, host, name, unit, better).k(k);
    let per_instance = |name| metric(name, "bytes", Better::Lower);
    let held = metric("live_requests_held", "count", Better::Higher);
    let metrics = match result {
        Ok(Held::All {
            per_instance: mem,
            pss_parts,
            rss_parts,
        }) => {
            let with = |m: Metric, parts: Option<Vec<Counted>>| match parts {
                Some(parts) => m.processes(parts),
                None => m,
            };
            vec![
                with(
                    per_instance("pss_per_instance").value(mem.pss_bytes as f64),
                    pss_parts,
                ),
                with(
                    per_instance("rss_per_instance").value(mem.rss_bytes as f64),
                    rss_parts,
                ),
                held.value(k as f64),
            ]
        }
        Ok(Held::Limit {
            held: n,
            clients_saw,
        }) => {
            let why = format!(
                "held {n} of {k} requests at once (the rest: {}); the host kept serving",
                crate::report::describe_outcomes(&clients_saw)
            );
            vec![
                per_instance("pss_per_instance").limit(why.clone()),
                per_instance("rss_per_instance").limit(why.clone()),
                held.value(n as f64).limit(why).clients_saw(clients_saw),
            ]
        }
        Err(error) => {
            let why = error.reason();
            vec![
                per_instance("pss_per_instance").skipped(why.clone()),
                per_instance("rss_per_instance").skipped(why.clone()),
                held.skipped(why),
            ]
        }
    };
    for m in metrics {
        run.record(m);
    }
}
