//! SVG charts of a report (plotters, SVG backend only): the instance cold-start
//! distributions, memory per instance against K, and each host's throughput,
//! server CPU per request and latency relative to native.

use super::{Metric, Report};
use crate::model::Measurement;
use anyhow::{Result, anyhow};
use plotters::prelude::*;

/// One chart: its file beside the report, its title, and its SVG (also
/// inlined into report.html).
pub struct Chart {
    pub file: String,
    pub title: String,
    pub svg: String,
}

const SIZE: (u32, u32) = (900, 520);
const PALETTE: [RGBColor; 7] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
];

/// Every chart the report has figures for: each function's instance cold
/// start, memory per instance against K, and the load figures relative to native.
pub fn all(report: &Report) -> Result<Vec<Chart>> {
    let mut charts = Vec::new();
    for function in &report.plan.functions {
        let series: Vec<&Metric> = report
            .metrics_of(Measurement::InstanceColdStart)
            .filter(|m| m.function == *function && m.metric == "total" && m.samples.len() > 1)
            .collect();
        if !series.is_empty() {
            let title = format!("{function}: instance cold start (total, µs, log)");
            charts.push(Chart {
                file: format!("cold-start-{function}.svg"),
                svg: distribution(&title, &series)?,
                title,
            });
        }
    }
    let per_k: Vec<&Metric> = report
        .metrics_of(Measurement::Memory)
        .filter(|m| m.metric == "pss_per_instance" && m.k.is_some())
        .collect();
    if !per_k.is_empty() {
        charts.push(Chart {
            file: "memory-per-instance.svg".into(),
            title: MEMORY_TITLE.into(),
            svg: memory_vs_k(&per_k)?,
        });
    }
    for (metric, file, title) in [
        (
            "throughput",
            "load-throughput.svg",
            "load: throughput relative to native (higher is better)",
        ),
        (
            "server_cpu_per_request",
            "load-cpu-per-request.svg",
            "load: server CPU per request relative to native (lower is better)",
        ),
        (
            "latency_p99",
            "load-latency-p99.svg",
            "load: p99 latency relative to native (lower is better)",
        ),
    ] {
        let rows: Vec<&Metric> = report
            .metrics_of(Measurement::Load)
            .filter(|m| m.metric == metric)
            .collect();
        if rows.iter().any(|m| m.summary.is_some()) {
            charts.push(Chart {
                file: file.into(),
                title: title.into(),
                svg: relative_bars(title, &report.plan.functions, &rows)?,
            });
        }
    }
    Ok(charts)
}

const MEMORY_TITLE: &str = "memory per live instance (PSS growth / K, KiB, log-log)";

fn plot_err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing chart: {e:?}")
}

/// Quantile curves: x is the percentile, y the sample value on a log axis.
fn distribution(title: &str, series: &[&Metric]) -> Result<String> {
    let all = series
        .iter()
        .flat_map(|m| m.samples.iter().copied())
        .filter(|v| *v > 0.0);
    let (lo, hi) = all.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let mut svg = String::new();
    let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..100f64, (lo * 0.9..hi * 1.1).log_scale())
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("percentile")
        .y_desc("µs")
        .draw()
        .map_err(plot_err)?;
    for (i, m) in series.iter().enumerate() {
        let mut sorted: Vec<f64> = m.samples.iter().copied().filter(|v| *v > 0.0).collect();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len().max(2) - 1;
        let points = sorted
            .iter()
            .enumerate()
            .map(|(j, v)| (j as f64 * 100.0 / n as f64, *v));
        let color = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(plot_err)?
            .label(m.host.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    legend(&mut chart)?;
    root.present().map_err(plot_err)?;
    drop(chart);
    drop(root);
    Ok(svg)
}

fn legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(plot_err)
}

