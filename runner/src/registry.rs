//! `spinbench registry push|pull|login`, and the apps `serve -f` and `compare
//! -f` take by OCI reference: Spin's registry commands (`spin registry`,
//! `spin up -f <reference>`), on the `spinbench-oci` crate.

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use spinbench_host::instance::compiled_cache;
use spinbench_host::manifest;
use spinbench_oci::{Options, PullLimits, Pulled};
use std::io::BufRead as _;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct RegistryArgs {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Push an app to a registry as Spin's OCI artifact (`spin registry push`).
    Push(PushArgs),
    /// Pull an app from a registry into the cache, or into a directory with -o.
    Pull(PullArgs),
    /// Check credentials against a registry and keep them for push and pull (`spin registry login`).
    Login(LoginArgs),
}

/// Where a registry is reached and where pulled apps are kept; shared by
/// `registry`, `serve` and `compare`.
#[derive(Args, Debug, Clone)]
pub struct RegistryOptions {
    /// Talk to the registry over plain HTTP, not HTTPS (Spin's flag): for a registry on loopback.
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// A pull: bytes of the image manifest, and of the locked app (each read and parsed whole).
    #[arg(long, env = "SPINBENCH_MAX_MANIFEST_SIZE", default_value_t = PullLimits::default().max_manifest)]
    pub max_manifest_size: u64,
    /// A pull: bytes of one layer as the registry sends it, and of one archive layer inflated.
    #[arg(long, env = "SPINBENCH_MAX_LAYER_SIZE", default_value_t = PullLimits::default().max_layer)]
    pub max_layer_size: u64,
    /// A pull: bytes of one file inside an archive layer.
    #[arg(long, env = "SPINBENCH_MAX_ARCHIVE_FILE_SIZE", default_value_t = PullLimits::default().max_archive_file)]
    pub max_archive_file_size: u64,
    /// A pull: bytes it writes in all (layers, and the files archive layers inflate to).
    #[arg(long, env = "SPINBENCH_MAX_PULL_SIZE", default_value_t = PullLimits::default().max_pull)]
    pub max_pull_size: u64,
    /// A pull: seconds it may take, from its first request to its last byte.
    #[arg(long, env = "SPINBENCH_PULL_TIMEOUT", default_value_t = PullLimits::default().timeout.as_secs())]
    pub pull_timeout: u64,
}

impl Default for RegistryOptions {
    fn default() -> Self {
        let limits = PullLimits::default();
        Self {
            insecure: false,
            max_manifest_size: limits.max_manifest,
            max_layer_size: limits.max_layer,
            max_archive_file_size: limits.max_archive_file,
            max_pull_size: limits.max_pull,
            pull_timeout: limits.timeout.as_secs(),
        }
    }
}

impl RegistryOptions {
    /// With the store under `cache_dir` (the compiled-code cache's
    /// directory), or under the default one.
    pub fn options(&self, cache_dir: Option<&Path>) -> Result<Options> {
        let cache_dir = match cache_dir {
            Some(dir) => dir.to_path_buf(),
            None => compiled_cache::default_dir()
                .context("no cache directory for pulled apps: set XDG_CACHE_HOME or HOME, or give --cache-dir")?,
        };
        Ok(Options {
            insecure: self.insecure,
            store: Options::store_under(&cache_dir),
            cache_dir: Some(cache_dir),
            limits: self.limits()?,
        })
    }

    /// What a pull may hold, each bound at least 1.
    fn limits(&self) -> Result<PullLimits> {
        let limits = PullLimits {
            max_manifest: self.max_manifest_size,
            max_layer: self.max_layer_size,
            max_archive_file: self.max_archive_file_size,
            max_pull: self.max_pull_size,
            timeout: std::time::Duration::from_secs(self.pull_timeout),
        };
        if [
            limits.max_manifest,
            limits.max_layer,
            limits.max_archive_file,
            limits.max_pull,
            self.pull_timeout,
        ]
        .contains(&0)
        {
            bail!(
                "--max-manifest-size, --max-layer-size, --max-archive-file-size, --max-pull-size and --pull-timeout must each be at least 1"
            );
        }
        Ok(limits)
    }
}

#[derive(Args)]
struct PushArgs {
    /// The app: a Spin manifest, or a directory holding spin.toml.
    #[arg(short = 'f', long = "from", default_value = manifest::DEFAULT_FILE)]
    from: PathBuf,
    /// The reference to push to: <registry>/<repository>:<tag>.
    reference: String,
    #[command(flatten)]
    registry: RegistryOptions,
    /// Where `source = { url }` components are kept [default: $XDG_CACHE_HOME/spinbench or ~/.cache/spinbench].
    #[arg(long)]
    cache_dir: Option<PathBuf>,
}

