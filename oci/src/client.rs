//! Talking to a registry, with the `oci-client` crate (the client Spin's
//! `crates/oci` moved to): push an assembled artifact, pull one into the
//! store, check credentials. A pull's manifest and blobs are read under the
//! pull's bounds ([`crate::fetch`]), everything it writes charged to its
//! [`Budget`]. Each failure a user can meet is one line saying what went
//! wrong ([`Registry::describe`], [`Registry::describe_fetch`]).

use crate::artifact::{self, Artifact, LayerKind};
use crate::auth;
use crate::boundary::{Budget, PullLimits};
use crate::fetch::{Fetch, FetchError};
use crate::store::Store;
use anyhow::{Context, Result, anyhow, bail};
use futures::{StreamExt as _, TryStreamExt as _};
use oci_client::Reference;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use spinbench_host::manifest::Digest;
use std::time::Duration;

/// Layers fetched at once (Spin's `MAX_PARALLEL_PULL`).
const PARALLEL_PULLS: usize = 16;
/// The media types of an image manifest a pull accepts.
const MANIFEST_TYPES: &[&str] = &[
    OCI_IMAGE_MEDIA_TYPE,
    oci_client::manifest::IMAGE_MANIFEST_MEDIA_TYPE,
];
/// Connecting, and waiting between bytes: a registry that stops answering
/// fails the pull instead of hanging it.
const TIMEOUT: Duration = Duration::from_mins(1);

/// A registry, reached over HTTPS, or plain HTTP with `insecure` (Spin's `--insecure`).
pub struct Registry {
    /// Built on first use: a start from the cache by digest needs none (and
    /// building one loads the system's root certificates, tens of milliseconds).
    client: std::sync::OnceLock<oci_client::Client>,
    /// The pull's requests, made once the credentials' token is known.
    fetch: std::sync::OnceLock<Fetch>,
    insecure: bool,
    reference: Reference,
    auth: RegistryAuth,
    /// Where the credentials came from, for messages.
    auth_source: String,
}

/// What a pull did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Downloaded {
    /// Blobs fetched (the manifest not counted), and their bytes.
    pub blobs: usize,
    pub bytes: u64,
}

impl Registry {
    /// The registry of `reference`, with the credentials [`auth::credentials`] finds.
    pub fn new(reference: &str, insecure: bool) -> Result<Self> {
        let mut registry = Self::anonymous(reference, insecure)?;
        let server = registry
            .reference
            .resolve_registry()
            .trim_end_matches('/')
            .to_string();
        (registry.auth, registry.auth_source) = auth::credentials(&server);
        Ok(registry)
    }

    /// `server` with the credentials given (to check them before keeping them).
    pub fn with_credentials(
        server: &str,
        user: &str,
        password: &str,
        insecure: bool,
    ) -> Result<Self> {
        // A repository name is needed to ask for a token; any will do.
        let mut registry = Self::anonymous(&format!("{server}/spinbench-login:latest"), insecure)?;
        registry.auth = RegistryAuth::Basic(user.to_string(), password.to_string());
        registry.auth_source = "the login".to_string();
        Ok(registry)
    }

    fn anonymous(reference: &str, insecure: bool) -> Result<Self> {
        let reference = crate::reference::parse(reference)
            .map_err(|e| anyhow!("{reference:?} is not an OCI reference: {e}"))?;
        Ok(Self {
            client: std::sync::OnceLock::new(),
            fetch: std::sync::OnceLock::new(),
            insecure,
            reference,
            auth: RegistryAuth::Anonymous,
            auth_source: "none".to_string(),
        })
    }

    fn client(&self) -> &oci_client::Client {
        self.client.get_or_init(|| {
            // reqwest is built without a crypto provider of its own: use the
            // one rustls already has here (ring, through wasmtime-wasi-http).
            let _ = rustls::crypto::ring::default_provider().install_default();
            oci_client::Client::new(ClientConfig {
                protocol: if self.insecure {
                    ClientProtocol::Http
                } else {
                    ClientProtocol::Https
                },
                // Spin's `--insecure` also ignores certificate errors (a
                // registry may redirect to HTTPS); content is checked by digest.
                accept_invalid_certificates: self.insecure,
                connect_timeout: Some(TIMEOUT),
                read_timeout: Some(TIMEOUT),
                user_agent: concat!("spinbench/", env!("CARGO_PKG_VERSION")),
                ..ClientConfig::default()
            })
        })
    }

