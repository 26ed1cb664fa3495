//! The benchmark file's `[[service]]`s (what the app's outbound calls reach),
//! running for the length of a run: each started in the file's directory, in a
//! process group of its own, before the first measurement; waited for until its
//! `ready` address accepts a connection; stopped with everything it started when
//! the run ends, fails or is interrupted (`group`).

use super::group::Group;
use super::host_log::Output;
use crate::benchfile::Service;
use anyhow::{Context, Result, bail};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The running services; dropping it stops them.
pub struct Running {
    /// In start order; dropped (stopped) in the same order.
    _groups: Vec<Group>,
}

/// Starts every service and waits until each accepts connections.
pub fn start(services: &[Service], dir: &Path) -> Result<Running> {
    let mut groups = Vec::with_capacity(services.len());
    for service in services {
        let label = format!("service-line-{}", service.line);
        let mut cmd = Command::new(&service.command.program);
        cmd.args(&service.command.args).current_dir(dir);
        let (output, log) = Output::for_host(&label, &cmd)?;
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let group = Group::spawn(&mut cmd).with_context(|| {
            format!("starting the [[service]] of line {}: {cmd:?}", service.line)
        })?;
        wait_ready(&group, service, &output)?;
        groups.push(group);
    }
    Ok(Running { _groups: groups })
}

/// Polls `service.ready` with TCP connects; fails fast if the process exits.
fn wait_ready(group: &Group, service: &Service, output: &Output) -> Result<()> {
    let started = Instant::now();
    while started.elapsed() < service.ready_timeout {
        if let Some(status) = group.exited() {
            bail!(
                "the [[service]] of line {} exited ({status}) before accepting on {}: {}",
                service.line,
                service.ready,
                output.last_line()
            );
        }
        if TcpStream::connect_timeout(&service.ready, Duration::from_millis(100)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    bail!(
        "the [[service]] of line {} did not accept on {} within {:?}; its output: {}",
        service.line,
        service.ready,
        service.ready_timeout,
        output.describe()
    )
}