/// PSS growth per live instance against K, one line per host and function, both axes log.
fn memory_vs_k(metrics: &[&Metric]) -> Result<String> {
    let ks: Vec<f64> = metrics
        .iter()
        .filter_map(|m| m.k)
        .map(|k| k as f64)
        .collect();
    let values: Vec<f64> = metrics
        .iter()
        .filter_map(|m| m.p50())
        .filter(|v| *v > 0.0)
        .map(|v| v / 1024.0)
        .collect();
    let kmax = ks.iter().copied().fold(1.0, f64::max);
    let (lo, hi) = values
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    let (lo, hi) = if values.is_empty() {
        (1.0, 10.0)
    } else {
        (lo, hi)
    };
    let mut svg = String::new();
    let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(MEMORY_TITLE, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (0.8..kmax * 1.25).log_scale(),
            (lo * 0.8..hi * 1.25).log_scale(),
        )
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("K (concurrently live instances)")
        .y_desc("KiB per instance")
        .draw()
        .map_err(plot_err)?;
    let mut keys: Vec<(String, String)> = metrics
        .iter()
        .map(|m| (m.function.clone(), m.host.clone()))
        .collect();
    keys.sort();
    keys.dedup();
    for (i, (function, host)) in keys.iter().enumerate() {
        let mut points: Vec<(f64, f64)> = metrics
            .iter()
            .filter(|m| &m.function == function && &m.host == host)
            .filter_map(|m| Some((m.k? as f64, m.p50()? / 1024.0)))
            .filter(|(_, v)| *v > 0.0)
            .collect();
        if points.is_empty() {
            continue;
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let color = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(plot_err)?
            .label(format!("{function} {host}"))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    legend(&mut chart)?;
    root.present().map_err(plot_err)?;
    drop(chart);
    drop(root);
    Ok(svg)
}

/// Grouped bars: per function, each host's median over native's.
fn relative_bars(title: &str, functions: &[String], metrics: &[&Metric]) -> Result<String> {
    let mut all_hosts: Vec<&str> = metrics
        .iter()
        .map(|m| m.host.as_str())
        .filter(|h| *h != "native")
        .collect();
    all_hosts.sort_unstable();
    all_hosts.dedup();
    let hosts = &all_hosts;
    let mut bars = Vec::new(); // (function index, host index, ratio)
    for (fi, f) in functions.iter().enumerate() {
        let of = |h: &str| {
            metrics
                .iter()
                .find(|m| m.function == *f && m.host == h && m.detail.is_some())
                .and_then(|m| m.p50())
        };
        let Some(native) = of("native") else { continue };
        for (hi, h) in hosts.iter().enumerate() {
            if let Some(r) = of(h).and_then(|v| crate::stats::ratio(v, native)) {
                bars.push((fi, hi, r));
            }
        }
    }
    let top = bars.iter().map(|b| b.2).fold(1.2, f64::max) * 1.1;
    let mut svg = String::new();
    let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5f64..functions.len() as f64 - 0.5, 0f64..top)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(functions.len().max(1))
        .x_label_formatter(&|x| {
            functions
                .get(x.round() as usize)
                .filter(|_| (x - x.round()).abs() < 0.01)
                .map_or(String::new(), std::clone::Clone::clone)
        })
        .y_desc("× native")
        .draw()
        .map_err(plot_err)?;
    chart
        .draw_series(LineSeries::new(
            [(-0.5, 1.0), (functions.len() as f64 - 0.5, 1.0)],
            BLACK.stroke_width(1),
        ))
        .map_err(plot_err)?;
    // Only hosts with a figure get a slot and a legend entry (skipped ones have none).
    let hosts: Vec<&str> = hosts
        .iter()
        .enumerate()
        .filter(|(hi, _)| bars.iter().any(|b| b.1 == *hi))
        .map(|(_, h)| *h)
        .collect();
    let bars: Vec<(usize, usize, f64)> = bars
        .iter()
        .filter_map(|&(fi, hi, r)| Some((fi, hosts.iter().position(|h| *h == all_hosts[hi])?, r)))
        .collect();
    let width = 0.8 / hosts.len().max(1) as f64;
    for (hi, host) in hosts.iter().enumerate() {
        let color = PALETTE[hi % PALETTE.len()];
        let rects = bars.iter().filter(|b| b.1 == hi).map(|&(fi, _, r)| {
            let x0 = fi as f64 - 0.4 + hi as f64 * width;
            Rectangle::new([(x0, 0.0), (x0 + width * 0.9, r)], color.filled())
        });
        chart
            .draw_series(rects)
            .map_err(plot_err)?
            .label(host.to_string())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], color.filled()));
    }
    legend(&mut chart)?;
    root.present().map_err(plot_err)?;
    drop(chart);
    drop(root);
    Ok(svg)
}

/// Horizontal bars: each labelled figure's now / baseline ratio (`spinbench
/// diff`), red where it got worse, green where better, with a line at 1.
pub fn ratios(title: &str, bars: &[(String, f64, bool)]) -> Result<String> {
    const WORSE: RGBColor = RGBColor(214, 39, 40);
    const BETTER: RGBColor = RGBColor(44, 160, 44);
    let n = bars.len().max(1);
    let top = bars.iter().map(|b| b.1).fold(1.2, f64::max) * 1.1;
    let height = 110 + 26 * n as u32;
    let mut svg = String::new();
    let root = SVGBackend::with_string(&mut svg, (SIZE.0, height)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(330)
        .build_cartesian_2d(0f64..top, -0.5f64..n as f64 - 0.5)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|y| {
            bars.get(y.round() as usize)
                .filter(|_| (y - y.round()).abs() < 0.01)
                .map_or(String::new(), |b| b.0.chars().take(48).collect())
        })
        .x_desc("now / baseline")
        .draw()
        .map_err(plot_err)?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, (_, ratio, worse))| {
            let color = if *worse { WORSE } else { BETTER };
            let y = i as f64;
            Rectangle::new([(0.0, y - 0.35), (*ratio, y + 0.35)], color.filled())
        }))
        .map_err(plot_err)?;
    chart
        .draw_series(LineSeries::new(
            [(1.0, -0.5), (1.0, n as f64 - 0.5)],
            BLACK.stroke_width(1),
        ))
        .map_err(plot_err)?;
    root.present().map_err(plot_err)?;
    drop(chart);
    drop(root);
    Ok(svg)
}
