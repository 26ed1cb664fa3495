//! The vocabulary `compare` measures in and `report` writes and reads back: the
//! measurements, and which hosts are the native side of a comparison. Both depend
//! on this module; neither on the other for it.

use serde::Serialize;
use std::fmt;

/// One measurement of `compare`; its report name is its `snake_case` variant name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Measurement {
    BuildAndSize,
    InstanceColdStart,
    HashingPerCore,
    ProcessColdStart,
    Memory,
    Load,
}

impl Measurement {
    /// Every measurement, in the order they run and are reported.
    pub const ALL: [Measurement; 6] = [
        Measurement::BuildAndSize,
        Measurement::InstanceColdStart,
        Measurement::HashingPerCore,
        Measurement::ProcessColdStart,
        Measurement::Memory,
        Measurement::Load,
    ];

    /// Its name in the report and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Measurement::BuildAndSize => "build_and_size",
            Measurement::InstanceColdStart => "instance_cold_start",
            Measurement::HashingPerCore => "hashing_per_core",
            Measurement::ProcessColdStart => "process_cold_start",
            Measurement::Memory => "memory",
            Measurement::Load => "load",
        }
    }

    /// Every measurement's name, in order (`--measurements`' default).
    pub fn names() -> [&'static str; 6] {
        Measurement::ALL.map(Measurement::name)
    }

    pub fn parse(name: &str) -> Option<Measurement> {
        Measurement::ALL.into_iter().find(|m| m.name() == name)
    }
}

impl fmt::Display for Measurement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Hosts that are the native side of a comparison: the native server, its
/// in-process and per-process floors (`native-fn`, `native-process`), and the
/// benchmark file's native variants, which it names `native-<variant>`.
pub fn is_baseline(host: &str) -> bool {
    host.starts_with("native")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_reports_and_parse_back() {
        for m in Measurement::ALL {
            assert_eq!(serde_json::to_value(m).unwrap(), m.name());
            assert_eq!(Measurement::parse(m.name()), Some(m));
        }
        assert_eq!(Measurement::parse("speed"), None);
    }
}
