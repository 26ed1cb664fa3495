//! wrk's check of oha's figures on the same warm server (`wrk`: how it is run
//! and read), in two halves, one just before oha's timed run and one just after
//! it, read as one run: on a machine whose speed drifts, both generators' figures
//! then cover the same stretch of time.

use super::figures::{cpu_per_request, metric};
use super::{CpuMark, Target};
use crate::compare::wrk;
use crate::compare::{Function, Paths, Plan, hosts::Server, scenarios::Scenario};
use crate::report::{Better, Metric};
use anyhow::Result;
use std::path::Path;

/// What one of wrk's two runs read, and what the server's tree and wrk spent meanwhile.
pub(super) struct WrkRun {
    summary: wrk::WrkSummary,
    /// The server tree's CPU and its kernel share, in seconds.
    server_seconds: f64,
    kernel_seconds: f64,
    /// wrk's CPU, in seconds, over `wall` seconds.
    client_seconds: f64,
    wall: f64,
}

impl WrkRun {
    /// The two halves read as one run: everything summed.
    pub(super) fn and(&self, other: &WrkRun) -> WrkRun {
        WrkRun {
            summary: self.summary.and(&other.summary),
            server_seconds: self.server_seconds + other.server_seconds,
            kernel_seconds: self.kernel_seconds + other.kernel_seconds,
            client_seconds: self.client_seconds + other.client_seconds,
            wall: self.wall + other.wall,
        }
    }
}

/// Whether wrk checks this scenario: not one read in steady state (wrk's count
/// over its whole run includes the ramp-up, which oha's steady-state window
/// leaves out), nor without wrk (the report says the check was skipped, once).
/// `--quick` checks the plan's first function only: wrk runs whole seconds,
/// longer than a quick load, and one function per host shows it runs.
pub(super) fn wrk_checks(plan: &Plan, f: &Function, scenario: &Scenario) -> bool {
    let checked = !plan.quick
        || plan
            .functions
            .first()
            .is_some_and(|first| first.name == f.name);
    checked && scenario.ramp_up.is_none() && wrk::find().is_ok()
}

/// One half of wrk's check on the (warm) server: half of its time, just before
/// oha's timed run or just after it, so that the two generators' figures cover
/// the same stretch of a machine whose speed drifts.
pub(super) fn wrk_run(
    server: &Server,
    t: &Target,
    plan: &Plan,
    paths: &Paths,
    body: Option<&Path>,
) -> Result<WrkRun> {
    let pid = server.pid();
    let mark = CpuMark::now(pid)?;
    let summary = wrk::run(
        &format!("http://{}", server.addr),
        t.scenario,
        wrk::half_duration(plan.load_duration),
        body,
        &paths.work.join(format!("{}.wrk.lua", t.f.name)),
        plan.pinning.generator(),
        plan.pinning.generator_cores(),
    )?;
    let spent = mark.spent(pid)?;
    Ok(WrkRun {
        summary,
        server_seconds: spent.server_seconds,
        kernel_seconds: spent.kernel_seconds,
        client_seconds: spent.generator_seconds,
        wall: spent.wall,
    })
}

/// wrk's check of oha's rate from its two halves: wrk's rate, the server's CPU
/// per request under wrk, and wrk's own CPU (`Report::finish` warns where the
/// rates differ). A failed check is skipped with why; it never costs the host
/// its oha figures.
pub(super) fn wrk_metrics(t: &Target, runs: Result<WrkRun>) -> Vec<Metric> {
    let scenario = t.scenario;
    let m = |name, unit, better| metric(&t.f.name, t.host, scenario, name, unit, better);
    let unit = if scenario.mb_per_request.is_some() {
        "MB/s"
    } else {
        "req/s"
    };
    let run = match runs {
        Ok(run) => run,
        Err(e) => {
            return vec![
                m("throughput_wrk", unit, Better::Higher).skipped(format!("the wrk check: {e:#}")),
            ];
        }
    };
    let summary = &run.summary;
    let rate = summary.ok_rate() * scenario.mb_per_request.unwrap_or(1.0);
    let mut throughput = m("throughput_wrk", unit, Better::Higher).value(rate);
    if summary.errors() > 0 {
        throughput = throughput.limit(format!(
            "wrk saw {} answers of 400 or above and {} socket errors",
            summary.bad_status, summary.socket_errors
        ));
    }
    vec![
        throughput,
        cpu_per_request(
            m("server_cpu_per_request_wrk", "us", Better::Lower),
            run.server_seconds,
            summary.requests,
        ),
        cpu_per_request(
            m("server_kernel_cpu_per_request_wrk", "us", Better::Lower),
            run.kernel_seconds,
            summary.requests,
        ),
        m("client_cpu_wrk", "cores", Better::Lower).value(run.client_seconds / run.wall),
    ]
}
