//! The report as tables: one per measurement, a row per function and metric, a
//! column per host (median ± MAD), and the ratio of wasm to native, like
//! hyperfine's summary. Rendered aligned for the terminal or as Markdown.

use super::{Metric, Report, is_baseline};
use crate::compare::MEASUREMENTS;
use crate::stats;

struct Table {
    title: String,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    notes: Vec<String>,
}

pub fn terminal(report: &Report) -> String {
    let mut out = String::new();
    for t in tables(report) {
        out.push_str(&format!("\n{}\n", t.title));
        let widths: Vec<usize> = (0..t.header.len())
            .map(|i| {
                t.rows
                    .iter()
                    .chain([&t.header])
                    .map(|r| r[i].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for (n, row) in [&t.header].into_iter().chain(&t.rows).enumerate() {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(i, (c, w))| pad(c, *w, i < 2))
                .collect();
            out.push_str(&format!("  {}\n", cells.join("  ").trim_end()));
            if n == 0 {
                out.push_str(&format!(
                    "  {}\n",
                    widths
                        .iter()
                        .map(|w| "-".repeat(*w))
                        .collect::<Vec<_>>()
                        .join("  ")
                ));
            }
        }
        for note in &t.notes {
            out.push_str(&format!("  note: {note}\n"));
        }
    }
    if !report.warnings.is_empty() {
        out.push_str("\nwarnings:\n");
        for w in &report.warnings {
            out.push_str(&format!("  ! {w}\n"));
        }
    }
    out
}

fn pad(cell: &str, width: usize, left: bool) -> String {
    let fill = " ".repeat(width.saturating_sub(cell.chars().count()));
    if left {
        format!("{cell}{fill}")
    } else {
        format!("{fill}{cell}")
    }
}

pub fn markdown(report: &Report) -> String {
    let m = &report.machine;
    let mut out = format!(
        "# spinbench compare, {}\n\n{} ({} cores, SHA instructions: {}), Linux {}, {:.0} GiB RAM. Run took {:.0} s.\n\nCommand: `{}`\n\n\
         Cells are median ± MAD; the last column is wasm's median over the native baseline's (the native server; for instance cold start, a native process per request).\n",
        report.started_at,
        m.cpu_model,
        m.cores,
        if m.sha_instructions { "yes" } else { "no" },
        m.kernel,
        m.memory_total_bytes as f64 / (1u64 << 30) as f64,
        report.duration_s,
        report.command.join(" "),
    );
    for t in tables(report) {
        out.push_str(&format!(
            "\n## {}\n\n| {} |\n|{}\n",
            t.title,
            t.header.join(" | "),
            t.header
                .iter()
                .enumerate()
                .map(|(i, _)| if i < 2 { "---|" } else { "---:|" })
                .collect::<String>()
        ));
        for row in &t.rows {
            out.push_str(&format!("| {} |\n", row.join(" | ")));
        }
        for note in &t.notes {
            out.push_str(&format!("\n- {note}"));
        }
        out.push('\n');
    }
    if !report.warnings.is_empty() {
        out.push_str("\n## Warnings\n\n");
        for w in &report.warnings {
            out.push_str(&format!("- {w}\n"));
        }
    }
    out
}

fn tables(report: &Report) -> Vec<Table> {
    MEASUREMENTS
        .iter()
        .filter_map(|m| table(report, m))
        .collect()
}

fn table(report: &Report, measurement: &str) -> Option<Table> {
    let metrics: Vec<&Metric> = report.metrics_of(measurement).collect();
    if metrics.is_empty() {
        return None;
    }
    let mut hosts: Vec<&str> = Vec::new();
    for m in &metrics {
        if !hosts.contains(&m.host.as_str()) {
            hosts.push(&m.host);
        }
    }
    // Native baselines first, then wasm, then the other runtimes.
    hosts.sort_by_key(|h| (!is_baseline(h), *h != "wasm"));
    let mut header = vec!["function".to_string(), "metric".to_string()];
    header.extend(hosts.iter().map(|h| h.to_string()));
    // The ratio's baseline: the native server, or for in-process cold start
    // (which has none) the process-per-request model.
    let baseline = if hosts.contains(&"native") {
        "native"
    } else {
        "native-process"
    };
    let with_ratio = hosts.contains(&"wasm") && hosts.contains(&baseline);
    if with_ratio {
        header.push(format!("wasm/{baseline}"));
    }

    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut done: Vec<&Metric> = Vec::new();
    for m in &metrics {
        if done.iter().any(|d| d.same_row(m)) {
            continue;
        }
        done.push(m);
        if let Some(d) = &m.detail {
            let note = format!("{}: {d}", m.function);
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
        let row_metrics: Vec<&Metric> = metrics.iter().copied().filter(|o| o.same_row(m)).collect();
        let find = |h: &str| row_metrics.iter().copied().find(|o| o.host == h);
        let mut row = vec![m.function.clone(), row_label(m)];
        for h in &hosts {
            row.push(match find(h) {
                Some(o) => match (&o.summary, &o.skipped) {
                    (Some(s), _) if s.n > 1 => {
                        format!("{} ± {}", fmt(s.p50, o.unit), fmt(s.mad, o.unit))
                    }
                    (Some(s), _) => fmt(s.p50, o.unit),
                    (None, Some(why)) => {
                        let note = format!("{h}: {why}");
                        if !notes.contains(&note) {
                            notes.push(note);
                        }
                        "skipped".into()
                    }
                    (None, None) => "-".into(),
                },
                None => "".into(),
            });
        }
        if with_ratio {
            row.push(ratio_cell(find("wasm"), find(baseline)));
        }
        rows.push(row);
    }
    Some(Table {
        title: measurement.replace('_', " "),
        header,
        rows,
        notes,
    })
}

fn row_label(m: &Metric) -> String {
    let mut label = format!("{} ({})", m.metric, m.unit);
    if let Some(k) = m.k {
        label.push_str(&format!(" K={k}"));
    }
    label
}

fn ratio_cell(wasm: Option<&Metric>, native: Option<&Metric>) -> String {
    let (Some(w), Some(n)) = (wasm.and_then(Metric::p50), native.and_then(Metric::p50)) else {
        return "".into();
    };
    stats::ratio(w, n).map_or("".into(), |r| format!("{r:.2}x"))
}

/// A value in its unit, scaled for reading.
pub fn fmt(value: f64, unit: &str) -> String {
    match unit {
        "us" if value >= 1e6 => format!("{:.2} s", value / 1e6),
        "us" if value >= 1e3 => format!("{:.2} ms", value / 1e3),
        "us" => format!("{value:.1} µs"),
        "ms" if value >= 1e3 => format!("{:.2} s", value / 1e3),
        "ms" => format!("{value:.2} ms"),
        "bytes" if value.abs() >= (1 << 20) as f64 => {
            format!("{:.1} MiB", value / (1 << 20) as f64)
        }
        "bytes" if value.abs() >= 1024.0 => format!("{:.1} KiB", value / 1024.0),
        "bytes" => format!("{value:.0} B"),
        "count" => format!("{value:.0}"),
        _ if value.abs() >= 1e4 => format!("{:.1}k {unit}", value / 1e3),
        _ if value.abs() >= 100.0 => format!("{value:.0} {unit}"),
        _ => format!("{value:.2} {unit}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_units() {
        assert_eq!(fmt(1500.0, "us"), "1.50 ms");
        assert_eq!(fmt(12.34, "us"), "12.3 µs");
        assert_eq!(fmt(3.0 * 1048576.0, "bytes"), "3.0 MiB");
        assert_eq!(fmt(45678.0, "req/s"), "45.7k req/s");
    }
}
