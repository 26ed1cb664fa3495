//! Instance cold start, in process and without a network: N fresh instances of a
//! component, each handed the function's canned request through the Host API,
//! with time split into instantiation and handling. Beside it, the native floor:
//! the same logic called as a plain Rust function (`plain`: our functions only),
//! and a fresh native process per request (exec to first response, the CGI model).

use super::estimate;
use super::hosts::{self, Cache, HostKind, Server};
use super::http::Request;
use super::outcome::MeasureError;
use super::progress::Step;
use super::{Function, Plan, Run};
use crate::model::Measurement;
use crate::report::{Better, Metric};
use anyhow::{Context, Result, bail};
use bytes::Bytes;
use spinbench_host::manifest::Manifest;
use spinbench_host::{Host, HostOptions};
use std::time::{Duration, Instant};

const MEASUREMENT: Measurement = Measurement::InstanceColdStart;
/// Untimed instances before each timed series (page faults, caches, branch predictors).
const WARMUP: usize = 20;
/// Fresh processes are ~1000× dearer than instances: fewer samples bound the run.
const MAX_PROCESS_SAMPLES: usize = 100;

/// Fresh native processes timed per function (`--quick`: fewer).
fn process_samples(plan: &Plan) -> usize {
    plan.samples
        .min(if plan.quick { 20 } else { MAX_PROCESS_SAMPLES })
}

/// Per function: the plain-function floor, a process per request, the wasm instances.
pub fn steps(plan: &Plan) -> Vec<Step> {
    plan.functions
        .iter()
        .flat_map(|f| [Floor::Plain, Floor::Process, Floor::Wasm].map(|floor| step(plan, f, floor)))
        .collect()
}

/// What one step of a function times.
#[derive(Clone, Copy)]
enum Floor {
    Plain,
    Process,
    Wasm,
}

fn step(plan: &Plan, f: &Function, floor: Floor) -> Step {
    let (host, planned) = match floor {
        // The native binary's start and its own warm-up; its calls take microseconds.
        Floor::Plain => ("native-fn", estimate::NATIVE_START * 10),
        Floor::Process => (
            "native-process",
            estimate::NATIVE_START * (2 + process_samples(plan)) as u32,
        ),
        // wasm's fresh instances, and wasm-p3's reused ones beside them.
        Floor::Wasm => (
            "wasm",
            (estimate::cache_load(f) + estimate::instance(f) * (WARMUP + plan.samples) as u32) * 2,
        ),
    };
    Step::new(MEASUREMENT, &f.name, host, planned)
}

pub fn measure(run: &mut Run, runtime: &tokio::runtime::Runtime) {
    let functions = run.plan.functions.clone();
    for f in functions {
        run.progress.begin(&step(&run.plan, &f, Floor::Plain));
        let metric = Metric::new(
            MEASUREMENT,
            &f.name,
            "native-fn",
            "total",
            "us",
            Better::Lower,
        );
        let floor = super::plain::time_calls(
            &run.paths,
            &f,
            &f.probe(),
            f.spec.probe_status,
            run.plan.samples,
        );
        run.record(match floor {
            Ok(samples) => metric.samples(samples),
            Err(why) => metric.skipped(MeasureError::from(why).reason()),
        });

        run.progress.begin(&step(&run.plan, &f, Floor::Process));
        let metric = Metric::new(
            MEASUREMENT,
            &f.name,
            "native-process",
            "total",
            "us",
            Better::Lower,
        );
        let n = process_samples(&run.plan);
        run.record(match process_per_request(run, &f, n) {
            Ok(samples) => metric.samples(samples),
            Err(error) => metric.skipped(error.reason()),
        });

        run.progress.begin(&step(&run.plan, &f, Floor::Wasm));
        for metric in wasm_instances(run, runtime, &f) {
            run.record(metric);
        }
    }
    run.progress.end(MEASUREMENT);
}

