//! The benchmark file (`spinbench.toml`): which components of a Spin app
//! `compare` measures, and how: each component's probe request, its load
//! scenarios, the request it can hold open for per-instance memory, and its
//! native counterpart. The repository's own six functions are described by the
//! `spinbench.toml` at its root; `compare -f` reads another app's. The format
//! is documented in docs/benchmark-file.md; `raw` mirrors it key for key.

pub mod derive;
mod raw;
mod service;
#[cfg(test)]
mod tests;

use anyhow::Context;
use spinbench_host::manifest::Manifest;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use toml::Spanned;

pub use raw::{Throughput, Users};
pub use service::Service;

/// The file `compare` reads when given none: the repository's function set.
pub const DEFAULT_FILE: &str = "spinbench.toml";

/// A benchmark file, checked and with defaults applied.
#[derive(Debug, Clone)]
pub struct BenchFile {
    /// The directory the file is in: relative paths resolve against it.
    pub dir: PathBuf,
    /// The Spin manifest of the app (`manifest`, default `spin.toml`).
    pub manifest: PathBuf,
    /// The WASIp3 flavour's manifest, for the `wasm-p3` host.
    pub p3_manifest: Option<PathBuf>,
    /// Spin's runtime config file, given to every host that reads one.
    pub runtime_config: Option<PathBuf>,
    /// Local processes to start for the run, in the file's order.
    pub services: Vec<Service>,
    /// In the file's order, which is the report's.
    pub components: Vec<Component>,
}

#[derive(Debug, Clone)]
pub struct Component {
    /// The component's id in the manifest (`[component.<id>]`).
    pub id: String,
    /// The manifest it is in, when not the file's `manifest` (another app's).
    pub manifest: Option<PathBuf>,
    /// The cheapest meaningful request: readiness, instance and process cold start.
    pub probe: Request,
    /// The status the probe answers when the component is ready.
    pub probe_status: u16,
    pub native: Option<Native>,
    pub load: Vec<Load>,
    /// A request the component holds open (per-instance memory), if it can.
    pub memory_hold: Option<Request>,
    pub hashing_per_core: Option<Hashing>,
    /// Where `[[component]]` starts in the file, for messages about it.
    pub line: usize,
}

/// One request, as the same bytes go to every host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// Path and query, e.g. `/io?ms=10`.
    pub target: String,
    /// Names lower-case, in name order.
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    Empty,
    Text(String),
    /// `body_bytes = N`: N pseudo-random bytes (the same on every run).
    Generated(usize),
}

impl Body {
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Body::Empty => Vec::new(),
            Body::Text(text) => text.clone().into_bytes(),
            Body::Generated(n) => (0..*n)
                .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3])
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn len(&self) -> usize {
        match self {
            Body::Empty => 0,
            Body::Text(text) => text.len(),
            Body::Generated(n) => *n,
        }
    }
}

/// A command line with `{addr}` / `{port}` filled in at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine {
    pub program: PathBuf,
    pub args: Vec<String>,
}

impl CommandLine {
    /// The command, listening on `addr`.
    pub fn command(&self, addr: SocketAddr) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(self.args.iter().map(|a| {
            a.replace("{addr}", &addr.to_string())
                .replace("{port}", &addr.port().to_string())
        }));
        cmd
    }
}

#[derive(Debug, Clone)]
pub struct Native {
    pub command: CommandLine,
    /// The program is a glue native binary: `--plain-calls` times its logic
    /// as a plain function call (the instance cold start's floor).
    pub plain_calls: bool,
    /// Other native builds measured beside it under load (e.g. without SHA instructions).
    pub variants: Vec<Variant>,
}

#[derive(Debug, Clone)]
pub struct Variant {
    /// The report's host name; starts with `native-`.
    pub host: String,
    pub command: CommandLine,
    /// Shell command that builds it when missing (full runs only).
    pub build: Option<String>,
}

