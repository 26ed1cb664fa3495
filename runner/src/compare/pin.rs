//! The load generator on cores of its own. On a machine it shares with the
//! server, a load generator takes CPU the server would otherwise get, and how
//! much depends on the generator and on the rate: measured from outside (issue
//! 22), `hello`'s wasm/native throughput read 0.25× under `wrk -t1` and 0.32×
//! under oha on the same two cores. So `compare` gives the server's process
//! tree and the generators disjoint CPU sets (`--pin`): set in the child between
//! fork and exec (`sched_setaffinity(2)`), so that every thread and process the
//! server starts later inherits it.

use crate::report::PinInfo;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::str::FromStr;

/// A set of CPUs, numbered as the kernel numbers them; sorted, without repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cpus(Vec<usize>);

impl Cpus {
    pub fn new(mut cpus: Vec<usize>) -> Cpus {
        cpus.sort_unstable();
        cpus.dedup();
        Cpus(cpus)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn list(&self) -> &[usize] {
        &self.0
    }

    fn overlaps(&self, other: &Cpus) -> bool {
        self.0.iter().any(|c| other.0.contains(c))
    }

    fn within(&self, other: &Cpus) -> bool {
        self.0.iter().all(|c| other.0.contains(c))
    }

    /// The CPUs this process may run on (its affinity: `taskset` and cgroup
    /// cpusets narrow it).
    #[allow(
        unsafe_code,
        reason = "sched_getaffinity(2) through libc; sound as the SAFETY comment says"
    )]
    pub fn available() -> io::Result<Cpus> {
        // SAFETY: the set is a zeroed plain-data struct we own, its size passed
        // with it; CPU_ISSET reads within it (i < CPU_SETSIZE).
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &raw mut set) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(Cpus(
                (0..libc::CPU_SETSIZE as usize)
                    .filter(|&i| libc::CPU_ISSET(i, &set))
                    .collect(),
            ))
        }
    }

    /// The kernel's set, for `sched_setaffinity`.
    #[allow(
        unsafe_code,
        reason = "CPU_ZERO/CPU_SET through libc; sound as the SAFETY comment says"
    )]
    fn cpu_set(&self) -> io::Result<libc::cpu_set_t> {
        if let Some(&cpu) = self.0.iter().find(|&&c| c >= libc::CPU_SETSIZE as usize) {
            return Err(io::Error::other(format!(
                "CPU {cpu} is past the kernel's CPU_SETSIZE"
            )));
        }
        // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes bit `c`
        // inside it, c < CPU_SETSIZE (checked above).
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_ZERO(&mut set);
            for &c in &self.0 {
                libc::CPU_SET(c, &mut set);
            }
            Ok(set)
        }
    }

    /// Makes `cmd`'s process, and everything it starts, run on these CPUs
    /// only. Set between fork and exec, so it holds from the first instruction
    /// of the program (its thread pools are sized by it) and is inherited by
    /// every thread and child.
    #[allow(
        unsafe_code,
        reason = "pre_exec with sched_setaffinity(2); sound as the SAFETY comment says"
    )]
    pub fn apply(&self, cmd: &mut Command) -> io::Result<()> {
        let set = self.cpu_set()?;
        // SAFETY: the closure runs in the forked child before exec; it makes one
        // system call, async-signal-safe, on a set built before the fork (moved
        // in, `Copy`), and allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                if libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &raw const set) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(())
    }
}

/// `0-2,5`, as the kernel writes CPU lists (`Cpus_allowed_list`).
impl std::fmt::Display for Cpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        for &c in &self.0 {
            match ranges.last_mut() {
                Some((_, end)) if *end + 1 == c => *end = c,
                _ => ranges.push((c, c)),
            }
        }
        let text: Vec<String> = ranges
            .iter()
            .map(|&(a, b)| {
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                }
            })
            .collect();
        f.write_str(&text.join(","))
    }
}

/// A CPU list as the kernel and `taskset -c` write them: `0-2,5`.
impl FromStr for Cpus {
    type Err = String;

    fn from_str(list: &str) -> Result<Cpus, String> {
        let mut cpus = Vec::new();
        for part in list.split(',') {
            let number = |s: &str| {
                s.trim()
                    .parse::<usize>()
                    .map_err(|_| format!("{s:?} is not a CPU number (in the CPU list {list:?})"))
            };
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (number(a)?, number(b)?);
                    if a > b {
                        return Err(format!("CPU range {part:?} runs backwards"));
                    }
                    cpus.extend(a..=b);
                }
                None => cpus.push(number(part)?),
            }
        }
        Ok(Cpus::new(cpus))
    }
}

