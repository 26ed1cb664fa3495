//! `spinbench diff --html`: two runs on one page. Its headline is the
//! figures that moved beyond both runs' spread, the largest change first.

use super::Page;
use crate::report::charts;
use crate::report::diff::{Change, Direction, Saved};
use crate::report::table::fmt;
use anyhow::Result;
use std::path::Path;

/// How many moved figures the headline and its chart show (the tables have all).
const HEADLINE_ROWS: usize = 20;

/// The page comparing `new` with `old` (each with the path it was read
/// from): `changes` as `diff` computed them, `regressed` past the gate.
pub fn diff(
    old: (&Path, &Saved),
    new: (&Path, &Saved),
    changes: &[Change],
    regressed: &[String],
) -> Result<String> {
    let title = "spinbench diff";
    let mut page = Page::new(
        title,
        &format!(
            "{} ({}) against the baseline {} ({})",
            new.0.display(),
            new.1.started_at,
            old.0.display(),
            old.1.started_at
        ),
    );
    if [old.1, new.1]
        .iter()
        .any(|s| s.plan.as_ref().is_some_and(|p| p.quick))
    {
        page.note(
            "quick",
            "A --quick run is on one side: its figures are a first look, not comparable with a full run's.",
        );
    }
    let mut moved: Vec<&Change> = changes.iter().filter(|c| c.beyond_spread).collect();
    moved.sort_by(|a, b| b.worse_pct.abs().total_cmp(&a.worse_pct.abs()));
    moved.truncate(HEADLINE_ROWS);

    page.section("headline", "Headline: what moved beyond both runs' spread");
    if moved.is_empty() {
        page.paragraph(&format!(
            "No figure moved beyond both runs' spread ({} figures in both reports).",
            changes.len()
        ));
    } else {
        page.table(
            &header(),
            &moved.iter().map(|c| row(c)).collect::<Vec<_>>(),
            3,
        );
        page.paragraph(&format!(
            "The {} largest of the {} moved figures (the median ± MAD ranges do not overlap), of {} in both reports; every figure is below.",
            moved.len(),
            changes.iter().filter(|c| c.beyond_spread).count(),
            changes.len()
        ));
    }

    page.section("charts", "Charts");
    if moved.is_empty() {
        page.paragraph("No chart: no figure moved.");
    } else {
        let chart_title = "now / baseline of the moved figures (red: worse, green: better)";
        let bars: Vec<(String, f64, bool)> = moved
            .iter()
            .map(|c| (c.label(), c.ratio, c.worse_pct > 0.0))
            .collect();
        page.chart(
            "diff-moved.svg",
            chart_title,
            &charts::ratios(chart_title, &bars)?,
        );
    }

    page.section(
        "warnings",
        &format!("Warnings ({})", regressed.len() + new.1.warnings.len()),
    );
    if regressed.is_empty() && new.1.warnings.is_empty() {
        page.paragraph("None.");
    }
    if !regressed.is_empty() {
        page.heading("Past the gate (--fail-above)");
        page.list("warnings", regressed);
    }
    if !new.1.warnings.is_empty() {
        page.heading("The new run's own");
        page.list("warnings", &new.1.warnings);
    }

    page.section("figures", "Every figure in both reports");
    let mut measurements: Vec<&str> = Vec::new();
    for c in changes {
        if !measurements.contains(&c.new.measurement.as_str()) {
            measurements.push(&c.new.measurement);
        }
    }
    for measurement in measurements {
        page.heading(&measurement.replace('_', " "));
        let rows: Vec<Vec<String>> = changes
            .iter()
            .filter(|c| c.new.measurement == measurement)
            .map(row)
            .collect();
        page.table(&header(), &rows, 3);
    }

    page.section("how", "How the runs were made");
    for (name, (path, saved)) in [("baseline", old), ("now", new)] {
        page.heading(name);
        page.definitions(&how(path, saved));
    }
    Ok(page.finish(title))
}

fn header() -> Vec<String> {
    [
        "function",
        "figure",
        "host",
        "baseline",
        "now",
        "now / baseline",
        "change",
    ]
    .map(String::from)
    .to_vec()
}

fn row(c: &Change) -> Vec<String> {
    let m = &c.new;
    let k = m.k.map_or(String::new(), |k| format!(" K={k}"));
    let direction = match m.better {
        Direction::Lower => "lower is better",
        Direction::Higher => "higher is better",
    };
    let change = if !c.beyond_spread {
        "within the spread".to_string()
    } else if c.worse_pct > 0.0 {
        format!("{:.1} % worse", c.worse_pct)
    } else {
        format!("{:.1} % better", -c.worse_pct)
    };
    vec![
        m.function.clone(),
        format!("{} ({}){k}, {direction}", m.metric, m.unit),
        m.host.clone(),
        fmt(c.old.p50, &m.unit),
        fmt(c.now.p50, &m.unit),
        format!("{:.2}×", c.ratio),
        change,
    ]
}

fn how(path: &Path, saved: &Saved) -> Vec<(&'static str, String)> {
    let mut pairs = vec![
        ("report", path.display().to_string()),
        ("command", saved.command.join(" ")),
        ("started", saved.started_at.clone()),
        ("took", format!("{:.0} s", saved.duration_s)),
    ];
    if let Some(m) = &saved.machine {
        pairs.push((
            "machine",
            format!("{}, {} cores, Linux {}", m.cpu_model, m.cores, m.kernel),
        ));
    }
    pairs
}
