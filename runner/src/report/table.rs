//! The report as tables: one per measurement, a row per function and metric, a
//! column per host (median ± MAD), and the ratio of wasm to native, like
//! hyperfine's summary. Rendered aligned for the terminal or as Markdown.

use super::{Metric, Report, is_baseline};
use crate::model::Measurement;
use crate::stats;

/// One measurement's table, however it is rendered.
pub(super) struct Table {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub notes: Vec<String>,
}

/// The widest a warning's line on the terminal gets (the full text is in the report).
const WARNING_WIDTH: usize = 110;

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
        out.push_str(&format!(
            "\n{} warning(s), one line each (the full text in report.md and report.html):\n",
            report.warnings.len()
        ));
        for w in &report.warnings {
            out.push_str(&format!("  ! {}\n", gist(w)));
        }
    }
    out
}

/// A warning's gist on one line: what it is about and what happened (up to
/// its second `: `, where the why begins), at most [`WARNING_WIDTH`] characters.
pub fn gist(warning: &str) -> String {
    let flat = warning.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut = flat
        .match_indices(": ")
        .nth(1)
        .map_or(flat.as_str(), |(at, _)| &flat[..at]);
    if cut.chars().count() <= WARNING_WIDTH {
        return cut.to_string();
    }
    let mut short: String = cut.chars().take(WARNING_WIDTH - 1).collect();
    short.push('…');
    short
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
    if let Some(log) = &report.host_log {
        out.push_str(&format!(
            "\nThe hosts' own output (their start-up lines and stderr): [{log}]({log}).\n"
        ));
    }
    if !report.versions.host.is_empty() {
        let served_by: Vec<String> = report
            .versions
            .host
            .iter()
            .map(|(name, version)| format!("{name}: {version}"))
            .collect();
        out.push_str(&format!(
            "\nServed by (as `--host-version` named it): {}.\n",
            served_by.join("; ")
        ));
    }
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

pub(super) fn tables(report: &Report) -> Vec<Table> {
    Measurement::ALL
        .into_iter()
        .filter_map(|m| table(report, m))
        .collect()
}

fn table(report: &Report, measurement: Measurement) -> Option<Table> {
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
    header.extend(hosts.iter().map(std::string::ToString::to_string));
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
            let cell = find(h).map_or(String::new(), |o| cell(o, &mut notes));
            row.push(cell);
        }
        if with_ratio {
            row.push(ratio_cell(find("wasm"), find(baseline)));
        }
        rows.push(row);
    }
    notes.extend(tree_notes(&metrics));
    if measurement == Measurement::Load {
        notes.push(format!(
            "CPUs (--pin {}): {}",
            report.plan.pinning.mode, report.plan.pinning.note
        ));
    }
    Some(Table {
        title: measurement.name().replace('_', " "),
        header,
        rows,
        notes,
    })
}

/// A host's cell: its figure, "limit" where it hit one without a figure, or
/// "skipped"/"failed"; why goes into the table's notes.
fn cell(o: &Metric, notes: &mut Vec<String>) -> String {
    let mut note = |text: String| {
        if !notes.contains(&text) {
            notes.push(text);
        }
    };
    if let Some(limit) = &o.limit {
        note(format!("{} on {}: limit: {limit}", o.function, o.host));
    }
    match (&o.summary, &o.skipped) {
        (Some(s), _) if s.n > 1 => format!("{} ± {}", fmt(s.p50, o.unit), fmt(s.mad, o.unit)),
        (Some(s), _) => fmt(s.p50, o.unit),
        (None, Some(why)) => {
            note(format!("{}: {why}", o.host));
            if why.starts_with("failed") {
                "failed"
            } else {
                "skipped"
            }
            .into()
        }
        (None, None) if o.limit.is_some() => "limit".into(),
        (None, None) => "-".into(),
    }
}

/// For each host measured as several processes: which ones (from its first
/// such figure), and that its RSS figures are summed over them.
fn tree_notes(metrics: &[&Metric]) -> Vec<String> {
    let mut notes = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for m in metrics {
        let Some(processes) = m.processes.as_ref().filter(|p| p.len() > 1) else {
            continue;
        };
        if seen.contains(&m.host.as_str()) {
            continue;
        }
        seen.push(&m.host);
        let listed: Vec<String> = processes
            .iter()
            .map(|p| {
                let command: String = p.command.chars().take(60).collect();
                format!("{} `{command}` {:.0} %", p.pid, p.share * 100.0)
            })
            .collect();
        notes.push(format!(
            "{}: measured as its process tree ({} of {} {}): {}; its RSS is summed over them, an upper bound (pages they share count once per process), its PSS is not",
            m.host,
            m.metric,
            m.function,
            m.k.map_or(String::new(), |k| format!("K={k}")),
            listed.join(", ")
        ));
    }
    notes
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
        return String::new();
    };
    stats::ratio(w, n).map_or(String::new(), readable_ratio)
}