    pub fn reference(&self) -> &Reference {
        &self.reference
    }

    /// Pushes `artifact`; returns the manifest's digest.
    pub async fn push(&self, artifact: &Artifact) -> Result<String> {
        let response = self
            .client()
            .push(
                &self.reference,
                &artifact.layers,
                artifact.config.clone(),
                &self.auth,
                Some(artifact.manifest.clone()),
            )
            .await
            .map_err(|e| self.describe(&e, "pushing"))?;
        let digest = response
            .manifest_url
            .rsplit('/')
            .next()
            .filter(|last| last.starts_with("sha256:"))
            .map(str::to_string);
        Ok(digest.unwrap_or_else(|| {
            let json = serde_json::to_vec(&artifact.manifest).unwrap_or_default();
            Digest::of(&json).to_string()
        }))
    }

    /// The pull's requests, with the `Authorization` the credentials give:
    /// the token `oci-client` fetches where the registry hands out tokens,
    /// else Basic with the user and password, else none.
    async fn fetcher(&self) -> Result<&Fetch> {
        if let Some(fetch) = self.fetch.get() {
            return Ok(fetch);
        }
        let token = self
            .client()
            .auth(
                &self.reference,
                &self.auth,
                oci_client::RegistryOperation::Pull,
            )
            .await
            .map_err(|e| self.describe(&e, "pulling"))?;
        let authorization = match (token, &self.auth) {
            (Some(token), _) => Some(format!("Bearer {token}")),
            (None, RegistryAuth::Basic(user, password)) => {
                use base64::Engine as _;
                let pair =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
                Some(format!("Basic {pair}"))
            }
            (None, _) => None,
        };
        let fetch = Fetch::new(&self.reference, self.insecure, authorization, TIMEOUT)
            .map_err(|e| self.describe_fetch(e, "pulling", Asked::Manifest))?;
        let _ = self.fetch.set(fetch);
        Ok(self.fetch.get().expect("just set"))
    }

    /// The manifest the reference names and its digest: from `store` when
    /// the reference names a digest kept there, else from the registry (a
    /// tag is always asked again, as Spin asks: it may have moved), read up
    /// to `--max-manifest-size`.
    pub async fn manifest(
        &self,
        store: &Store,
        limits: &PullLimits,
    ) -> Result<(OciImageManifest, Digest)> {
        if let Some(pinned) = self.reference.digest().map(Digest::parse).transpose()?
            && store.has(pinned)
            && let Ok(bytes) = store.read(pinned, limits.max_manifest)
        {
            return Ok((parse_manifest(&bytes)?, pinned));
        }
        let named = self
            .reference
            .digest()
            .or(self.reference.tag())
            .unwrap_or("latest");
        let bytes = self
            .fetcher()
            .await?
            .manifest(named, MANIFEST_TYPES, limits.max_manifest)
            .await
            .map_err(|e| self.describe_fetch(e, "pulling the manifest of", Asked::Manifest))?;
        let digest = Digest::of(&bytes);
        if let Some(pinned) = self.reference.digest()
            && Digest::parse(pinned)? != digest
        {
            bail!(
                "{}: the registry sent a manifest whose digest is {digest}",
                self.reference
            );
        }
        store.write(digest, &bytes)?;
        Ok((parse_manifest(&bytes)?, digest))
    }

    /// Fetches every blob of `manifest` the store lacks (the locked app
    /// first, so that a manifest that is not a Spin app fails before its
    /// layers are fetched), checking each against its digest. Every size is
    /// checked against the limits and charged to `budget` before any is
    /// fetched.
    pub async fn fetch_blobs(
        &self,
        manifest: &OciImageManifest,
        store: &Store,
        limits: &PullLimits,
        budget: &Budget,
    ) -> Result<Downloaded> {
        // A single wasm with no locked app (what `wkg oci push` writes) is
        // its one layer, which Spin runs as a one-component app.
        let source =
            artifact::app_source(manifest).map_err(|e| anyhow!("{}: {e}", self.reference))?;
        let locked = source.descriptor();
        let mut pending: Vec<&OciDescriptor> = vec![locked];
        for layer in &manifest.layers {
            if !store.has(Digest::parse(&layer.digest)?)
                && !pending.iter().any(|p| p.digest == layer.digest)
            {
                pending.push(layer);
            }
        }
        for layer in &pending {
            let size = limits
                .check_layer(&layer.digest, layer.size)
                .map_err(|e| anyhow!("{}: {e}", self.reference))?;
            budget
                .charge(size)
                .map_err(|e| anyhow!("{}: {e}", self.reference))?;
        }
        if let artifact::AppSource::Locked(_) = source {
            limits
                .check_document("the locked app", u64::try_from(locked.size).unwrap_or(0))
                .map_err(|e| anyhow!("{}: {e}", self.reference))?;
        }
        let mut downloaded = Downloaded::default();
        self.fetch(locked, store, limits, budget, &mut downloaded)
            .await?;
        let fetched: Vec<Downloaded> = futures::stream::iter(&pending[1..])
            .map(|layer| async move {
                let mut one = Downloaded::default();
                self.fetch(layer, store, limits, budget, &mut one).await?;
                anyhow::Ok(one)
            })
            .buffer_unordered(PARALLEL_PULLS)
            .try_collect()
            .await?;
        for one in fetched {
            downloaded.blobs += one.blobs;
            downloaded.bytes += one.bytes;
        }
        Ok(downloaded)
    }

