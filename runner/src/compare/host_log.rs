//! Where the hosts' own output goes while `compare` runs: `hosts.log` in the
//! run's results directory, so that the terminal shows the run's progress and
//! its results. Each host process writes its stdout and stderr there, after a
//! line saying which start it is; this process's stderr points there for the
//! run too, so the in-process host's lines (`instance limits: …`,
//! `hello: compiled in …`) land beside theirs. `-v` echoes the log's lines to
//! the terminal as they come.
//!
//! Everything written to the log is written whole lines at a time, each in one
//! write, to a file opened for appending: lines of two writers cannot split
//! each other.

use super::progress::Progress;
use anyhow::{Context, Result};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// How often `-v` looks for new lines in the log.
const ECHO_EVERY: Duration = Duration::from_millis(100);
/// The most of a host's output read back for its last line (its error is at the end).
const TAIL_BYTES: u64 = 64 * 1024;

/// The log of the run in progress, and the terminal's stderr while it runs.
struct Current {
    path: Option<PathBuf>,
    /// This process's stderr as it was before the run pointed it at the log.
    terminal: Option<File>,
}

fn current() -> MutexGuard<'static, Current> {
    static CURRENT: Mutex<Current> = Mutex::new(Current {
        path: None,
        terminal: None,
    });
    CURRENT.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The run's log; dropping it points stderr back at the terminal.
pub struct HostLog {
    echo: Option<Echo>,
}

impl HostLog {
    /// Creates `path` and points this process's stderr at it; with `echo`,
    /// its lines also go to the terminal, above the progress line.
    pub fn start(path: &Path, echo: Option<Progress>) -> Result<HostLog> {
        File::create(path).with_context(|| format!("creating {}", path.display()))?;
        // Appending from here on: each write lands whole at the end, whoever writes.
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        let terminal = File::from(std::io::stderr().as_fd().try_clone_to_owned()?);
        rustix::stdio::dup2_stderr(&file).context("pointing stderr at the host log")?;
        {
            let mut current = current();
            current.path = Some(path.to_path_buf());
            current.terminal = Some(terminal);
        }
        restore_stderr_on_panic();
        Ok(HostLog {
            echo: echo
                .map(|progress| Echo::start(path, progress))
                .transpose()?,
        })
    }
}

impl Drop for HostLog {
    fn drop(&mut self) {
        if let Some(echo) = self.echo.take() {
            echo.stop();
        }
        restore_stderr();
        current().path = None;
    }
}

/// Points stderr back at the terminal, if the run had pointed it at the log.
fn restore_stderr() {
    if let Some(terminal) = current().terminal.take() {
        let _ = rustix::stdio::dup2_stderr(&terminal);
    }
}

/// A panic's message goes to the terminal, not into the log.
fn restore_stderr_on_panic() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore_stderr();
        previous(info);
    }));
}

/// One line for the person at the terminal while the run's stderr is the log
/// (e.g. that the run was interrupted), written in one write.
pub fn to_terminal(text: &str) {
    let mut current = current();
    match current.terminal.as_mut() {
        Some(terminal) => {
            let _ = spinbench_host::lines::write_whole_lines(terminal, text);
        }
        None => spinbench_host::lines::stderr(text),
    }
}

/// Where a host's output goes: the run's log, or (outside a run: tests) a
/// file of this process's in the temporary directory.
fn log_path() -> PathBuf {
    current().path.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("spinbench-hosts-{}.log", std::process::id()))
    })
}

/// A host's output in the log: where its lines start.
#[derive(Debug, Clone)]
pub struct Output {
    pub path: PathBuf,
    /// The log's length when the host started: its lines are after it.
    pub from: u64,
}

