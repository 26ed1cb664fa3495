//! Density: N pods of one app started through CRI on one node, one after the
//! other as a scale-up would, for N growing through the counts asked for, and at
//! each count what the pods cost the node: the PSS of every process they added
//! (shims included) and the memory charged to their cgroups, per pod; the start
//! latency (`RunPodSandbox` to the first `200` at the pod's IP) of the pods started
//! to reach that count; the CPU they use while idle; and whether every pod answers.

use crate::measure;
use crate::{Node, Pod, PodSpec};
use anyhow::{Context, Result};
use serde::Serialize;
use std::time::{Duration, Instant};

/// One kind of pod measured: how to make its `i`th pod.
pub struct Subject {
    /// Its name in the report (`spinbench`, `runc`).
    pub name: String,
    /// What it is, in a line.
    pub label: String,
    pub pod: Box<dyn Fn(usize) -> PodSpec>,
}

/// How far and how carefully to go.
pub struct Options {
    pub counts: Vec<usize>,
    /// Wait after the last start before measuring (the pods settle: background
    /// pool setup, lazy allocations).
    pub settle: Duration,
    /// The window idle CPU is read over.
    pub idle_window: Duration,
    /// Stop starting pods when the machine has less memory available than this
    /// (KiB): the run says where it stopped.
    pub min_available_kib: u64,
}

/// The figures at one count.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub pods: usize,
    pub pss_kib_per_pod: f64,
    pub cgroup_kib_per_pod: Option<f64>,
    pub processes_per_pod: f64,
    pub shim_processes: usize,
    /// Of the pods started to reach this count.
    pub start_p50_ms: f64,
    pub start_p99_ms: f64,
    pub idle_millicores_per_pod: f64,
    pub answered: usize,
    pub containerd_pss_kib: u64,
    pub available_kib: u64,
    /// PSS per pod (KiB) by role: program name and depth below its shim.
    pub pss_kib_per_pod_by_role: std::collections::BTreeMap<String, f64>,
}

/// A subject's run.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    pub name: String,
    pub label: String,
    pub steps: Vec<Step>,
    /// Every start, in order (ms).
    pub starts_ms: Vec<f64>,
    /// Why it stopped short of the last count, if it did.
    pub stopped: Option<String>,
    /// Seconds to stop and remove every pod.
    pub teardown_s: f64,
}

/// Runs `subject` on `node` up to each count in turn; removes its pods at the end.
pub fn run(node: &Node, subject: &Subject, options: &Options) -> Result<Run> {
    let mut pods: Vec<Pod> = Vec::new();
    let mut starts_ms = Vec::new();
    let mut steps = Vec::new();
    let mut stopped = None;
    'counts: for &count in &options.counts {
        let first = pods.len();
        while pods.len() < count {
            let available = measure::available_kib();
            if available < options.min_available_kib {
                stopped = Some(format!(
                    "stopped at {} pods: {} MiB available, under the {} MiB floor",
                    pods.len(),
                    available >> 10,
                    options.min_available_kib >> 10
                ));
                break 'counts;
            }
            let spec = (subject.pod)(pods.len());
            let start = Instant::now();
            let pod = node.run_pod(&spec)?;
            if let Some(error) = &pod.start_error {
                anyhow::bail!("{}: pod {}: {error}", subject.name, pod.name);
            }
            node.wait_for_200(&pod.url(80, "/hello"), Duration::from_mins(1))
                .with_context(|| {
                    let log = std::fs::read_to_string(pod.log_path()).unwrap_or_default();
                    format!(
                        "{}: pod {}; its log:\n{log}\ncontainerd's:\n{}",
                        subject.name,
                        pod.name,
                        node.log_tail("containerd.log", 20)
                    )
                })?;
            starts_ms.push(start.elapsed().as_secs_f64() * 1e3);
            pods.push(pod);
            if pods.len().is_multiple_of(50) {
                eprintln!("{}: {} pods", subject.name, pods.len());
            }
        }
        std::thread::sleep(options.settle);
        steps.push(step(node, &pods, &starts_ms[first..], options));
        eprintln!("{}: {:?}", subject.name, steps.last());
    }
    let start = Instant::now();
    for pod in &pods {
        pod.stop(node.cri(), 30)?;
        pod.remove(node.cri())?;
    }
    Ok(Run {
        name: subject.name.clone(),
        label: subject.label.clone(),
        steps,
        starts_ms,
        stopped,
        teardown_s: start.elapsed().as_secs_f64(),
    })
}

fn step(node: &Node, pods: &[Pod], starts_ms: &[f64], options: &Options) -> Step {
    let n = pods.len().max(1) as f64;
    let socket = node.socket().display().to_string();
    let pids = measure::pod_processes(&socket);
    let table = crate::procs::all();
    let pss = measure::pss_kib(&pids);
    let by_role = measure::pss_by_role(&pids, &table)
        .into_iter()
        .map(|(role, kib)| (role, kib as f64 / n))
        .collect();
    let ticks_before = measure::cpu_ticks(&pids);
    let window = Instant::now();
    std::thread::sleep(options.idle_window);
    let ticks = measure::cpu_ticks(&pids).saturating_sub(ticks_before);
    let cpu_s = ticks as f64 / measure::TICKS_PER_S as f64;
    let millicores = cpu_s / window.elapsed().as_secs_f64() * 1e3;
    let answered = pods
        .iter()
        .filter(|pod| {
            node.get(&pod.url(80, "/hello"))
                .is_ok_and(|(status, _)| status == 200)
        })
        .count();
    let containerd = table
        .iter()
        .filter(|p| p.argv.first().is_some_and(|a| a.ends_with("containerd")))
        .filter(|p| {
            p.argv
                .iter()
                .any(|a| a.contains(&*node.dir().to_string_lossy()))
        })
        .map(|p| measure::rollup_field(p.pid, "Pss:"))
        .sum();
    Step {
        pods: pods.len(),
        pss_kib_per_pod: pss as f64 / n,
        cgroup_kib_per_pod: measure::cgroup_memory_kib(node.cgroup_root()).map(|k| k as f64 / n),
        processes_per_pod: pids.len() as f64 / n,
        shim_processes: measure::shims_among(&pids, &table),
        start_p50_ms: percentile(starts_ms, 50.0),
        start_p99_ms: percentile(starts_ms, 99.0),
        idle_millicores_per_pod: millicores / n,
        answered,
        containerd_pss_kib: containerd,
        available_kib: measure::available_kib(),
        pss_kib_per_pod_by_role: by_role,
    }
}

/// The `p`th percentile of `values` (nearest rank); 0 for none.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 50.0), 50.0);
        assert_eq!(percentile(&values, 99.0), 99.0);
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 50.0), 2.0);
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }
}
