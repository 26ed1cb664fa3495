//! Two reports side by side: `spinbench diff A.json B.json` and `compare
//! --baseline`. Each figure of the new report that the old one has too (same
//! measurement, function, host, metric and K) gets the ratio of its median to
//! the baseline's, marked when the change is beyond both runs' spread (the two
//! median ± MAD ranges do not overlap). `--fail-above PCT` turns a marked change
//! for the worse of more than PCT % in a chosen metric into a failed exit.

use super::table::fmt;
use serde::Deserialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Which figures a regression gate watches, and how far they may move.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct GateArgs {
    /// Fail (exit 3) when a chosen figure got worse by more than PCT percent, beyond both runs' spread.
    #[arg(long, value_name = "PCT")]
    pub fail_above: Option<f64>,
    /// The figures --fail-above watches, comma-separated: MEASUREMENT or MEASUREMENT.METRIC (e.g. instance_cold_start.total,memory.pss_per_instance_fit) [default: every figure].
    #[arg(long, value_delimiter = ',', value_name = "FIGURES")]
    pub fail_on: Vec<String>,
}

#[derive(clap::Args, Debug, Clone)]
pub struct DiffArgs {
    /// The baseline report.json.
    pub old: PathBuf,
    /// The report.json compared with it.
    pub new: PathBuf,
    /// Also write the comparison as one self-contained page (headline, chart, warnings, every figure, how both runs were made).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub gate: GateArgs,
}

/// Figures that got worse past `--fail-above`: the caller's exit code depends on it.
#[derive(Debug)]
pub struct Regressed(pub Vec<String>);

