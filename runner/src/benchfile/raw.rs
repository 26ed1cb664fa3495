//! The benchmark file as written: serde types that mirror its TOML one to one.
//! Every table denies unknown keys, and each value that has a shape of its own
//! (a method, a duration, a user count) checks it while being read, so a bad
//! value fails with TOML's own `line N, column M` pointer. Checks that span
//! several keys are made by `super::resolve`, from the spans kept here.

use serde::Deserialize;
use serde::de::{self, Deserializer};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    /// The Spin manifest, relative to the benchmark file.
    pub manifest: Option<PathBuf>,
    /// The WASIp3 flavour's manifest (the `wasm-p3` host), if the app has one.
    pub p3_manifest: Option<PathBuf>,
    /// Spin's runtime config file (key-value stores, SQLite databases), as
    /// `spin up --runtime-config-file` takes it.
    pub runtime_config: Option<PathBuf>,
    #[serde(default)]
    pub service: Vec<Spanned<Service>>,
    #[serde(default)]
    pub component: Vec<Spanned<Component>>,
}

/// A local process the app's outbound calls reach, started for the run.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Service {
    pub command: Spanned<String>,
    /// The `127.0.0.1:PORT` it accepts TCP connections on once ready.
    pub ready: Spanned<String>,
    pub ready_timeout: Option<Seconds>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Component {
    pub id: Spanned<String>,
    /// Another app's manifest the component is in, relative to the benchmark
    /// file (the same hello written in another language, say).
    pub manifest: Option<PathBuf>,
    pub probe: Spanned<Request>,
    pub native: Option<Native>,
    #[serde(default)]
    pub load: Vec<Spanned<Load>>,
    pub memory: Option<Memory>,
    pub hashing_per_core: Option<Hashing>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    #[serde(default)]
    pub method: Method,
    pub path: Path,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub body: Option<String>,
    pub body_bytes: Option<usize>,
    /// Only meaningful in `probe`: the status that means "ready".
    pub status: Option<Status>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Native {
    pub command: Spanned<String>,
    #[serde(default)]
    pub plain_calls: bool,
    #[serde(default)]
    pub variant: Vec<Variant>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub host: Spanned<String>,
    pub command: Spanned<String>,
    pub build: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Load {
    pub users: Users,
    pub request: Option<Spanned<Request>>,
    pub ceiling: Option<f64>,
    pub steady_state: Option<SteadyState>,
    #[serde(default)]
    pub per_core: bool,
    #[serde(default)]
    pub throughput: Throughput,
    pub quick: Option<Quick>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SteadyState {
    pub ramp_up: Seconds,
}

/// `quick = false` (full runs only), or what `--quick` changes.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Quick {
    Runs(bool),
    Changes(QuickChanges),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuickChanges {
    pub users: Option<Users>,
    /// Not `Spanned`: an untagged enum reads its variants from a buffer, without spans.
    pub request: Option<Request>,
    pub ramp_up: Option<Seconds>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    pub hold: Spanned<Request>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hashing {
    pub request: Spanned<Request>,
    pub quick_body_bytes: Option<usize>,
    pub openssl_speed: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Throughput {
    #[default]
    Requests,
    Bytes,
}

/// An HTTP method: an upper-case token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Method(pub String);

impl Default for Method {
    fn default() -> Self {
        Method("GET".into())
    }
}

impl<'de> Deserialize<'de> for Method {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let token = !s.is_empty() && s.bytes().all(|b| b.is_ascii_uppercase());
        if token {
            Ok(Method(s))
        } else {
            Err(de::Error::custom(format!(
                "method {s:?} is not an upper-case HTTP method (GET, POST, ...)"
            )))
        }
    }
}

/// A request target: a path starting with `/`, with an optional query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path(pub String);

impl<'de> Deserialize<'de> for Path {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.starts_with('/')
            && !s
                .bytes()
                .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
        {
            Ok(Path(s))
        } else {
            Err(de::Error::custom(format!(
                "path {s:?} must start with '/' and hold no spaces (percent-encode them)"
            )))
        }
    }
}

/// An HTTP status code, 100 to 599.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status(pub u16);

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = i64::deserialize(d)?;
        match u16::try_from(n) {
            Ok(code @ 100..=599) => Ok(Status(code)),
            _ => Err(de::Error::custom(format!(
                "status {n} is not an HTTP status (100 to 599)"
            ))),
        }
    }
}

/// Users of a load scenario: a number, or a multiple of the machine's cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Users {
    Fixed(usize),
    PerCore(usize),
}

impl<'de> Deserialize<'de> for Users {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Number(i64),
            Text(String),
        }
        let bad = |what: &str| {
            de::Error::custom(format!(
                "users {what} must be a positive number, \"cores\" or \"N*cores\""
            ))
        };
        match Written::deserialize(d)? {
            Written::Number(n) if n >= 1 => Ok(Users::Fixed(n as usize)),
            Written::Number(n) => Err(bad(&n.to_string())),
            Written::Text(s) => {
                let factor = match s.trim().strip_suffix("cores") {
                    Some("") => Some(1),
                    Some(n) => n
                        .trim()
                        .strip_suffix('*')
                        .and_then(|n| n.trim().parse().ok()),
                    None => None,
                };
                match factor {
                    Some(n) if n >= 1 => Ok(Users::PerCore(n)),
                    _ => Err(bad(&format!("{s:?}"))),
                }
            }
        }
    }
}

/// A duration: `"300ms"`, `"3s"`, or a number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seconds(pub Duration);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Number(f64),
            Text(String),
        }
        let parsed = match Written::deserialize(d)? {
            Written::Number(s) => Duration::try_from_secs_f64(s).ok(),
            Written::Text(s) => parse_duration(&s),
        };
        parsed.map(Seconds).ok_or_else(|| {
            de::Error::custom("a duration is \"300ms\", \"3s\" or a number of seconds")
        })
    }
}

fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (number, scale) = if let Some(ms) = text.strip_suffix("ms") {
        (ms, 1e-3)
    } else if let Some(s) = text.strip_suffix('s') {
        (s, 1.0)
    } else {
        (text, 1.0)
    };
    let value: f64 = number.trim().parse().ok()?;
    Duration::try_from_secs_f64(value * scale).ok()
}