/// `--pin`: how the server and the load generators share the CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinArg {
    /// Everything on every CPU, as the scheduler places it.
    Off,
    /// With at least 2 CPUs, split them ([`auto_split`]); else off.
    Auto,
    /// `SERVER_CPUS:GENERATOR_CPUS`.
    Split { server: Cpus, generator: Cpus },
}

impl FromStr for PinArg {
    type Err = String;

    fn from_str(s: &str) -> Result<PinArg, String> {
        match s {
            "off" => Ok(PinArg::Off),
            "auto" => Ok(PinArg::Auto),
            _ => {
                let (server, generator) = s.split_once(':').ok_or_else(|| {
                    format!("--pin {s:?}: expected off, auto or SERVER_CPUS:GENERATOR_CPUS (e.g. 0:1, 0-1:2-3)")
                })?;
                let (server, generator): (Cpus, Cpus) = (server.parse()?, generator.parse()?);
                if server.is_empty() || generator.is_empty() {
                    return Err(format!("--pin {s:?}: both CPU sets need a CPU"));
                }
                if server.overlaps(&generator) {
                    return Err(format!(
                        "--pin {s:?}: the server's and the generator's CPUs overlap"
                    ));
                }
                Ok(PinArg::Split { server, generator })
            }
        }
    }
}

/// The split `--pin auto` makes of `available`: the first half (the larger
/// one when odd) for the server, the rest for the generator; one each on two
/// CPUs. `None` below two CPUs. The server gets at least as many as the
/// generator, as what is measured is the server.
pub fn auto_split(available: &Cpus) -> Option<(Cpus, Cpus)> {
    let n = available.len();
    if n < 2 {
        return None;
    }
    let server = n - n / 2;
    Some((
        Cpus(available.0[..server].to_vec()),
        Cpus(available.0[server..].to_vec()),
    ))
}

/// What this run does with the CPUs.
#[derive(Debug, Clone)]
pub struct Pinning {
    mode: &'static str,
    /// Both set, or neither.
    split: Option<(Cpus, Cpus)>,
    /// The machine's cores as the report counts them, for an unpinned run.
    machine_cores: usize,
    note: String,
}

impl Pinning {
    /// `--pin` resolved against the CPUs this process may use, on a machine
    /// of `machine_cores` (the report's `machine.cores`).
    pub fn resolve(
        arg: &PinArg,
        available: &Cpus,
        machine_cores: usize,
    ) -> Result<Pinning, String> {
        let mut pinning = match arg {
            PinArg::Off => Pinning::off(
                "off",
                "--pin off: server and load generators share every CPU".into(),
            ),
            PinArg::Auto => match auto_split(available) {
                Some(split) => Pinning::split("auto", split),
                None => Pinning::off(
                    "auto",
                    format!(
                        "one CPU ({available}): server and load generators share it, nothing to pin"
                    ),
                ),
            },
            PinArg::Split { server, generator } => {
                for set in [server, generator] {
                    if !set.within(available) {
                        return Err(format!(
                            "--pin: CPUs {set} are not all available to this process (it may use {available})"
                        ));
                    }
                }
                Pinning::split("manual", (server.clone(), generator.clone()))
            }
        };
        pinning.machine_cores = machine_cores.max(1);
        Ok(pinning)
    }

    fn off(mode: &'static str, note: String) -> Pinning {
        Pinning {
            mode,
            split: None,
            machine_cores: 1,
            note,
        }
    }

    fn split(mode: &'static str, (server, generator): (Cpus, Cpus)) -> Pinning {
        let note = format!(
            "server's process tree on CPU {server}, load generators (oha, wrk) on CPU {generator}; per-core figures and users counted in the server's {} CPU(s)",
            server.len()
        );
        Pinning {
            mode,
            split: Some((server, generator)),
            machine_cores: 1,
            note,
        }
    }

    pub fn server(&self) -> Option<&Cpus> {
        self.split.as_ref().map(|(s, _)| s)
    }

    pub fn generator(&self) -> Option<&Cpus> {
        self.split.as_ref().map(|(_, g)| g)
    }

    /// The cores the load scenarios are sized for and per-core figures divided
    /// by: the server's share when pinned, else the machine's.
    pub fn server_cores(&self) -> usize {
        self.server().map_or(self.machine_cores, Cpus::len)
    }

    /// The cores the load generators may use.
    pub fn generator_cores(&self) -> usize {
        self.generator().map_or(self.machine_cores, Cpus::len)
    }