/// A ratio that can be read at any size: `2.00×`, `265×`, and below 1/10
/// as a fraction, `1/265×`, where two decimals would print `0.00`.
pub fn readable_ratio(r: f64) -> String {
    match r {
        r if r <= 0.0 => format!("{r:.2}×"),
        r if r >= 99.5 => format!("{r:.0}×"),
        r if r >= 9.95 => format!("{r:.1}×"),
        r if r >= 0.1 => format!("{r:.2}×"),
        r if 1.0 / r >= 99.5 => format!("1/{:.0}×", 1.0 / r),
        r => format!("1/{:.1}×", 1.0 / r),
    }
}

/// A value in its unit, scaled for reading.
pub fn fmt(value: f64, unit: &str) -> String {
    match unit {
        "us" if value >= 1e6 => format!("{:.2} s", value / 1e6),
        "us" if value >= 1e3 => format!("{:.2} ms", value / 1e3),
        "us" => format!("{value:.1} µs"),
        "ms" if value >= 1e3 => format!("{:.2} s", value / 1e3),
        "ms" => format!("{value:.2} ms"),
        "bytes" if value.abs() >= f64::from(1 << 20) => {
            format!("{:.1} MiB", value / f64::from(1 << 20))
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
        assert_eq!(fmt(3.0 * 1_048_576.0, "bytes"), "3.0 MiB");
        assert_eq!(fmt(45678.0, "req/s"), "45.7k req/s");
    }

    /// A warning on the terminal is one line: its subject and what happened,
    /// not the why that follows; a long one is cut.
    #[test]
    fn a_warning_is_one_line_on_the_terminal() {
        assert_eq!(
            gist(
                "load hello wasm: oha and wrk differ by +12 % (1 vs 2): the server spent\nthe same"
            ),
            "load hello wasm: oha and wrk differ by +12 % (1 vs 2)"
        );
        assert_eq!(
            gist("instance_cold_start hello wasm total: high spread"),
            "instance_cold_start hello wasm total: high spread"
        );
        let long = gist(&format!("load io wasm: {}", "x".repeat(600)));
        assert_eq!(long.chars().count(), WARNING_WIDTH);
        assert!(long.ends_with('…') && !long.contains('\n'));
    }

    #[test]
    fn ratios_are_readable_at_any_size() {
        assert_eq!(readable_ratio(1.0 / 265.0), "1/265×");
        assert_eq!(readable_ratio(0.0123), "1/81.3×");
        assert_eq!(readable_ratio(0.08), "1/12.5×");
        assert_eq!(readable_ratio(0.5), "0.50×");
        assert_eq!(readable_ratio(0.1), "0.10×");
        assert_eq!(readable_ratio(2.0), "2.00×");
        assert_eq!(readable_ratio(12.34), "12.3×");
        assert_eq!(readable_ratio(265.4), "265×");
        assert_eq!(readable_ratio(0.0), "0.00×");
    }

    fn load_metric(host: &str) -> Metric {
        Metric::new(
            Measurement::Load,
            "io",
            host,
            "throughput",
            "req/s",
            crate::report::Better::Higher,
        )
        .k(10_000)
    }

    /// A limit is a figure of the host ("limit" and what the clients saw, in
    /// the notes), a failure is "failed"; a tree's processes are listed.
    #[test]
    fn limits_failures_and_trees_in_the_table() {
        let mut notes = Vec::new();
        let limit = load_metric("spin").limit("only 1726 of 10000 users got an answer");
        assert_eq!(cell(&limit, &mut notes), "limit");
        let failed = load_metric("wasm").skipped("failed: the host exited");
        assert_eq!(cell(&failed, &mut notes), "failed");
        let skipped = load_metric("wasmtime-serve").skipped("`wasmtime` not on PATH");
        assert_eq!(cell(&skipped, &mut notes), "skipped");
        assert_eq!(
            notes,
            [
                "io on spin: limit: only 1726 of 10000 users got an answer",
                "wasm: failed: the host exited",
                "wasmtime-serve: `wasmtime` not on PATH"
            ]
        );
        let tree = load_metric("spin").value(1.0).processes(vec![
            crate::report::Counted {
                pid: 7,
                command: "spin up".into(),
                share: 0.25,
            },
            crate::report::Counted {
                pid: 8,
                command: "spin trigger http".into(),
                share: 0.75,
            },
        ]);
        let single = load_metric("native")
            .value(1.0)
            .processes(vec![crate::report::Counted {
                pid: 9,
                command: "io-native".into(),
                share: 1.0,
            }]);
        let notes = tree_notes(&[&single, &tree]);
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].starts_with("spin: measured as its process tree"),
            "{}",
            notes[0]
        );
        assert!(
            notes[0].contains("8 `spin trigger http` 75 %"),
            "{}",
            notes[0]
        );
    }
}
