//! The operator's ceilings on what one instance may take from the host, as
//! flags of `spinbench serve` and `spinbench compare` (which passes them to
//! every runner host it starts, and to the hosts it loads in process). Each
//! bound, its default and the test that proves it: docs/limits.md.

use crate::duration::DurationArg;
use anyhow::{Result, bail};
use clap::Args;
use spinbench_host::{self as host, HostOptions};

const MIB: usize = 1 << 20;

#[derive(Args, Debug, Clone)]
pub struct LimitArgs {
    /// Linear memory (MiB) a component may declare that its instances start with, all its memories together, when that is past --max-instance-memory; past it the component is refused at load.
    #[arg(long, default_value_t = host::PoolSizing::default().max_initial_memory / MIB)]
    pub max_initial_memory: usize,
    /// SQLite heap (MiB) of one instance, all its connections together (databases in memory, page caches, temporary tables, sorts); past it the statement fails with "out of memory".
    #[arg(long, default_value_t = host::BudgetLimits::default().sqlite_memory / MIB)]
    pub max_sqlite_memory: usize,
    /// SQLite connections one instance may have open at once; past it `open` fails.
    #[arg(long, default_value_t = host::BudgetLimits::default().sqlite_connections)]
    pub max_sqlite_connections: usize,
    /// Threads SQLite statements (databases and key-value stores) run on, apart from every other blocking work [default: one per CPU].
    #[arg(long)]
    pub sqlite_threads: Option<usize>,
    /// Memory (MiB) the host may hold for one instance's calls: arguments of calls in flight (a WASIp3 guest may have many) and results it has not read; past it the call fails. Also the most one call may pass the host.
    #[arg(long, default_value_t = host::BudgetLimits::default().held_bytes / MIB)]
    pub max_held_memory: usize,
    /// Live component-model handles one instance may have (resources, and a WASIp3 guest's tasks, streams and futures); past it the guest traps (500).
    #[arg(long, default_value_t = host::GuestLimits::default().max_component_handles)]
    pub max_component_handles: usize,
    /// Sockets (wasi:sockets) one instance may have open at once; past it creating one fails.
    #[arg(long, default_value_t = host::BudgetLimits::default().sockets)]
    pub max_instance_sockets: usize,
    /// Bytes a WAGI program may write to stdout (its response); past it the request gets a 500.
    #[arg(long, default_value_t = host::GuestLimits::default().max_wagi_output)]
    pub max_wagi_output: usize,
    /// How long after its request a request body may still be arriving, however steadily; past it, 408 and the instance is dropped.
    #[arg(long, default_value_t = DurationArg(host::DEFAULT_BODY_TOTAL_TIMEOUT))]
    pub body_total_timeout: DurationArg,
}

impl Default for LimitArgs {
    /// The flags' defaults (the host's own).
    fn default() -> Self {
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            limits: LimitArgs,
        }
        <Only as clap::Parser>::parse_from(["spinbench"]).limits
    }
}

impl LimitArgs {
    /// Sets these limits in `options`, refusing values no host can run with.
    pub fn apply(&self, options: &mut HostOptions) -> Result<()> {
        for (flag, value, most) in [
            ("--max-initial-memory", self.max_initial_memory, 4096),
            ("--max-sqlite-memory", self.max_sqlite_memory, 1 << 20),
            ("--max-held-memory", self.max_held_memory, 4096),
            (
                "--max-component-handles",
                self.max_component_handles,
                1 << 24,
            ),
            ("--max-wagi-output", self.max_wagi_output, usize::MAX),
        ] {
            if value == 0 || value > most {
                bail!("{flag} {value} must be 1 to {most}");
            }
        }
        if self.body_total_timeout.0.is_zero() {
            bail!("--body-total-timeout must be above 0");
        }
        options.pool.max_initial_memory = self.max_initial_memory * MIB;
        options.guest.budget = host::BudgetLimits {
            sqlite_memory: self.max_sqlite_memory * MIB,
            sqlite_connections: self.max_sqlite_connections,
            held_bytes: self.max_held_memory * MIB,
            sockets: self.max_instance_sockets,
        };
        options.guest.max_component_handles = self.max_component_handles;
        options.guest.max_wagi_output = self.max_wagi_output;
        options.body_total_timeout = self.body_total_timeout.0;
        if let Some(threads) = self.sqlite_threads {
            if threads == 0 {
                bail!("--sqlite-threads must be at least 1");
            }
            options.sqlite_threads = threads;
        }
        Ok(())
    }

    /// The same limits as `spinbench serve`'s flags.
    pub fn serve_flags(&self) -> Vec<String> {
        let mut flags = vec![
            ("--max-initial-memory", self.max_initial_memory.to_string()),
            ("--max-sqlite-memory", self.max_sqlite_memory.to_string()),
            (
                "--max-sqlite-connections",
                self.max_sqlite_connections.to_string(),
            ),
            ("--max-held-memory", self.max_held_memory.to_string()),
            (
                "--max-component-handles",
                self.max_component_handles.to_string(),
            ),
            (
                "--max-instance-sockets",
                self.max_instance_sockets.to_string(),
            ),
            ("--max-wagi-output", self.max_wagi_output.to_string()),
            ("--body-total-timeout", self.body_total_timeout.to_string()),
        ];
        if let Some(threads) = self.sqlite_threads {
            flags.push(("--sqlite-threads", threads.to_string()));
        }
        flags
            .into_iter()
            .flat_map(|(flag, value)| [flag.to_string(), value])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        limits: LimitArgs,
    }

    fn parse(args: &[&str]) -> LimitArgs {
        Cli::parse_from(std::iter::once("x").chain(args.iter().copied())).limits
    }

    /// `compare` starts its runner hosts with exactly the limits it was given.
    #[test]
    fn serve_flags_parse_back_to_the_same_limits() {
        let given = parse(&[
            "--max-initial-memory",
            "128",
            "--max-sqlite-memory",
            "64",
            "--sqlite-threads",
            "3",
            "--body-total-timeout",
            "2500ms",
        ]);
        let flags = given.serve_flags();
        let again = parse(&flags.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(format!("{given:?}"), format!("{again:?}"));
        let mut options = HostOptions::default();
        given.apply(&mut options).unwrap();
        assert_eq!(options.pool.max_initial_memory, 128 << 20);
        assert_eq!(options.guest.budget.sqlite_memory, 64 << 20);
        assert_eq!(options.sqlite_threads, 3);
        assert_eq!(options.body_total_timeout.as_millis(), 2500);
    }

    #[test]
    fn the_defaults_are_the_hosts_and_zeros_are_refused() {
        let mut options = HostOptions::default();
        parse(&[]).apply(&mut options).unwrap();
        let defaults = HostOptions::default();
        assert_eq!(
            options.pool.max_initial_memory,
            defaults.pool.max_initial_memory
        );
        assert_eq!(options.guest.budget, defaults.guest.budget);
        assert_eq!(options.sqlite_threads, defaults.sqlite_threads);
        for flag in [
            "--max-sqlite-memory",
            "--max-held-memory",
            "--sqlite-threads",
        ] {
            let error = parse(&[flag, "0"]).apply(&mut HostOptions::default());
            assert!(error.unwrap_err().to_string().contains(flag), "{flag}");
        }
    }
}
