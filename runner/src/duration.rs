//! The value of every duration flag: `30s`, `500ms`, `250us`, `10ns`, or bare
//! seconds (`30`, `0.5`), as Spin's HTTP trigger reads `--request-timeout` and
//! `--idle-instance-timeout` (spinframework/spin `crates/trigger-http/src/lib.rs`,
//! `ParsedDuration`), and fractions too, which the runner always accepted.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A duration given on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurationArg(pub Duration);

/// Suffixes and the seconds they stand for; longer suffixes first (`ms` before `s`).
const UNITS: [(&str, f64); 5] = [
    ("ms", 1e-3),
    ("us", 1e-6),
    ("μs", 1e-6),
    ("ns", 1e-9),
    ("s", 1.0),
];

impl FromStr for DurationArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (number, scale) = UNITS
            .iter()
            .find_map(|(suffix, scale)| Some((text.strip_suffix(suffix)?, *scale)))
            .unwrap_or((text, 1.0));
        let value: f64 = number.trim().parse().map_err(|_| {
            format!("{text:?} is not a duration: give seconds, or a number with s, ms, us or ns")
        })?;
        Duration::try_from_secs_f64(value * scale)
            .map(DurationArg)
            .map_err(|e| format!("{text:?}: {e}"))
    }
}

/// The shortest exact form (`1s`, `500ms`, `1.5s`), for `--help`'s defaults.
impl fmt::Display for DurationArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nanos = self.0.as_nanos();
        match nanos {
            n if n % 1_000_000_000 == 0 => write!(f, "{}s", n / 1_000_000_000),
            n if n % 1_000_000 == 0 => write!(f, "{}ms", n / 1_000_000),
            n if n % 1_000 == 0 => write!(f, "{}us", n / 1_000),
            n => write!(f, "{n}ns"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Duration, String> {
        text.parse::<DurationArg>().map(|d| d.0)
    }

    #[test]
    fn spin_forms_and_bare_seconds_parse() {
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse("250μs"), Ok(Duration::from_micros(250)));
        assert_eq!(parse("10ns"), Ok(Duration::from_nanos(10)));
        assert_eq!(parse("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
    }

    #[test]
    fn nonsense_and_negative_durations_are_refused() {
        for bad in ["", "s", "ten", "5m", "1h", "-1", "-1s", "1 2s", "inf"] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn display_round_trips() {
        for text in ["1s", "500ms", "250us", "7ns", "90s"] {
            assert_eq!(text.parse::<DurationArg>().unwrap().to_string(), text);
        }
        assert_eq!(
            DurationArg(Duration::from_millis(1500)).to_string(),
            "1500ms"
        );
    }
}
