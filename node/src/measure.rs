//! What a node's pods cost it, read from /proc and the cgroup hierarchy: the PSS
//! of every process the pods added (the shims and everything below them), their
//! CPU time, and the memory charged to the pods' cgroups.

use crate::procs::{self, Process};
use std::path::Path;

/// The processes the pods of containerd `socket` added: every shim given that
/// socket and everything below it (zygotes, containers, pause processes).
pub fn pod_processes(socket: &str) -> Vec<u32> {
    let table = procs::all();
    let shims: Vec<u32> = table
        .iter()
        .filter(|p| {
            p.argv
                .first()
                .is_some_and(|a| a.contains("containerd-shim"))
                && procs::argv_has(&p.argv, "-address", socket)
        })
        .map(|p| p.pid)
        .collect();
    procs::with_descendants(&shims, &table)
}

/// The processes among `pids` that are shims (their own arguments say so).
pub fn shims_among(pids: &[u32], table: &[Process]) -> usize {
    table
        .iter()
        .filter(|p| pids.contains(&p.pid))
        .filter(|p| {
            p.argv
                .first()
                .is_some_and(|a| a.contains("containerd-shim"))
        })
        .count()
}

/// The summed PSS of `pids` in KiB (smaps_rollup): pages shared between them
/// counted once overall.
pub fn pss_kib(pids: &[u32]) -> u64 {
    pids.iter().map(|pid| rollup_field(*pid, "Pss:")).sum()
}

/// One field of a process's smaps_rollup, in KiB (0 if it is gone).
pub fn rollup_field(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The CPU time `pids` have used, user and system, in clock ticks.
pub fn cpu_ticks(pids: &[u32]) -> u64 {
    pids.iter()
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let rest = &stat[stat.rfind(')')? + 2..];
            let fields: Vec<&str> = rest.split(' ').collect();
            // utime and stime: the 14th and 15th fields, 12th and 13th after ")".
            Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
        })
        .sum()
}

/// Clock ticks per second (`getconf CLK_TCK`: 100 on Linux).
pub const TICKS_PER_S: u64 = 100;

/// Memory charged to cgroup `name` (relative to the hierarchy's root) and below
/// it, in KiB: `memory.usage_in_bytes` (v1) or `memory.current` (v2).
pub fn cgroup_memory_kib(name: &str) -> Option<u64> {
    let name = name.trim_start_matches('/');
    let root = Path::new("/sys/fs/cgroup");
    [
        root.join("memory").join(name).join("memory.usage_in_bytes"),
        root.join(name).join("memory.current"),
    ]
    .iter()
    .find_map(|file| {
        std::fs::read_to_string(file)
            .ok()?
            .trim()
            .parse::<u64>()
            .ok()
    })
    .map(|bytes| bytes / 1024)
}

/// MemAvailable from /proc/meminfo, in KiB.
pub fn available_kib() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The PSS of `pids` by role: each process named by its program and its depth
/// below the shim it runs under (`containerd-shim-runc-v2/0` is a shim,
/// `spinbench-pause/2` a pause process two levels below one), summed per role.
pub fn pss_by_role(pids: &[u32], table: &[Process]) -> std::collections::BTreeMap<String, u64> {
    let by_pid: std::collections::HashMap<u32, &Process> =
        table.iter().map(|p| (p.pid, p)).collect();
    let mut roles = std::collections::BTreeMap::new();
    for &pid in pids {
        let Some(process) = by_pid.get(&pid) else {
            continue;
        };
        let mut depth = 0;
        let mut up = process.ppid;
        while let Some(parent) = by_pid.get(&up).filter(|p| pids.contains(&p.pid)) {
            depth += 1;
            up = parent.ppid;
        }
        let program = process
            .argv
            .first()
            .map(|a| a.rsplit('/').next().unwrap_or(a).to_string())
            .unwrap_or_default();
        *roles.entry(format!("{program}/{depth}")).or_insert(0) += rollup_field(pid, "Pss:");
    }
    roles
}