fn wasm_instances(run: &Run, runtime: &tokio::runtime::Runtime, f: &Function) -> Vec<Metric> {
    let metric = |name| Metric::new(MEASUREMENT, &f.name, "wasm", name, "us", Better::Lower);
    let mut metrics = if run.plan.has_host(HostKind::Wasm) {
        match runtime.block_on(time_instances(run, f, false)) {
            Ok([total, instantiate, handle]) => vec![
                metric("total").samples(total),
                metric("instantiate").samples(instantiate),
                metric("handle").samples(handle),
            ],
            Err(e) => vec![metric("total").skipped(MeasureError::skipped(&e).reason())],
        }
    } else {
        vec![metric("total").skipped("host wasm not selected")]
    };
    // WASIp3 reuse: a request on an already live instance (a new one every 128
    // requests), so this is the warm figure beside wasm's cold one.
    if run.plan.has_host(HostKind::WasmP3) {
        let metric = Metric::new(
            MEASUREMENT,
            &f.name,
            "wasm-p3",
            "total",
            "us",
            Better::Lower,
        );
        metrics.push(match runtime.block_on(time_instances(run, f, true)) {
            Ok([total, _, _]) => metric.samples(total),
            Err(e) => metric.skipped(MeasureError::skipped(&e).reason()),
        });
    }
    metrics
}

/// [total, instantiate, handle] in µs for `samples` fresh instances (or, `p3`,
/// requests on reused WASIp3 instances).
async fn time_instances(run: &Run, f: &Function, p3: bool) -> Result<[Vec<f64>; 3]> {
    let host = in_process_host(run, f, p3)?;
    let probe = f.probe();
    let n = run.plan.samples;
    let mut out = [
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    ];
    for i in 0..WARMUP + n {
        let request = http_request(&probe)?;
        let started = Instant::now();
        let response = host.handle_timed(&f.name, request).await?;
        let total = started.elapsed();
        if response.status != f.spec.probe_status {
            bail!(
                "canned request answered {}: {}",
                response.status,
                String::from_utf8_lossy(&response.body)
            );
        }
        if i >= WARMUP {
            for (series, d) in out
                .iter_mut()
                .zip([total, response.instantiate, response.handle])
            {
                series.push(d.as_secs_f64() * 1e6);
            }
        }
    }
    Ok(out)
}

/// `f`'s component (its WASIp3 build if `p3`) loaded into an in-process [`Host`],
/// with compiled code from the run's cache.
pub fn in_process_host(run: &Run, f: &Function, p3: bool) -> Result<Host> {
    let manifest = if p3 {
        run.paths.p3_function_manifest(f)?
    } else {
        run.paths.function_manifest(f)?
    };
    let manifest = Manifest::load(&manifest)?;
    let mut options = HostOptions {
        cache_dir: Some(run.paths.cache_dir()),
        runtime_config_file: run.paths.runtime_config.clone(),
        ..HostOptions::default()
    };
    run.paths.limits.apply(&mut options)?;
    Host::new(&manifest, &options).context("loading the component")
}

pub fn http_request(probe: &Request) -> Result<http::Request<Bytes>> {
    let mut builder = http::Request::builder()
        .method(probe.method.as_str())
        .uri(format!("http://localhost{}", probe.target))
        .header("host", "localhost");
    for (name, value) in &probe.headers {
        builder = builder.header(name, value);
    }
    Ok(builder
        .header("content-length", probe.body.len())
        .body(Bytes::from(probe.body.clone()))?)
}

/// A fresh `<name>-native` per request: exec, first 200, kill.
fn process_per_request(run: &Run, f: &Function, samples: usize) -> Result<Vec<f64>, MeasureError> {
    let mut out = Vec::with_capacity(samples);
    // Two untimed starts warm the page cache for the binary.
    for i in 0..2 + samples {
        // Held until the host listens (Server::start waits for it).
        let lease = hosts::free_addr().map_err(|e| MeasureError::Skipped(e.to_string()))?;
        let addr = lease.addr();
        let cmd = hosts::command(HostKind::Native, f, &run.paths, &Cache::Off, addr)?;
        let (server, took): (Server, Duration) =
            Server::start(cmd, addr, &f.probe(), &format!("cgi-{}", f.name))
                .map_err(|e| MeasureError::skipped(&e))?;
        drop(server);
        if i >= 2 {
            out.push(took.as_secs_f64() * 1e6);
        }
    }
    Ok(out)
}