/// One load scenario, as a full run and as `--quick` runs it.
#[derive(Debug, Clone)]
pub struct Load {
    pub full: Shape,
    /// `None`: full runs only (reported as skipped under `--quick`).
    pub quick: Option<Shape>,
    /// The most the scenario can do, in req/s, when its requests wait (io).
    pub ceiling: Option<f64>,
    pub per_core: bool,
    pub throughput: Throughput,
}

/// Who sends what in a load scenario, and how the run is read.
#[derive(Debug, Clone)]
pub struct Shape {
    pub users: Users,
    pub request: Request,
    /// Read in steady state after this ramp-up; `None`: warm-up, then oha's summary.
    pub ramp_up: Option<Duration>,
}

/// The `hashing_per_core` measurement: one large request at a time, one core.
#[derive(Debug, Clone)]
pub struct Hashing {
    pub request: Request,
    pub quick_body_bytes: Option<usize>,
    /// `openssl speed -bytes 4096 <this>` as the CPU's reference.
    pub openssl_speed: Option<String>,
}

impl Users {
    pub fn count(self, cores: usize) -> usize {
        match self {
            Users::Fixed(n) => n,
            Users::PerCore(n) => n * cores.max(1),
        }
    }
}

/// What is wrong with a benchmark file, and where.
#[derive(Debug)]
pub enum FileError {
    /// Not TOML, or a key or value of the wrong shape (its message names the line).
    Toml(toml::de::Error),
    /// A rule across keys; `line` is 1-based.
    At { line: usize, message: String },
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Toml(e) => write!(f, "{}", e.to_string().trim_end()),
            FileError::At { line, message } => write!(f, "line {line}: {message}"),
        }
    }
}

impl std::error::Error for FileError {}

impl BenchFile {
    /// Reads and checks the file at `path` (or `path/spinbench.toml` for a
    /// directory). An app with a manifest and no benchmark file (`path` its
    /// directory or its `spin.toml`) gets one derived from the manifest
    /// ([`derive`]), written beside it for the user to edit.
    pub fn load(path: &Path) -> anyhow::Result<BenchFile> {
        let path = if path.is_dir() {
            path.join(DEFAULT_FILE)
        } else {
            path.to_path_buf()
        };
        let path = match app_without_benchmark_file(&path) {
            None => path,
            Some(manifest) => {
                let (file, derived) = derive::beside(&manifest)?;
                if derived {
                    spinbench_host::err_line!(
                        "{} has no benchmark file: measuring each HTTP component with a GET of \
                         its route and 10 users, as written to {} (edit it to choose requests \
                         and load)",
                        manifest.display(),
                        file.display()
                    );
                }
                file
            }
        };
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading benchmark file {}", path.display()))?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        BenchFile::parse(&text, dir).with_context(|| format!("in {}", path.display()))
    }

    pub fn parse(text: &str, dir: PathBuf) -> Result<BenchFile, FileError> {
        let file: raw::File = toml::from_str(text).map_err(FileError::Toml)?;
        let at = |span: std::ops::Range<usize>, message: String| FileError::At {
            line: line_of(text, span.start),
            message,
        };
        if file.component.is_empty() {
            return Err(at(0..0, "no [[component]] to measure".into()));
        }
        let mut components: Vec<Component> = Vec::new();
        for c in file.component {
            let span = c.span();
            let c = c.into_inner();
            if components.iter().any(|o| o.id == *c.id.get_ref()) {
                return Err(at(
                    c.id.span(),
                    format!("component {:?} is listed twice", c.id.get_ref()),
                ));
            }
            components.push(component(c, &dir, &at, line_of(text, span.start))?);
        }
        let services = file
            .service
            .into_iter()
            .map(|s| {
                let line = line_of(text, s.span().start);
                service::service(s.get_ref(), &dir, &at, line)
            })
            .collect::<Result<_, _>>()?;
        Ok(BenchFile {
            manifest: dir.join(file.manifest.unwrap_or_else(|| "spin.toml".into())),
            p3_manifest: file.p3_manifest.map(|p| dir.join(p)),
            runtime_config: file.runtime_config.map(|p| dir.join(p)),
            services,
            dir,
            components,
        })
    }