#[derive(Args)]
struct PullArgs {
    /// The reference to pull: <registry>/<repository>:<tag> or @sha256:<digest>.
    reference: String,
    /// Write the app (spin.toml, wasm/, files/) into this directory, which must not exist or be empty.
    #[arg(short = 'o', long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    registry: RegistryOptions,
    /// The cache pulled blobs are kept in (under registry/) [default: $XDG_CACHE_HOME/spinbench or ~/.cache/spinbench].
    #[arg(long)]
    cache_dir: Option<PathBuf>,
    /// With -o: write only this component and the triggers naming it; repeatable or comma-separated (`spin up`'s flag). A kept component that chains to one left out is refused, as by Spin.
    #[arg(
        short = 'c',
        long = "component-id",
        value_delimiter = ',',
        requires = "output"
    )]
    component_ids: Vec<String>,
}

#[derive(Args)]
struct LoginArgs {
    /// The registry: a host[:port], or its URL.
    server: String,
    #[arg(short = 'u', long)]
    username: String,
    /// The password (visible to other users in the process list: prefer --password-stdin).
    #[arg(short = 'p', long, conflicts_with = "password_stdin")]
    password: Option<String>,
    /// Read the password from the first line of stdin.
    #[arg(long)]
    password_stdin: bool,
    #[command(flatten)]
    registry: RegistryOptions,
}

pub fn main(args: &RegistryArgs) -> Result<()> {
    match &args.command {
        Command::Push(args) => {
            let manifest = manifest::resolve_path(&args.from);
            let options = args.registry.options(args.cache_dir.as_deref())?;
            let pushed = spinbench_oci::push(&manifest, &args.reference, &options)?;
            spinbench_host::out_line!(
                "Pushed {} with digest {} ({} layers, {})",
                args.reference,
                pushed.digest,
                pushed.layers,
                kib(pushed.bytes)
            )?;
            Ok(())
        }
        Command::Pull(args) => {
            let options = args.registry.options(args.cache_dir.as_deref())?;
            let pulled = match &args.output {
                Some(dir) => spinbench_oci::pull_into(&args.reference, &options, dir)?,
                None => spinbench_oci::pull(&args.reference, &options)?,
            };
            if !args.component_ids.is_empty() {
                retain_in_place(&pulled.manifest_path(), &args.component_ids)?;
            }
            report(&args.reference, &pulled);
            spinbench_host::out_line!("{}", pulled.manifest_path().display())?;
            Ok(())
        }
        Command::Login(args) => {
            let password = match (&args.password, args.password_stdin) {
                (Some(password), _) => password.clone(),
                (None, true) => {
                    let mut line = String::new();
                    std::io::stdin().lock().read_line(&mut line)?;
                    line.trim_end_matches(['\r', '\n']).to_string()
                }
                (None, false) => bail!("give the password with --password-stdin (or --password)"),
            };
            let file = spinbench_oci::login(
                &args.server,
                &args.username,
                &password,
                args.registry.insecure,
            )?;
            spinbench_host::out_line!(
                "Logged in to {}; credentials kept in {}",
                args.server,
                file.display()
            )?;
            Ok(())
        }
    }
}

/// Rewrites the manifest at `path` to keep only the components `retained`
/// names (its wasm and files stay; nothing names them).
fn retain_in_place(path: &Path, retained: &[String]) -> Result<()> {
    let text = std::fs::read_to_string(path)?;
    let kept = manifest::retain::retain(&text, retained)
        .with_context(|| format!("retaining only components {}", retained.join(", ")))?;
    std::fs::write(path, kept).with_context(|| format!("writing {}", path.display()))
}

/// Whether `-f` names an OCI reference: no such path exists, and it reads
/// as one by Spin's rule.
pub fn is_reference(from: &Path) -> bool {
    !from.exists() && spinbench_oci::is_probably_reference(&from.to_string_lossy())
}

/// The manifest `-f` names: a file or directory as it is, or an OCI
/// reference's app, pulled ([`pull_app`]) into the store.
pub fn resolve_app(
    from: &Path,
    registry: &RegistryOptions,
    cache_dir: Option<&Path>,
) -> Result<PathBuf> {
    if is_reference(from) {
        pull_app(from, registry, cache_dir, None)
    } else {
        Ok(manifest::resolve_path(from))
    }
}

/// The manifest of `reference`'s app, pulled into the store under
/// `cache_dir` and kept there, or written into `into`; one line on stderr
/// says what was downloaded.
pub fn pull_app(
    reference: &Path,
    registry: &RegistryOptions,
    cache_dir: Option<&Path>,
    into: Option<&Path>,
) -> Result<PathBuf> {
    let text = reference.to_string_lossy();
    let options = registry.options(cache_dir)?;
    let pulled = match into {
        Some(dir) => spinbench_oci::pull_into(&text, &options, dir)?,
        None => spinbench_oci::pull(&text, &options)?,
    };
    report(&text, &pulled);
    Ok(pulled.manifest_path())
}

/// One line on stderr: what was pulled, and what it cost.
fn report(reference: &str, pulled: &Pulled) {
    let downloaded = pulled.downloaded;
    if downloaded.blobs == 0 {
        spinbench_host::err_line!(
            "{reference}: {} from the cache, nothing downloaded",
            pulled.digest
        );
    } else {
        spinbench_host::err_line!(
            "{reference}: {} pulled, {} blobs downloaded ({})",
            pulled.digest,
            downloaded.blobs,
            kib(downloaded.bytes)
        );
    }
}

fn kib(bytes: u64) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}
