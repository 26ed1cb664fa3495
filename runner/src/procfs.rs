//! Readers for the few /proc files the measurements need: a process's resident
//! memory (RSS, and PSS, which splits shared pages fairly between processes), its
//! CPU time, and what machine this is.

use anyhow::{Context, Result, anyhow};
use serde::Serialize;

/// Clock ticks per second of /proc/PID/stat's times. USER_HZ is 100 on every
/// Linux architecture we run on; reading it properly needs sysconf (libc).
const TICKS_PER_SECOND: f64 = 100.0;

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Memory {
    pub rss_bytes: u64,
    pub pss_bytes: u64,
}

/// RSS and PSS of `pid` from /proc/PID/smaps_rollup.
pub fn memory(pid: u32) -> Result<Memory> {
    let path = format!("/proc/{pid}/smaps_rollup");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    parse_smaps_rollup(&text).with_context(|| format!("parsing {path}"))
}

/// Current RSS alone from /proc/PID/status (cheaper than smaps_rollup: no page walk),
/// for sampling while load runs.
pub fn rss_bytes(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    kib_field(&text, "VmRSS:").ok_or_else(|| anyhow!("no VmRSS in {path}"))
}

/// User + system CPU seconds `pid` has used so far.
pub fn cpu_seconds(pid: u32) -> Result<f64> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    parse_stat_cpu(&text).with_context(|| format!("parsing {path}"))
}

/// User + system CPU seconds of this process's children that have exited and
/// been waited for (`cutime + cstime`).
pub fn children_cpu_seconds() -> Result<f64> {
    let path = "/proc/self/stat";
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    stat_seconds(&text, [16, 17]).with_context(|| format!("parsing {path}"))
}

pub fn parse_smaps_rollup(text: &str) -> Result<Memory> {
    Ok(Memory {
        rss_bytes: kib_field(text, "Rss:").ok_or_else(|| anyhow!("no Rss line"))?,
        pss_bytes: kib_field(text, "Pss:").ok_or_else(|| anyhow!("no Pss line"))?,
    })
}

/// CPU seconds the whole machine has spent busy so far (all cores: every
/// state of /proc/stat's `cpu` line but idle and iowait).
pub fn machine_busy_seconds() -> Result<f64> {
    let path = "/proc/stat";
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    parse_machine_busy(&text).with_context(|| format!("parsing {path}"))
}

pub fn parse_machine_busy(text: &str) -> Result<f64> {
    let line = text
        .lines()
        .find(|l| l.starts_with("cpu "))
        .ok_or_else(|| anyhow!("no cpu line"))?;
    let ticks = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse::<u64>().with_context(|| format!("field {f:?}")))
        .collect::<Result<Vec<u64>>>()?;
    if ticks.len() < 5 {
        return Err(anyhow!("short cpu line {line:?}"));
    }
    // user nice system idle iowait irq softirq steal [guest guest_nice, already in user]
    let busy: u64 = ticks.iter().take(8).sum::<u64>() - ticks[3] - ticks[4];
    Ok(busy as f64 / TICKS_PER_SECOND)
}

/// `utime + stime` in seconds.
pub fn parse_stat_cpu(text: &str) -> Result<f64> {
    stat_seconds(text, [14, 15])
}

/// The sum of two clock-tick fields of a stat line (1-based, as in proc(5)), in
/// seconds. The command name (field 2) may contain spaces and parentheses, so
/// fields are counted from the last `)`.
fn stat_seconds(text: &str, [a, b]: [usize; 2]) -> Result<f64> {
    let after_comm = &text[text.rfind(')').ok_or_else(|| anyhow!("no ')' in stat"))? + 1..];
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    // after_comm starts at field 3 (state).
    let tick = |i: usize| -> Result<f64> {
        let field = fields
            .get(i - 3)
            .ok_or_else(|| anyhow!("stat has no field {i}"))?;
        Ok(field
            .parse::<u64>()
            .with_context(|| format!("field {i} {field:?}"))? as f64)
    };
    Ok((tick(a)? + tick(b)?) / TICKS_PER_SECOND)
}

/// The value of a `Name:   123 kB` line, in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line[name.len()..].split_whitespace().next()?.parse().ok()?;
    Some(kib * 1024)
}

/// What the figures were measured on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cpu_model: String,
    pub cores: usize,
    pub kernel: String,
    pub memory_total_bytes: u64,
    /// Whether the CPU has SHA instructions (x86 `sha_ni`, arm `sha1`): native SHA-1 uses them, wasm cannot.
    pub sha_instructions: bool,
}

pub fn machine() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    Machine {
        cpu_model: parse_cpu_model(&cpuinfo).unwrap_or_else(|| "unknown".into()),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into()),
        memory_total_bytes: kib_field(&meminfo, "MemTotal:").unwrap_or(0),
        sha_instructions: cpuinfo
            .lines()
            .filter(|l| l.starts_with("flags") || l.starts_with("Features"))
            .any(|l| l.split_whitespace().any(|f| f == "sha_ni" || f == "sha1")),
    }
}

pub fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name") || l.starts_with("Model"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROLLUP: &str = "562904de0000-7fff51ebb000 ---p 00000000 00:00 0   [rollup]\n\
        Rss:                1676 kB\nPss:                 319 kB\nPss_Dirty:           112 kB\n";

    #[test]
    fn parses_smaps_rollup() {
        let m = parse_smaps_rollup(ROLLUP).unwrap();
        assert_eq!(
            m,
            Memory {
                rss_bytes: 1676 * 1024,
                pss_bytes: 319 * 1024
            }
        );
        assert!(parse_smaps_rollup("Rss: 1 kB\n").is_err());
    }

    #[test]
    fn parses_stat_with_awkward_command_name() {
        let stat = "7780 (my (odd) cmd) R 7774 7774 6205 0 -1 4194304 101 0 0 0 250 50 30 20 20 0 1 0 31512";
        assert_eq!(parse_stat_cpu(stat).unwrap(), 3.0);
        assert_eq!(stat_seconds(stat, [16, 17]).unwrap(), 0.5);
        assert!(parse_stat_cpu("1 (x) R 2").is_err());
    }

    #[test]
    fn parses_machine_busy() {
        let stat = "cpu  100 5 50 1000 20 3 2 0 7 0\ncpu0 50 2 25 500 10 1 1 0 0 0\n";
        assert_eq!(parse_machine_busy(stat).unwrap(), 1.6);
        assert!(parse_machine_busy("cpu0 1 2 3 4 5\n").is_err());
    }

    #[test]
    fn parses_cpu_model() {
        let text = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n";
        assert_eq!(parse_cpu_model(text).as_deref(), Some("AMD EPYC 7B13"));
    }

    #[test]
    fn reads_our_own_process() {
        let pid = std::process::id();
        let m = memory(pid).unwrap();
        assert!(m.rss_bytes > 100 * 1024 && m.pss_bytes > 0 && m.pss_bytes <= m.rss_bytes);
        assert!(rss_bytes(pid).unwrap() > 100 * 1024);
        // Burn a little CPU so the counter has something to show.
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed().as_millis() < 30 {
            x = x.wrapping_mul(31).wrapping_add(1);
        }
        assert!(x != 1 && cpu_seconds(pid).unwrap() > 0.0);
        let machine = machine();
        assert!(machine.cores >= 1 && machine.memory_total_bytes > 0);
    }
}