    /// One layer: streamed into the store up to its descriptor's size,
    /// hashed as it comes, kept once whole and matching; an archive layer
    /// then inflated into the store from disk.
    async fn fetch(
        &self,
        layer: &OciDescriptor,
        store: &Store,
        limits: &PullLimits,
        budget: &Budget,
        downloaded: &mut Downloaded,
    ) -> Result<()> {
        let digest =
            Digest::parse(&layer.digest).map_err(|e| anyhow!("layer {:?}: {e}", layer.digest))?;
        if store.has(digest) {
            return Ok(());
        }
        let size = limits.check_layer(&layer.digest, layer.size)?;
        let doing = format!("pulling layer {digest} of");
        let mut writer =
            store.writer(size, format!("longer than its descriptor's {size} bytes"))?;
        self.fetcher()
            .await?
            .blob(digest, size, &mut writer)
            .await
            .map_err(|e| self.describe_fetch(e, &doing, Asked::Blob))?;
        let path = writer
            .keep_as(digest)
            .map_err(|e| anyhow!("{doing} {}: {e}", self.reference))?;
        if artifact::layer_kind(&layer.media_type) == LayerKind::Archive {
            crate::archive::unpack_into(&path, store, limits, budget)
                .with_context(|| format!("{}: unpacking layer {digest}", self.reference))?;
        }
        downloaded.blobs += 1;
        downloaded.bytes += size;
        Ok(())
    }

    /// Whether the registry takes these credentials: a token fetched where it
    /// hands out tokens, else a request made with them (listing repositories).
    pub async fn check_credentials(&self) -> Result<()> {
        self.client()
            .auth(
                &self.reference,
                &self.auth,
                oci_client::RegistryOperation::Pull,
            )
            .await
            .map_err(|e| self.describe(&e, "logging in to"))?;
        match self
            .client()
            .catalog(&self.reference, &self.auth, Some(1), None)
            .await
        {
            Err(error @ OciDistributionError::UnauthorizedError { .. }) => {
                Err(self.describe(&error, "logging in to"))
            }
            // A registry without a catalog (or that hides it) said nothing against them.
            _ => Ok(()),
        }
    }

    /// One line for what went wrong while `doing` something with the reference.
    fn describe(&self, error: &OciDistributionError, doing: &str) -> anyhow::Error {
        let registry = self.reference.resolve_registry();
        let reference = &self.reference;
        let credentials = || self.credentials_hint();
        match error {
            OciDistributionError::UnauthorizedError { .. }
            | OciDistributionError::AuthenticationFailure(_) => {
                anyhow!("{doing} {reference}: 401 Unauthorized: {}", credentials())
            }
            OciDistributionError::RegistryError { envelope, .. } => {
                let codes: Vec<&OciErrorCode> = envelope.errors.iter().map(|e| &e.code).collect();
                let message = envelope
                    .errors
                    .iter()
                    .map(|e| format!("{:?}: {}", e.code, e.message))
                    .collect::<Vec<_>>()
                    .join("; ");
                if codes
                    .iter()
                    .any(|c| matches!(c, OciErrorCode::NameUnknown | OciErrorCode::ManifestUnknown))
                {
                    anyhow!(
                        "{doing} {reference}: {registry} has no such repository or tag ({message})"
                    )
                } else if codes.iter().any(|c| matches!(c, OciErrorCode::BlobUnknown)) {
                    anyhow!(
                        "{doing} {reference}: the registry lacks this layer, which the manifest names ({message})"
                    )
                } else if codes
                    .iter()
                    .any(|c| matches!(c, OciErrorCode::Unauthorized | OciErrorCode::Denied))
                {
                    anyhow!(
                        "{doing} {reference}: access denied ({message}): {}",
                        credentials()
                    )
                } else {
                    anyhow!("{doing} {reference}: the registry answered {message}")
                }
            }
            OciDistributionError::DigestError(digest) => {
                anyhow!("{doing} {reference}: the content does not match its digest ({digest})")
            }
            OciDistributionError::RequestError(request) => self.unreachable(request, doing),
            _ => anyhow!("{doing} {reference}: {error}"),
        }
    }

