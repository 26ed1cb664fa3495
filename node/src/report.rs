//! The density run written out: density.json (every figure), density.md (the
//! table and ratios) and density.svg (memory per pod and start latency against
//! the number of pods, one line per subject; plotters, SVG backend only).

use crate::density::{Run, Step};
use anyhow::{Result, anyhow};
use plotters::prelude::*;
use serde::Serialize;
use std::path::Path;

const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// The whole run: what ran it and each subject's figures.
#[derive(Debug, Serialize)]
pub struct Density {
    pub versions: Vec<String>,
    pub runs: Vec<Run>,
}

pub fn write(density: &Density, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(
        dir.join("density.json"),
        serde_json::to_string_pretty(density)? + "\n",
    )?;
    std::fs::write(dir.join("density.md"), markdown(density))?;
    chart(&density.runs, &dir.join("density.svg"))
}

fn mib(kib: f64) -> String {
    format!("{:.1}", kib / 1024.0)
}

pub fn markdown(density: &Density) -> String {
    let mut md = String::from("# Pods per node through CRI (spinbench-node density)\n\n");
    md.push_str(
        "| subject | pods | PSS per pod (MiB) | cgroup per pod (MiB) | processes per pod | start p50 (ms) | start p99 (ms) | idle CPU per pod (millicores) | answering |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for run in &density.runs {
        for s in &run.steps {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {:.1} | {:.0} | {:.0} | {:.2} | {}/{} |\n",
                run.name,
                s.pods,
                mib(s.pss_kib_per_pod),
                s.cgroup_kib_per_pod.map_or("-".into(), mib),
                s.processes_per_pod,
                s.start_p50_ms,
                s.start_p99_ms,
                s.idle_millicores_per_pod,
                s.answered,
                s.pods
            ));
        }
    }
    if let Some(base) = density.runs.iter().find(|r| r.name == "runc") {
        md.push_str("\nPSS per pod against runc's at the same count:\n\n");
        for run in density.runs.iter().filter(|r| r.name != "runc") {
            let ratios: Vec<String> = run
                .steps
                .iter()
                .filter_map(|s| {
                    let b: &Step = base.steps.iter().find(|b| b.pods == s.pods)?;
                    Some(format!(
                        "{} pods {:.2}×",
                        s.pods,
                        s.pss_kib_per_pod / b.pss_kib_per_pod
                    ))
                })
                .collect();
            md.push_str(&format!("- {}: {}\n", run.name, ratios.join(", ")));
        }
    }
    md.push_str(
        "\nPSS per pod by process (program/depth below its shim), at the largest count:\n\n",
    );
    for run in &density.runs {
        if let Some(last) = run.steps.last() {
            let roles: Vec<String> = last
                .pss_kib_per_pod_by_role
                .iter()
                .map(|(role, kib)| format!("`{role}` {} MiB", mib(*kib)))
                .collect();
            md.push_str(&format!(
                "- {} ({} pods): {}\n",
                run.name,
                last.pods,
                roles.join(", ")
            ));
        }
    }
    md.push('\n');
    for run in &density.runs {
        md.push_str(&format!(
            "- **{}**: {}; every pod stopped and removed in {:.1} s{}\n",
            run.name,
            run.label,
            run.teardown_s,
            run.stopped
                .as_ref()
                .map_or(String::new(), |why| format!("; {why}"))
        ));
    }
    md.push_str(&format!("\nVersions: {}.\n", density.versions.join("; ")));
    md
}

fn plot_err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing the density chart: {e:?}")
}

/// Two panels: PSS per pod against pods, and start p50/p99 against pods.
fn chart(runs: &[Run], path: &Path) -> Result<()> {
    let root = SVGBackend::new(path, (1100, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let (left, right) = root.split_horizontally(550);
    let max_pods = runs
        .iter()
        .flat_map(|r| r.steps.iter().map(|s| s.pods))
        .max()
        .unwrap_or(1) as f64;
    let max_mib = runs
        .iter()
        .flat_map(|r| r.steps.iter().map(|s| s.pss_kib_per_pod / 1024.0))
        .fold(1.0, f64::max);
    let max_ms = runs
        .iter()
        .flat_map(|r| r.steps.iter().map(|s| s.start_p99_ms))
        .fold(1.0, f64::max);
    panel(&left, "PSS per pod (MiB)", max_pods, max_mib, runs, |s| {
        vec![s.pss_kib_per_pod / 1024.0]
    })?;
    panel(
        &right,
        "start to first 200 (ms): p50 thick, p99 thin",
        max_pods,
        max_ms,
        runs,
        |s| vec![s.start_p50_ms, s.start_p99_ms],
    )?;
    root.present().map_err(plot_err)
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    max_x: f64,
    max_y: f64,
    runs: &[Run],
    values: impl Fn(&Step) -> Vec<f64>,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(0f64..max_x * 1.05, 0f64..max_y * 1.15)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("pods on the node")
        .draw()
        .map_err(plot_err)?;
    for (i, run) in runs.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let lines = run.steps.first().map_or(0, |s| values(s).len());
        for line in 0..lines {
            let points: Vec<(f64, f64)> = run
                .steps
                .iter()
                .map(|s| (s.pods as f64, values(s)[line]))
                .collect();
            let style = color.stroke_width(if line == 0 { 2 } else { 1 });
            chart
                .draw_series(points.iter().map(|p| Circle::new(*p, 3, color.filled())))
                .map_err(plot_err)?;
            let series = chart
                .draw_series(LineSeries::new(points, style))
                .map_err(plot_err)?;
            if line == 0 {
                series.label(run.name.clone()).legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2))
                });
            }
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(plot_err)
}