    pub fn info(&self) -> PinInfo {
        PinInfo {
            mode: self.mode,
            server_cpus: self.server().map(|c| c.list().to_vec()),
            generator_cpus: self.generator().map(|c| c.list().to_vec()),
            note: self.note.clone(),
        }
    }
}

/// Pins `cmd` to `cpus` if there are any.
pub fn apply(cmd: &mut Command, cpus: Option<&Cpus>) -> io::Result<()> {
    cpus.map_or(Ok(()), |c| c.apply(cmd))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpus(list: &str) -> Cpus {
        list.parse().unwrap()
    }

    #[test]
    fn cpu_lists_read_and_write_as_the_kernel_writes_them() {
        assert_eq!(cpus("0-2,5").list(), [0, 1, 2, 5]);
        assert_eq!(cpus("3,1,1").list(), [1, 3]);
        assert_eq!(cpus("0-2,5,7-8").to_string(), "0-2,5,7-8");
        assert_eq!(cpus("4").to_string(), "4");
        for bad in ["", "a", "2-1", "1,,2", "-1"] {
            assert!(bad.parse::<Cpus>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_pin_flag() {
        assert_eq!("off".parse::<PinArg>(), Ok(PinArg::Off));
        assert_eq!("auto".parse::<PinArg>(), Ok(PinArg::Auto));
        assert_eq!(
            "0-1:2".parse::<PinArg>(),
            Ok(PinArg::Split {
                server: cpus("0-1"),
                generator: cpus("2")
            })
        );
        for bad in ["on", "0:0", "0-2:2", ":1", "0:", "0;1"] {
            assert!(bad.parse::<PinArg>().is_err(), "{bad:?}");
        }
    }

    /// Two CPUs: one each. Odd counts: the server gets the larger half. One
    /// CPU: nothing to pin, and the report says so.
    #[test]
    fn auto_splits_the_available_cpus() {
        let split =
            |list: &str| auto_split(&cpus(list)).map(|(s, g)| (s.to_string(), g.to_string()));
        assert_eq!(split("0-1"), Some(("0".into(), "1".into())));
        assert_eq!(split("0-2"), Some(("0-1".into(), "2".into())));
        assert_eq!(split("0-7"), Some(("0-3".into(), "4-7".into())));
        assert_eq!(split("2,5"), Some(("2".into(), "5".into())));
        assert_eq!(split("3"), None);

        let two = Pinning::resolve(&PinArg::Auto, &cpus("0-1"), 2).unwrap();
        let info = two.info();
        assert_eq!(
            (info.mode, info.server_cpus, info.generator_cpus),
            ("auto", Some(vec![0]), Some(vec![1]))
        );
        assert_eq!((two.server_cores(), two.generator_cores()), (1, 1));
        let one = Pinning::resolve(&PinArg::Auto, &cpus("0"), 1).unwrap();
        assert!(one.server().is_none() && one.info().note.starts_with("one CPU"));
        assert_eq!((one.server_cores(), one.generator_cores()), (1, 1));
        let off = Pinning::resolve(&PinArg::Off, &cpus("0-3"), 4).unwrap();
        assert_eq!((off.server_cores(), off.info().server_cpus), (4, None));
        assert_eq!(off.info().mode, "off");
        // A manual split must use CPUs this process has.
        let manual = "0:3".parse().unwrap();
        assert!(Pinning::resolve(&manual, &cpus("0-1"), 2).is_err());
        let pinned = Pinning::resolve(&manual, &cpus("0-3"), 4).unwrap();
        assert_eq!((pinned.server_cores(), pinned.generator_cores()), (1, 1));
        let info = pinned.info();
        assert_eq!((info.mode, info.generator_cpus), ("manual", Some(vec![3])));
    }

    /// A pinned child runs on its CPU only, and so do the processes it starts.
    #[test]
    fn a_pinned_command_and_its_children_run_on_its_cpus() {
        let first = Cpus::available().unwrap().list()[0];
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "grep Cpus_allowed_list /proc/self/status; sh -c 'grep Cpus_allowed_list /proc/self/status'",
        ]);
        Cpus::new(vec![first]).apply(&mut cmd).unwrap();
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let lists: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split(':').nth(1).map(str::trim))
            .collect();
        assert_eq!(lists, [first.to_string(), first.to_string()], "{text}");
        // A CPU the kernel cannot name is refused before the fork.
        assert!(
            Cpus::new(vec![1 << 20])
                .apply(&mut Command::new("true"))
                .is_err()
        );
    }
}