impl Output {
    /// The log, opened for a host's stdout and stderr, after a line that says
    /// which start this is (`==> start-hello-wasm: spinbench serve … <==`).
    pub fn for_host(label: &str, command: &std::process::Command) -> Result<(Output, File)> {
        let path = log_path();
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        let words: Vec<String> = std::iter::once(command.get_program())
            .chain(command.get_args())
            .map(|w| w.to_string_lossy().into_owned())
            .collect();
        let header = format!("==> {label}: {} <==\n", words.join(" "));
        file.write_all(header.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        let from = file.metadata()?.len();
        Ok((Output { path, from }, file))
    }

    /// What the host said: its last `Error:` line (a backtrace may follow it,
    /// as from `wasmtime serve`), else its last non-empty line; at most 300
    /// characters. Read from the end of the log, at most [`TAIL_BYTES`].
    pub fn last_line(&self) -> String {
        let text = self.tail().unwrap_or_default();
        let lines = || {
            text.lines()
                .rev()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("==> "))
        };
        let line = lines()
            .find(|l| l.to_ascii_lowercase().starts_with("error"))
            .or_else(|| lines().next())
            .unwrap_or("");
        line.chars().take(300).collect()
    }

    fn tail(&self) -> std::io::Result<String> {
        let mut file = File::open(&self.path)?;
        let end = file.metadata()?.len();
        let start = self.from.max(end.saturating_sub(TAIL_BYTES));
        file.seek(SeekFrom::Start(start))?;
        let mut bytes = Vec::new();
        file.take(end - start).read_to_end(&mut bytes)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// `hosts.log, from line 1234`: where to read what the host said.
    pub fn describe(&self) -> String {
        let line = File::open(&self.path)
            .and_then(|f| {
                let mut prefix = Vec::new();
                f.take(self.from).read_to_end(&mut prefix)?;
                // Lines before the host's: one more piece than newlines.
                Ok(prefix.split(|b| *b == b'\n').count())
            })
            .unwrap_or(1);
        format!("{}, from line {line}", self.path.display())
    }
}

/// `-v`: a thread that copies the log's new lines to the terminal, whole.
struct Echo {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Echo {
    fn start(path: &Path, progress: Progress) -> Result<Echo> {
        let mut file = File::open(path).with_context(|| format!("reading {}", path.display()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("host-log-echo".into())
            .spawn(move || {
                let mut pending = Vec::new();
                loop {
                    let last = stopping.load(Ordering::Relaxed);
                    let mut chunk = Vec::new();
                    if file.read_to_end(&mut chunk).is_ok() {
                        pending.extend_from_slice(&chunk);
                    }
                    while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = pending.drain(..=end).collect();
                        progress.line(String::from_utf8_lossy(&line).trim_end());
                    }
                    if last {
                        break;
                    }
                    std::thread::sleep(ECHO_EVERY);
                }
                if !pending.is_empty() {
                    progress.line(String::from_utf8_lossy(&pending).trim_end());
                }
            })
            .context("starting the -v echo")?;
        Ok(Echo { stop, thread })
    }

    /// Echoes what is left, then ends.
    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host's last line is read from its own part of the log: the error of
    /// the host before it is not taken for its own.
    #[test]
    fn a_hosts_last_line_is_its_own() {
        let path = std::env::temp_dir().join(format!(
            "spinbench-host-log-test-{}.log",
            std::process::id()
        ));
        std::fs::write(
            &path,
            "==> start-a: a <==\nError: the first host's\n==> start-b: b <==\nserving\nbacktrace\n",
        )
        .unwrap();
        let from = "==> start-a: a <==\nError: the first host's\n==> start-b: b <==\n".len() as u64;
        let output = Output {
            path: path.clone(),
            from,
        };
        assert_eq!(output.last_line(), "backtrace");
        assert!(
            output.describe().ends_with(".log, from line 4"),
            "{}",
            output.describe()
        );
        let earlier = Output {
            path: path.clone(),
            from: 0,
        };
        assert_eq!(earlier.last_line(), "Error: the first host's");
        std::fs::remove_file(path).unwrap();
    }
}
