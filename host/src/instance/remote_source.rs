//! `source = { url, digest }`: a component fetched over HTTP(S) as Spin's
//! loader fetches it (spinframework/spin v4.0.2 `crates/loader/src/http.rs`,
//! `local.rs`): a `GET`, redirects followed, the body's SHA-256 checked
//! against the manifest's `digest` (`sha256:<hex>`), then kept by that digest
//! under the cache directory (`sources/`), so a second start reads it from
//! disk. A kept file is checked against its digest again on every read: one
//! that no longer matches is fetched anew.

use super::compiled_cache::CacheDir;
use crate::manifest::Digest;
use anyhow::{Context, Result, anyhow, bail, ensure};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Redirects followed before giving up (reqwest's default, which Spin uses).
const MAX_REDIRECTS: usize = 10;
/// The largest component fetched; past it the download stops.
const MAX_BYTES: usize = 1 << 30;
/// Connecting, and waiting for the first byte and between bytes.
const TIMEOUT: Duration = Duration::from_mins(1);

/// A fetched source: its bytes, and where they are kept (the URL when they
/// are not, for messages).
pub struct Fetched {
    pub wasm: Vec<u8>,
    pub path: PathBuf,
}

/// The component at `url`, whose SHA-256 must be `digest`: read from
/// `cache_dir/sources/` if kept there, else fetched (and kept, when there is
/// a cache directory).
pub fn fetch(url: &str, digest: Digest, cache_dir: Option<&Path>) -> Result<Fetched> {
    let kept = cache_dir
        .and_then(|dir| CacheDir::open(&dir.join("sources")))
        .map(|dir| dir.path().join(format!("sha256-{}.wasm", digest.hex())));
    if let Some(path) = &kept
        && let Ok(wasm) = std::fs::read(path)
    {
        if Digest::of(&wasm) == digest {
            return Ok(Fetched {
                wasm,
                path: path.clone(),
            });
        }
        crate::err_line!(
            "warning: {} does not match its digest; fetching {url} again",
            path.display()
        );
    }
    let wasm =
        download_blocking(url).with_context(|| format!("Error fetching source URL {url:?}"))?;
    let downloaded = Digest::of(&wasm);
    ensure!(
        downloaded == digest,
        "Error fetching source URL {url:?}: invalid content digest; expected {digest}, downloaded {downloaded}"
    );
    let Some(path) = kept else {
        return Ok(Fetched {
            wasm,
            path: PathBuf::from(url),
        });
    };
    if let Err(error) = keep(&path, &wasm) {
        crate::err_line!(
            "warning: not keeping {url} in {}: {error:#}",
            path.display()
        );
    }
    Ok(Fetched { wasm, path })
}

/// Writes `wasm` to `path` through a temporary file beside it, so a reader
/// never sees half a file.
fn keep(path: &Path, wasm: &[u8]) -> Result<()> {
    let dir = path.parent().context("no parent directory")?;
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut file, wasm)?;
    file.persist(path)?;
    Ok(())
}

/// [`download`] on a runtime of its own, whatever thread calls it.
fn download_blocking(url: &str) -> Result<Vec<u8>> {
    let url = url.to_string();
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .context("starting a runtime to download on")?
                    .block_on(download(&url))
            })
            .join()
            .map_err(|_| anyhow!("the download thread panicked"))?
    })
}

/// `GET url`, following redirects; the body of the final `2xx` answer.
async fn download(url: &str) -> Result<Vec<u8>> {
    let mut url = url::Url::parse(url).context("not a URL")?;
    for _ in 0..=MAX_REDIRECTS {
        ensure!(
            matches!(url.scheme(), "http" | "https"),
            "{url}: only http and https URLs are fetched"
        );
        let host = url.host_str().context("no host")?;
        let host = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        };
        let request = http::Request::get(url.as_str())
            .header(http::header::HOST, host)
            .header(
                http::header::USER_AGENT,
                concat!("spinbench/", env!("CARGO_PKG_VERSION")),
            )
            .body(Empty::<Bytes>::new().map_err(|never| match never {}))?;
        let options = wasmtime_wasi_http::RequestOptions {
            connect_timeout: Some(TIMEOUT),
            first_byte_timeout: Some(TIMEOUT),
            between_bytes_timeout: Some(TIMEOUT),
        };
        let (response, connection) =
            wasmtime_wasi_http::default_send_request(request, Some(options))
                .await
                .map_err(|error| anyhow!("{error:?}"))?;
        let connection = tokio::spawn(connection);
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(http::header::LOCATION)
                .and_then(|value| value.to_str().ok())
                .with_context(|| format!("{url}: {status} without a Location"))?;
            url = url
                .join(location)
                .with_context(|| format!("{url}: Location {location:?}"))?;
            connection.abort();
            continue;
        }
        if !status.is_success() {
            // reqwest's words, which Spin's error carries.
            let kind = if status.is_server_error() {
                "server"
            } else {
                "client"
            };
            bail!("HTTP status {kind} error ({status}) for url ({url})");
        }
        let body = Limited::new(response.into_body(), MAX_BYTES)
            .collect()
            .await
            .map_err(|error| anyhow!("reading the body: {error}"))?;
        connection.abort();
        return Ok(body.to_bytes().to_vec());
    }
    bail!("{url}: more than {MAX_REDIRECTS} redirects")
}

#[cfg(test)]
mod tests;
