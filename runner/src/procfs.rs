//! Readers for the few /proc files the measurements need: a process's resident
//! memory (RSS, and PSS, which splits shared pages fairly between processes), its
//! CPU time, the process tree under it, and what machine this is.

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

/// User + system CPU seconds of this process's children that have exited and
/// been waited for (`cutime + cstime`).
pub fn children_cpu_seconds() -> Result<f64> {
    let path = "/proc/self/stat";
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    stat_seconds(&text, [16, 17]).with_context(|| format!("parsing {path}"))
}

/// `root` and every process under it, parents before children, as found now.
/// A server such as `spin up` serves from a child it spawns, so a host's
/// figures are those of its whole tree.
pub fn tree(root: u32) -> Vec<u32> {
    let mut pids = vec![root];
    let mut next = 0;
    while next < pids.len() {
        pids.extend(children(pids[next]));
        next += 1;
    }
    pids
}

/// The children of `pid`, from each of its threads' `children` file (a child
/// belongs to the thread that forked it).
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// One process's part of a reading of a tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading<T> {
    pub pid: u32,
    /// Its command line (its name when that is empty, as for a zombie).
    pub command: String,
    pub value: T,
}

/// Reads `read` of every process of `root`'s tree. The root must be readable;
/// a descendant that exits between the listing and its reading is left out.
fn read_tree<T>(root: u32, read: impl Fn(u32) -> Result<T>) -> Result<Vec<Reading<T>>> {
    let mut readings = Vec::new();
    for pid in tree(root) {
        match read(pid) {
            Ok(value) => readings.push(Reading {
                pid,
                command: command(pid),
                value,
            }),
            Err(e) if pid == root => return Err(e),
            Err(_) => {}
        }
    }
    Ok(readings)
}

/// RSS and PSS of every process of `root`'s tree.
pub fn tree_memory(root: u32) -> Result<Vec<Reading<Memory>>> {
    read_tree(root, memory)
}

/// The RSS of `root`'s tree summed over its processes (an upper bound: pages
/// they share count once per process), cheap enough to sample under load.
pub fn tree_rss_bytes(root: u32) -> Result<u64> {
    let mut total = rss_bytes(root)?;
    for pid in tree(root).into_iter().skip(1) {
        total += rss_bytes(pid).unwrap_or(0);
    }
    Ok(total)
}

/// CPU seconds of every process of `root`'s tree, each with those of its
/// children that exited and were waited for (`utime + stime + cutime + cstime`),
/// so a child that ran and exited between two readings still counts, in its parent.
pub fn tree_cpu_seconds(root: u32) -> Result<Vec<Reading<f64>>> {
    read_tree(root, |pid| {
        let path = format!("/proc/{pid}/stat");
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        Ok(parse_stat_cpu(&text)? + stat_seconds(&text, [16, 17])?)
    })
}

/// The kernel's share of [`tree_cpu_seconds`]: system CPU seconds of every
/// process of `root`'s tree, with its waited-for children's (`stime + cstime`).
pub fn tree_kernel_cpu_seconds(root: u32) -> Result<Vec<Reading<f64>>> {
    read_tree(root, |pid| {
        let path = format!("/proc/{pid}/stat");
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        kernel_seconds(&text)
    })
}

/// `stime + cstime` of a stat line, in seconds.
fn kernel_seconds(text: &str) -> Result<f64> {
    stat_seconds(text, [15, 17])
}

/// Longest command line kept in a report.
const COMMAND_CHARS: usize = 160;

/// `pid`'s command line with spaces between its arguments, shortened for a
/// report; its name (`comm`) when it has none.
pub fn command(pid: u32) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let line = if args.is_empty() {
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .map(|c| format!("[{}]", c.trim()))
            .unwrap_or_default()
    } else {
        args.join(" ")
    };
    line.chars().take(COMMAND_CHARS).collect()
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
        cores: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map_or_else(|_| "unknown".into(), |s| s.trim().to_string()),
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

    /// User + system CPU seconds `pid` has used so far.
    fn cpu_seconds(pid: u32) -> Result<f64> {
        let path = format!("/proc/{pid}/stat");
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        parse_stat_cpu(&text).with_context(|| format!("parsing {path}"))
    }

    const ROLLUP: &str = "562904de0000-7fff51ebb000 ---p 00000000 00:00 0   [rollup]\n\
        Rss:                1676 kB\nPss:                 319 kB\nPss_Dirty:           112 kB\n";

    #[test]
    fn the_kernel_share_is_stime_and_cstime() {
        // utime 100, stime 30, cutime 7, cstime 5 ticks; a command with a space
        // and a parenthesis.
        let stat = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 100 30 7 5 20 0 1 0";
        assert!((kernel_seconds(stat).unwrap() - 0.35).abs() < 1e-9);
        assert!((parse_stat_cpu(stat).unwrap() - 1.3).abs() < 1e-9);
    }

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

    /// A wrapper that stays alive as the parent of the process doing the work
    /// (as `spin up` does): the tree holds both, and the worker's memory and CPU,
    /// including those of a child it ran and reaped, are counted.
    #[test]
    fn reads_a_process_tree() {
        use std::process::{Command, Stdio};
        // The worker burns ~0.3 s of CPU in a child of its own that exits (and
        // is reaped by it), then sleeps; the wrapper waits.
        let script = "sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done & wait; exec sleep 30' & wait";
        let mut wrapper = Command::new("sh")
            .args(["-c", script])
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let root = wrapper.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let sleeping = loop {
            let pids = tree(root);
            if let Some(&pid) = pids.iter().find(|&&p| command(p).starts_with("sleep 30")) {
                break (pids, pid);
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no sleep under {root}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let (pids, sleeper) = sleeping;
        assert_eq!(pids.len(), 2, "wrapper and worker: {pids:?}");
        assert_eq!(pids[0], root);
        let memory = tree_memory(root).unwrap();
        assert_eq!(memory.len(), 2);
        assert!(memory.iter().all(|r| r.value.pss_bytes > 0));
        assert!(
            tree_rss_bytes(root).unwrap()
                >= memory.iter().map(|r| r.value.rss_bytes).sum::<u64>() / 2
        );
        // The counting loop ran in a child of the worker, reaped before the
        // worker exec'd sleep: its CPU is in the worker's cutime, not in any live process's utime.
        let cpu = tree_cpu_seconds(root).unwrap();
        let worker = cpu.iter().find(|r| r.pid == sleeper).unwrap();
        assert!(worker.value > 0.05, "{cpu:?}");
        assert!(
            cpu_seconds(sleeper).unwrap() < worker.value / 2.0,
            "{cpu:?}"
        );
        let _ = Command::new("kill").arg(sleeper.to_string()).status();
        let _ = wrapper.wait();
        assert!(tree_cpu_seconds(root).is_err());
    }
}