    /// The manifest component `c` is in: its own, or the file's.
    pub fn manifest_of<'a>(&'a self, c: &'a Component) -> &'a Path {
        c.manifest.as_deref().unwrap_or(&self.manifest)
    }

    /// Fails, naming the line, if a component of the file's own manifest is not in `manifest`.
    pub fn check_against(&self, manifest: &Manifest) -> Result<(), FileError> {
        self.components
            .iter()
            .filter(|c| c.manifest.is_none())
            .try_for_each(|c| c.check_against(manifest))
    }

    #[cfg(test)]
    pub fn component(&self, id: &str) -> Option<&Component> {
        self.components.iter().find(|c| c.id == id)
    }
}

impl Component {
    /// Fails, naming the line, if the component is not in `manifest`.
    pub fn check_against(&self, manifest: &Manifest) -> Result<(), FileError> {
        if manifest.component.contains_key(&self.id) {
            return Ok(());
        }
        Err(FileError::At {
            line: self.line,
            message: format!(
                "component {:?} is not in the manifest (its components: {})",
                self.id,
                manifest
                    .component
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
    }
}

/// The Spin manifest to derive a benchmark file from, when `path` (a
/// benchmark file's path) names a Spin manifest, or a missing `spinbench.toml`
/// beside one.
fn app_without_benchmark_file(path: &Path) -> Option<PathBuf> {
    let is_manifest = |p: &Path| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|text| text.parse::<toml::Table>().ok())
            .is_some_and(|table| table.contains_key("spin_manifest_version"))
    };
    if path.exists() {
        return is_manifest(path).then(|| path.to_path_buf());
    }
    let beside = path.parent()?.join(spinbench_host::manifest::DEFAULT_FILE);
    (path.file_name()? == DEFAULT_FILE && is_manifest(&beside)).then_some(beside)
}

type At<'a> = &'a dyn Fn(std::ops::Range<usize>, String) -> FileError;

fn component(c: raw::Component, dir: &Path, at: At, line: usize) -> Result<Component, FileError> {
    let probe_status = c.probe.get_ref().status.map_or(200, |s| s.0);
    let probe = request(c.probe, at, true)?;
    let native = c.native.map(|n| native(n, dir, at)).transpose()?;
    let load = c
        .load
        .into_iter()
        .map(|l| load(l, &probe, at))
        .collect::<Result<_, _>>()?;
    let memory_hold = c.memory.map(|m| request(m.hold, at, false)).transpose()?;
    let hashing_per_core = c
        .hashing_per_core
        .map(|h| {
            let span = h.request.span();
            let request = request(h.request, at, false)?;
            if !matches!(request.body, Body::Generated(_)) {
                return Err(at(
                    span,
                    "hashing_per_core's request needs body_bytes".into(),
                ));
            }
            Ok(Hashing {
                request,
                quick_body_bytes: h.quick_body_bytes,
                openssl_speed: h.openssl_speed,
            })
        })
        .transpose()?;
    Ok(Component {
        id: c.id.into_inner(),
        manifest: c.manifest.map(|m| dir.join(m)),
        probe,
        probe_status,
        native,
        load,
        memory_hold,
        hashing_per_core,
        line,
    })
}

fn request(r: Spanned<raw::Request>, at: At, is_probe: bool) -> Result<Request, FileError> {
    let span = r.span();
    request_at(r.into_inner(), span, at, is_probe)
}

fn request_at(
    r: raw::Request,
    span: std::ops::Range<usize>,
    at: At,
    is_probe: bool,
) -> Result<Request, FileError> {
    if r.status.is_some() && !is_probe {
        return Err(at(
            span,
            "status is read in probe only (load counts 200s as answered)".into(),
        ));
    }
    let body = match (r.body, r.body_bytes) {
        (Some(_), Some(_)) => {
            return Err(at(
                span,
                "a request has body or body_bytes, not both".into(),
            ));
        }
        (Some(text), None) => Body::Text(text),
        (None, Some(n)) => Body::Generated(n),
        (None, None) => Body::Empty,
    };
    Ok(Request {
        method: r.method.0,
        target: r.path.0,
        headers: r
            .headers
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect(),
        body,
    })
}

/// A native command: it must say where to listen.
fn command_line(text: &Spanned<String>, dir: &Path, at: At) -> Result<CommandLine, FileError> {
    let line = split_command(text, dir, at)?;
    if !line
        .args
        .iter()
        .any(|w| w.contains("{addr}") || w.contains("{port}"))
    {
        return Err(at(
            text.span(),
            "a native command says where to listen with {addr} or {port}".into(),
        ));
    }
    Ok(line)
}

/// A command line split as a shell would; a relative program path is the
/// app's own build (relative to the file), a bare name is looked up on PATH.
fn split_command(text: &Spanned<String>, dir: &Path, at: At) -> Result<CommandLine, FileError> {
    let words = shlex::split(text.get_ref())
        .filter(|w| !w.is_empty())
        .ok_or_else(|| {
            at(
                text.span(),
                format!("cannot split command {:?}", text.get_ref()),
            )
        })?;
    let program = PathBuf::from(&words[0]);
    let program = if words[0].contains('/') && program.is_relative() {
        dir.join(program)
    } else {
        program
    };
    Ok(CommandLine {
        program,
        args: words[1..].to_vec(),
    })
}

fn native(n: raw::Native, dir: &Path, at: At) -> Result<Native, FileError> {
    let variants = n
        .variant
        .into_iter()
        .map(|v| {
            if !v.host.get_ref().starts_with("native-") {
                return Err(at(
                    v.host.span(),
                    format!(
                        "variant host {:?} must start with \"native-\"",
                        v.host.get_ref()
                    ),
                ));
            }
            Ok(Variant {
                host: v.host.into_inner(),
                command: command_line(&v.command, dir, at)?,
                build: v.build,
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(Native {
        command: command_line(&n.command, dir, at)?,
        plain_calls: n.plain_calls,
        variants,
    })
}

fn load(l: Spanned<raw::Load>, probe: &Request, at: At) -> Result<Load, FileError> {
    let span = l.span();
    let l = l.into_inner();
    let request = l
        .request
        .map(|r| request(r, at, false))
        .transpose()?
        .unwrap_or_else(|| probe.clone());
    if l.throughput == Throughput::Bytes && request.body.is_empty() {
        return Err(at(
            span,
            "throughput = \"bytes\" needs a request body".into(),
        ));
    }
    let ramp_up = l.steady_state.map(|s| s.ramp_up.0);
    let full = Shape {
        users: l.users,
        request,
        ramp_up,
    };
    let quick = match l.quick {
        None | Some(raw::Quick::Runs(true)) => Some(full.clone()),
        Some(raw::Quick::Runs(false)) => None,
        Some(raw::Quick::Changes(q)) => {
            if q.ramp_up.is_some() && ramp_up.is_none() {
                return Err(at(
                    span,
                    "quick.ramp_up is only for a scenario with steady_state".into(),
                ));
            }
            Some(Shape {
                users: q.users.unwrap_or(full.users),
                request: q
                    .request
                    .map(|r| request_at(r, span.clone(), at, false))
                    .transpose()?
                    .unwrap_or_else(|| full.request.clone()),
                ramp_up: q.ramp_up.map(|s| s.0).or(ramp_up),
            })
        }
    };
    if let Some(c) = l.ceiling
        && !(c > 0.0 && c.is_finite())
    {
        return Err(at(span, format!("ceiling {c} must be a positive req/s")));
    }
    Ok(Load {
        full,
        quick,
        ceiling: l.ceiling,
        per_core: l.per_core,
        throughput: l.throughput,
    })
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    // Lines are what the newlines split: one more than there are newlines.
    text.as_bytes()[..offset.min(text.len())]
        .split(|&b| b == b'\n')
        .count()
}
