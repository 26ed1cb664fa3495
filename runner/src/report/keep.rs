//! Results people keep: `--export-json FILE` and `--export-markdown FILE` (like
//! hyperfine's), beside the timestamped results directory, and `--baseline`,
//! which compares the run with an earlier report.json (`diff`).

use super::Report;
use super::diff::{self, GateArgs, Saved};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug, Clone, Default)]
pub struct KeepArgs {
    /// Also write the report's JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Also write the report's Markdown to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// An earlier report.json: each median is shown beside the baseline's, with their ratio.
    #[arg(long, value_name = "REPORT")]
    pub baseline: Option<PathBuf>,
    #[command(flatten)]
    pub gate: GateArgs,
}

impl KeepArgs {
    /// The baseline, read before the run so that a wrong path fails at once.
    pub fn read_baseline(&self) -> Result<Option<Saved>> {
        if self.gate.fail_above.is_some() && self.baseline.is_none() {
            bail!("--fail-above needs --baseline (the report the run is held against)");
        }
        self.baseline.as_deref().map(diff::read).transpose()
    }
}

/// Writes the exports; then compares with the baseline, failing with
/// [`diff::Regressed`] past `--fail-above`.
pub fn keep(report: &Report, args: &KeepArgs, baseline: Option<&Saved>) -> Result<()> {
    if let Some(path) = &args.export_json {
        write(path, &serde_json::to_vec_pretty(report)?)?;
    }
    if let Some(path) = &args.export_markdown {
        write(path, super::table::markdown(report).as_bytes())?;
    }
    if let Some(old) = baseline {
        spinbench_host::out_line!(
            "\nagainst the baseline {}:",
            args.baseline.as_deref().unwrap_or(Path::new("")).display()
        )?;
        let new: Saved = serde_json::from_value(serde_json::to_value(report)?)
            .context("reading this run's report back")?;
        diff::compare_with(old, &new, &args.gate)?;
    }
    Ok(())
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))?;
    spinbench_host::out_line!("wrote {}", path.display())?;
    Ok(())
}