    /// One line for a pull's request that failed while `doing` something.
    fn describe_fetch(&self, error: FetchError, doing: &str, asked: Asked) -> anyhow::Error {
        let registry = self.reference.resolve_registry();
        let reference = &self.reference;
        match error {
            FetchError::Transport(request) => self.unreachable(&request, doing),
            FetchError::Refused(error) => anyhow!("{doing} {reference}: {error:#}"),
            FetchError::Status {
                status,
                codes,
                message,
            } => {
                let has = |code: &str| codes.iter().any(|c| c == code);
                if status == 401 {
                    let credentials = self.credentials_hint();
                    anyhow!("{doing} {reference}: 401 Unauthorized: {credentials}")
                } else if has("NAME_UNKNOWN")
                    || has("MANIFEST_UNKNOWN")
                    || (status == 404 && asked == Asked::Manifest)
                {
                    anyhow!(
                        "{doing} {reference}: {registry} has no such repository or tag ({message})"
                    )
                } else if has("BLOB_UNKNOWN") || status == 404 {
                    anyhow!(
                        "{doing} {reference}: the registry lacks this layer, which the manifest names ({message})"
                    )
                } else if has("UNAUTHORIZED") || has("DENIED") || status == 403 {
                    let credentials = self.credentials_hint();
                    anyhow!("{doing} {reference}: access denied ({message}): {credentials}")
                } else {
                    anyhow!("{doing} {reference}: the registry answered {status} ({message})")
                }
            }
        }
    }

    /// Where the credentials came from, and what to do about them.
    fn credentials_hint(&self) -> String {
        let registry = self.reference.resolve_registry();
        match self.auth {
            RegistryAuth::Anonymous => format!(
                "no credentials for {registry} (looked for: {}); log in with `spinbench registry login {registry}` or `docker login {registry}`",
                self.auth_source
            ),
            _ => format!("the credentials from {} were refused", self.auth_source),
        }
    }

    /// One line for a registry that could not be reached, or stopped answering.
    fn unreachable(&self, request: &reqwest::Error, doing: &str) -> anyhow::Error {
        let registry = self.reference.resolve_registry();
        let mut cause = format!("{request}");
        let mut source = std::error::Error::source(request);
        while let Some(inner) = source {
            cause = format!("{cause}: {inner}");
            source = inner.source();
        }
        let hint = if request.is_connect() || request.is_timeout() {
            "; is the registry running there (and, for plain HTTP, is --insecure given)?"
        } else {
            ""
        };
        anyhow!(
            "{doing} {}: cannot reach {registry}: {cause}{hint}",
            self.reference
        )
    }
}

/// What a pull's request asked for, to word a `404` without an error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    Manifest,
    Blob,
}

/// An image manifest (an image index, or anything else, is not a Spin app).
fn parse_manifest(bytes: &[u8]) -> Result<OciImageManifest> {
    let manifest: OciImageManifest = serde_json::from_slice(bytes).map_err(|e| {
        anyhow!("not a Spin application: its manifest is not an OCI image manifest ({e})")
    })?;
    if manifest
        .media_type
        .as_deref()
        .is_some_and(|media_type| !MANIFEST_TYPES.contains(&media_type))
    {
        bail!(
            "not a Spin application: its manifest is of type {}",
            manifest.media_type.unwrap_or_default()
        );
    }
    Ok(manifest)
}

/// Runs `future` to completion on a runtime of its own, on this thread
/// (which must not be running one: the CLI pulls before it serves; an async
/// caller, such as a shim, awaits [`Registry`]'s methods instead).
pub fn block_on<T>(future: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting a runtime for the registry client")?
        .block_on(future)
}
