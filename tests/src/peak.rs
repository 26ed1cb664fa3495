//! The peak resident memory of a command run to its end, as the kernel
//! counts it (`getrusage(RUSAGE_CHILDREN).ru_maxrss`), read through
//! `python3`'s `resource` module, which wraps the command: a bound on what a
//! process held at any moment, not a sample.

use crate::on_path;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Runs the command through its Python wrapper, which writes the peak to a file.
const WRAPPER: &str = "import resource, subprocess, sys\n\
    code = subprocess.call(sys.argv[2:])\n\
    open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n\
    sys.exit(code)\n";

/// `program` with its arguments, to be measured; `None` (after one
/// "skipped" line) where there is no `python3`.
pub struct Measured {
    pub command: Command,
    report: PathBuf,
}

impl Measured {
    pub fn new(program: &Path, report_dir: &Path) -> Option<Measured> {
        static REPORTS: AtomicU32 = AtomicU32::new(0);
        let Some(python) = on_path("python3") else {
            eprintln!("skipped: peak memory needs python3");
            return None;
        };
        let n = REPORTS.fetch_add(1, Ordering::Relaxed);
        let report = report_dir.join(format!("peak-{n}"));
        let mut command = Command::new(python);
        command.arg("-c").arg(WRAPPER).arg(&report).arg(program);
        Some(Measured { command, report })
    }

    /// The peak resident set of the command (KiB), once it has ended.
    pub fn peak_kib(&self) -> u64 {
        let text = std::fs::read_to_string(&self.report).expect("the wrapper's report");
        text.trim().parse().expect("a number of KiB")
    }
}