impl std::fmt::Display for Regressed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} figure(s) regressed:", self.0.len())?;
        for line in &self.0 {
            write!(f, "\n  {line}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Regressed {}

/// The process exit code of a regression, apart from 1 (the run failed) and 2 (bad arguments).
pub const REGRESSED_EXIT_CODE: u8 = 3;

/// A report as read back: what a comparison needs, and (for its page) how
/// the run was made.
#[derive(Debug, Deserialize)]
pub struct Saved {
    pub schema: String,
    pub metrics: Vec<SavedMetric>,
    #[serde(default)]
    pub started_at: String,
    #[serde(default)]
    pub duration_s: f64,
    #[serde(default)]
    pub command: Vec<String>,
    #[serde(default)]
    pub machine: Option<SavedMachine>,
    #[serde(default)]
    pub plan: Option<SavedPlan>,
    #[serde(default)]
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SavedMachine {
    pub cpu_model: String,
    pub cores: usize,
    pub kernel: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SavedPlan {
    #[serde(default)]
    pub quick: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SavedMetric {
    pub measurement: String,
    pub function: String,
    pub host: String,
    pub metric: String,
    pub unit: String,
    pub better: Direction,
    pub k: Option<usize>,
    pub summary: Option<SavedSummary>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Lower,
    Higher,
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub struct SavedSummary {
    pub p50: f64,
    pub mad: f64,
}

/// One figure in both reports.
#[derive(Debug, Clone)]
pub struct Change {
    pub new: SavedMetric,
    pub old: SavedSummary,
    pub now: SavedSummary,
    /// new median / old median.
    pub ratio: f64,
    /// The median ± MAD ranges do not overlap.
    pub beyond_spread: bool,
    /// How much worse, in percent of the old median (negative: better).
    pub worse_pct: f64,
}

impl Change {
    pub fn label(&self) -> String {
        let m = &self.new;
        let k = m.k.map_or(String::new(), |k| format!(" K={k}"));
        format!(
            "{} {} {} {}{k}",
            m.measurement, m.function, m.host, m.metric
        )
    }
}

pub fn read(path: &Path) -> anyhow::Result<Saved> {
    use anyhow::Context;
    let text = std::fs::read(path).with_context(|| format!("reading report {}", path.display()))?;
    let saved: Saved = serde_json::from_slice(&text)
        .with_context(|| format!("{} is not a spinbench report.json", path.display()))?;
    if !saved.schema.starts_with("spinbench-report/") {
        anyhow::bail!(
            "{}: schema {:?} is not a spinbench report",
            path.display(),
            saved.schema
        );
    }
    Ok(saved)
}

/// Every figure of `new` that `old` has too, with its change.
pub fn changes(old: &Saved, new: &Saved) -> Vec<Change> {
    let key = |m: &SavedMetric| {
        (
            m.measurement.clone(),
            m.function.clone(),
            m.host.clone(),
            m.metric.clone(),
            m.k,
        )
    };
    new.metrics
        .iter()
        .filter_map(|m| {
            let now = m.summary?;
            let before = old.metrics.iter().find(|o| key(o) == key(m))?.summary?;
            if before.p50 == 0.0 {
                return None;
            }
            let ratio = now.p50 / before.p50;
            let delta = now.p50 - before.p50;
            let worse = match m.better {
                Direction::Lower => delta,
                Direction::Higher => -delta,
            };
            Some(Change {
                new: m.clone(),
                old: before,
                now,
                ratio,
                beyond_spread: delta.abs() > before.mad + now.mad,
                worse_pct: 100.0 * worse / before.p50.abs(),
            })
        })
        .collect()
}

/// Whether `selector` (`measurement` or `measurement.metric`) picks `m`.
fn selects(selector: &str, m: &SavedMetric) -> bool {
    match selector.split_once('.') {
        Some((measurement, metric)) => m.measurement == measurement && m.metric == metric,
        None => m.measurement == selector,
    }
}

/// The regressions past the gate, if it has a threshold.
pub fn regressions(changes: &[Change], gate: &GateArgs) -> Vec<String> {
    let Some(pct) = gate.fail_above else {
        return Vec::new();
    };
    changes
        .iter()
        .filter(|c| gate.fail_on.is_empty() || gate.fail_on.iter().any(|s| selects(s, &c.new)))
        .filter(|c| c.beyond_spread && c.worse_pct > pct)
        .map(|c| {
            format!(
                "{}: {} -> {} ({:+.1} %, past {pct} %)",
                c.label(),
                fmt(c.old.p50, &c.new.unit),
                fmt(c.now.p50, &c.new.unit),
                c.worse_pct
            )
        })
        .collect()
}

/// Checks the gate's selectors against the figures the reports have.
pub fn check_selectors(gate: &GateArgs, saved: &Saved) -> anyhow::Result<()> {
    for s in &gate.fail_on {
        if !saved.metrics.iter().any(|m| selects(s, m)) {
            anyhow::bail!(
                "--fail-on {s:?} matches no figure of the report (MEASUREMENT or MEASUREMENT.METRIC)"
            );
        }
    }
    Ok(())
}

/// The changes as Markdown tables, one per measurement; `*` marks a change
/// beyond both runs' spread.
pub fn markdown(changes: &[Change]) -> String {
    let mut out = String::new();
    let mut measurements: Vec<&str> = Vec::new();
    for c in changes {
        if !measurements.contains(&c.new.measurement.as_str()) {
            measurements.push(&c.new.measurement);
        }
    }
    for measurement in measurements {
        let _ = write!(
            out,
            "\n## {}\n\n| function | metric | host | baseline | now | now/baseline |\n|---|---|---|---:|---:|---:|\n",
            measurement.replace('_', " ")
        );
        for c in changes.iter().filter(|c| c.new.measurement == measurement) {
            let m = &c.new;
            let k = m.k.map_or(String::new(), |k| format!(" K={k}"));
            let _ = writeln!(
                out,
                "| {} | {} ({}){k} | {} | {} | {} | {:.2}x{} |",
                m.function,
                m.metric,
                m.unit,
                m.host,
                fmt(c.old.p50, &m.unit),
                fmt(c.now.p50, &m.unit),
                c.ratio,
                if c.beyond_spread { " *" } else { "" }
            );
        }
    }
    if !out.is_empty() {
        out.push_str("\n`*`: beyond both runs' spread (the median ± MAD ranges do not overlap).\n");
    }
    out
}

/// `spinbench diff`: prints the tables (and with `--html` writes the page);
/// fails with [`Regressed`] past the gate.
pub fn main(args: &DiffArgs) -> anyhow::Result<()> {
    use anyhow::Context;
    let old = read(&args.old)?;
    let new = read(&args.new)?;
    if let Some(path) = &args.html {
        check_selectors(&args.gate, &new)?;
        let changes = changes(&old, &new);
        let regressed = regressions(&changes, &args.gate);
        let page = super::html::diff((&args.old, &old), (&args.new, &new), &changes, &regressed)?;
        std::fs::write(path, page).with_context(|| format!("writing {}", path.display()))?;
        spinbench_host::out_line!("open: {}", path.display())?;
    }
    compare_with(&old, &new, &args.gate)
}

/// Prints `new` against `old` and applies the gate.
pub fn compare_with(old: &Saved, new: &Saved, gate: &GateArgs) -> anyhow::Result<()> {
    check_selectors(gate, new)?;
    let changes = changes(old, new);
    spinbench_host::lines::stdout(&markdown(&changes))?;
    let regressed = regressions(&changes, gate);
    if regressed.is_empty() {
        Ok(())
    } else {
        Err(Regressed(regressed).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(measurement: &str, metric: &str, better: &str, p50: f64, mad: f64) -> String {
        format!(
            r#"{{"measurement":"{measurement}","function":"hello","host":"wasm","metric":"{metric}","unit":"us","better":"{better}","k":null,"summary":{{"p50":{p50},"mad":{mad}}},"skipped":null}}"#
        )
    }

    fn report(metrics: &[String]) -> Saved {
        serde_json::from_str(&format!(
            r#"{{"schema":"spinbench-report/1","metrics":[{}]}}"#,
            metrics.join(",")
        ))
        .unwrap()
    }

    fn gate(pct: f64, on: &[&str]) -> GateArgs {
        GateArgs {
            fail_above: Some(pct),
            fail_on: on.iter().map(std::string::ToString::to_string).collect(),
        }
    }

    #[test]
    fn ratios_and_spread() {
        let old = report(&[
            metric("instance_cold_start", "total", "lower", 20.0, 0.5),
            metric("load", "throughput", "higher", 1000.0, 0.0),
        ]);
        let new = report(&[
            metric("instance_cold_start", "total", "lower", 20.6, 0.5),
            metric("load", "throughput", "higher", 800.0, 0.0),
        ]);
        let changes = changes(&old, &new);
        assert_eq!(changes.len(), 2);
        // +3 %, within 0.5 + 0.5 of spread: not marked.
        assert!((changes[0].ratio - 1.03).abs() < 1e-9);
        assert!(!changes[0].beyond_spread);
        assert!((changes[0].worse_pct - 3.0).abs() < 1e-9);
        // Throughput down 20 %: worse (higher is better), marked.
        assert!(changes[1].beyond_spread);
        assert!((changes[1].worse_pct - 20.0).abs() < 1e-9);
        let md = markdown(&changes);
        assert!(md.contains("| 0.80x * |"), "{md}");
        assert!(md.contains("| 1.03x |"), "{md}");
    }

    #[test]
    fn the_gate_fails_only_on_chosen_marked_regressions_past_the_threshold() {
        let old = report(&[
            metric("instance_cold_start", "total", "lower", 20.0, 0.1),
            metric("memory", "pss_per_instance_fit", "lower", 70.0, 0.0),
        ]);
        let slower = report(&[
            metric("instance_cold_start", "total", "lower", 25.0, 0.1),
            metric("memory", "pss_per_instance_fit", "lower", 60.0, 0.0),
        ]);
        let changes = changes(&old, &slower);
        // +25 % cold start: past 10 %, not past 30 %.
        assert_eq!(regressions(&changes, &gate(10.0, &[])).len(), 1);
        assert!(regressions(&changes, &gate(30.0, &[])).is_empty());
        // Memory got better: never a regression; cold start not chosen.
        assert!(regressions(&changes, &gate(10.0, &["memory"])).is_empty());
        assert_eq!(
            regressions(&changes, &gate(10.0, &["instance_cold_start.total"])).len(),
            1
        );
        assert!(regressions(&changes, &gate(10.0, &["instance_cold_start.handle"])).is_empty());
        // No threshold, no gate.
        assert!(regressions(&changes, &GateArgs::default()).is_empty());
        // A large change within the runs' spread is not a regression.
        let noisy_old = report(&[metric("load", "latency_p99", "lower", 1.0, 0.4)]);
        let noisy_new = report(&[metric("load", "latency_p99", "lower", 1.5, 0.2)]);
        assert!(regressions(&changes_of(&noisy_old, &noisy_new), &gate(10.0, &[])).is_empty());

        let error = compare_with(&old, &slower, &gate(10.0, &[])).unwrap_err();
        let regressed = error
            .downcast_ref::<Regressed>()
            .expect("a Regressed error");
        assert!(
            regressed.0[0].starts_with("instance_cold_start hello wasm total"),
            "{regressed}"
        );
        assert!(compare_with(&old, &slower, &gate(30.0, &[])).is_ok());
        let unknown = compare_with(&old, &slower, &gate(10.0, &["nope"])).unwrap_err();
        assert!(
            unknown.to_string().contains("matches no figure"),
            "{unknown}"
        );
    }

    fn changes_of(old: &Saved, new: &Saved) -> Vec<Change> {
        changes(old, new)
    }

    #[test]
    fn only_spinbench_reports_are_read() {
        let dir = std::env::temp_dir().join(format!("spinbench-diff-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("other.json");
        std::fs::write(&path, r#"{"schema":"oha/1","metrics":[]}"#).unwrap();
        assert!(read(&path).is_err());
        std::fs::write(&path, "not json").unwrap();
        assert!(read(&path).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
