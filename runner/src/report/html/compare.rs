//! `report.html` of a `compare` (or `load`) run.

use super::Page;
use crate::report::charts::Chart;
use crate::report::{Report, headline, table};

/// The page of `report`, with `charts` inline.
pub fn report(report: &Report, charts: &[Chart]) -> String {
    let title = format!("spinbench {}", subcommand(report));
    let m = &report.machine;
    let mut page = Page::new(
        &title,
        &format!(
            "{}: {} ({} cores), Linux {}; the run took {:.0} s",
            report.started_at, m.cpu_model, m.cores, m.kernel, report.duration_s
        ),
    );
    if report.plan.quick {
        page.note(
            "quick",
            "A --quick run: a first look that everything runs, not for figures (0.3 s loads, fewer samples, no compiles or empty-cache starts).",
        );
    }
    headline_section(&mut page, report);
    page.section("charts", "Charts");
    if charts.is_empty() {
        page.paragraph("No chart: the run has none of the figures they draw.");
    }
    for chart in charts {
        page.chart(&chart.file, &chart.title, &chart.svg);
    }
    page.section("warnings", &format!("Warnings ({})", report.warnings.len()));
    if report.warnings.is_empty() {
        page.paragraph("None.");
    } else {
        page.list("warnings", &report.warnings);
    }
    page.section("figures", "Every figure");
    page.paragraph("Cells are median ± MAD; the last column is wasm's median over the native baseline's (the native server; for instance cold start, a native process per request).");
    for t in table::tables(report) {
        page.heading(&t.title);
        page.table(&t.header, &t.rows, 2);
        if !t.notes.is_empty() {
            page.list("notes", &t.notes);
        }
    }
    how_section(&mut page, report);
    page.finish(&title)
}

/// `compare`, or `load` for a report of `spinbench load`.
fn subcommand(report: &Report) -> &str {
    report
        .command
        .get(1)
        .map(String::as_str)
        .filter(|c| *c == "load")
        .unwrap_or("compare")
}

fn headline_section(page: &mut Page, report: &Report) {
    page.section("headline", "Headline");
    let headline = headline::of(report);
    if headline.rows.is_empty() {
        page.paragraph("No headline figure: wasm has none of them in this run.");
        return;
    }
    let mut header = vec!["function".to_string(), "figure".to_string()];
    header.extend(headline.hosts.iter().cloned());
    header.push("wasm / baseline".into());
    let rows: Vec<Vec<String>> = headline
        .rows
        .iter()
        .map(|row| {
            let mut cells = vec![row.function.clone(), row.label.clone()];
            cells.extend(row.cells.iter().cloned());
            cells.push(row.ratio.clone());
            cells
        })
        .collect();
    page.table(&header, &rows, 2);
    page.paragraph("Each figure of the first function that has it on wasm (medians); every figure of every function is below.");
}

fn how_section(page: &mut Page, report: &Report) {
    page.section("how", "How the run was made");
    let plan = &report.plan;
    let v = &report.versions;
    let or_absent = |tool: &Option<String>| tool.clone().unwrap_or_else(|| "not on PATH".into());
    let m = &report.machine;
    let mut pairs = vec![
        ("command", report.command.join(" ")),
        ("started", report.started_at.clone()),
        ("took", format!("{:.0} s", report.duration_s)),
        (
            "machine",
            format!(
                "{}, {} cores, SHA instructions: {}, Linux {}, {:.0} GiB RAM",
                m.cpu_model,
                m.cores,
                if m.sha_instructions { "yes" } else { "no" },
                m.kernel,
                m.memory_total_bytes as f64 / f64::from(1u32 << 30)
            ),
        ),
        ("functions", plan.functions.join(", ")),
        ("hosts", plan.hosts.join(", ")),
        (
            "measurements",
            plan.measurements
                .iter()
                .map(|m| m.name())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "plan",
            format!(
                "{} s loads after {} s of warm-up, {} samples, {} process starts, K = {}{}",
                plan.load_duration_s,
                plan.warmup_s,
                plan.samples,
                plan.runs,
                plan.ks
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                if plan.quick { " (--quick)" } else { "" }
            ),
        ),
        (
            "CPUs",
            format!("--pin {}: {}", plan.pinning.mode, plan.pinning.note),
        ),
        (
            "versions",
            format!(
                "spinbench {}; oha: {}; wrk: {}; spin: {}; wasmtime: {}",
                v.spinbench,
                or_absent(&v.oha),
                or_absent(&v.wrk),
                or_absent(&v.spin),
                or_absent(&v.wasmtime)
            ),
        ),
    ];
    if !v.host.is_empty() {
        let served: Vec<String> = v.host.iter().map(|(n, v)| format!("{n}: {v}")).collect();
        pairs.push(("served by", served.join("; ")));
    }
    if let Some(log) = &report.host_log {
        pairs.push((
            "hosts' output",
            format!("{log} beside this page (their start-up lines and stderr)"),
        ));
    }
    pairs.push((
        "data",
        "report.json beside this page (schema/report.schema.json), report.md, and each chart as an SVG file".into(),
    ));
    page.definitions(&pairs);
}
