//! A real OCI registry for the tests: Debian's `docker-registry` (the CNCF
//! distribution registry) on a leased loopback port, with its own storage
//! folder and config, requiring a user and password (htpasswd). One is
//! started per test binary and shared by its tests ([`Registry::shared`]),
//! as a [`Service`]: the kernel stops it when the test process ends.

use crate::service::{Recipe, Service};
use crate::workspace_root;
use std::io::Read as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// The user the registry knows, and its password.
pub const USER: &str = "tester";
pub const PASSWORD: &str = "spinbench-secret";
/// `PASSWORD`'s bcrypt hash (htpasswd's only scheme the registry takes;
/// made once with Python's `crypt`, METHOD_BLOWFISH, 16 rounds).
const PASSWORD_HASH: &str = "$2b$04$HlkfuPCBwNDG0uhJqFmjEus9kNq9MWe/0Rzwq6h2dbGf7fKnmzlI6";

pub struct Registry {
    pub addr: SocketAddr,
    /// Its folder: config, htpasswd, storage (`data/`).
    pub dir: PathBuf,
    service: Service,
}

impl Registry {
    /// The test binary's registry, started on first use and stopped when the
    /// test process ends ([`crate::process`]); `None` (after one "skipped" line)
    /// where `docker-registry` is not installed.
    pub fn shared() -> Option<&'static Registry> {
        static SHARED: OnceLock<Option<Registry>> = OnceLock::new();
        SHARED.get_or_init(Registry::start).as_ref()
    }

    fn start() -> Option<Registry> {
        let Some(program) = crate::on_path("docker-registry") else {
            eprintln!("skipped: docker-registry not on PATH (apt-get install docker-registry)");
            return None;
        };
        let dir = own_folder();
        std::fs::write(
            dir.path().join("htpasswd"),
            format!("{USER}:{PASSWORD_HASH}\n"),
        )
        .unwrap();
        let command = |port: u16, dir: &Path| {
            let config = dir.join("config.yml");
            std::fs::write(
                &config,
                format!(
                    "version: 0.1\n\
                     log: {{ level: info, accesslog: {{ disabled: false }} }}\n\
                     storage: {{ filesystem: {{ rootdirectory: {data} }}, delete: {{ enabled: true }} }}\n\
                     http: {{ addr: 127.0.0.1:{port} }}\n\
                     auth: {{ htpasswd: {{ realm: spinbench, path: {htpasswd} }} }}\n",
                    data = dir.join("data").display(),
                    htpasswd = dir.join("htpasswd").display(),
                ),
            )
            .expect("the registry's config");
            let mut command = Command::new(&program);
            command.arg("serve").arg(config);
            command
        };
        // Ready when its API answers, asking for the credentials it was given.
        let ready = |port: u16, _: &Path| {
            ureq::get(format!("http://127.0.0.1:{port}/v2/"))
                .config()
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs(2)))
                .build()
                .call()
                .is_ok_and(|response| response.status() == 401)
        };
        let recipe = Recipe {
            name: "docker-registry",
            command: &command,
            ready: &ready,
        };
        let service = Service::start(&recipe, dir);
        Some(Registry {
            addr: SocketAddr::from(([127, 0, 0, 1], service.port)),
            dir: service.dir().to_path_buf(),
            service,
        })
    }

    /// `127.0.0.1:<port>`, a reference's registry part.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// `<host>/<repository>`.
    pub fn reference(&self, repository: &str) -> String {
        format!("{}/{repository}", self.host())
    }

    /// What the registry logged so far (one access-log line per request).
    pub fn log(&self) -> String {
        self.service.log()
    }

    /// How many blobs were fetched so far (`GET /v2/<name>/blobs/...` answered 200).
    pub fn blob_downloads(&self) -> usize {
        self.log()
            .lines()
            .filter(|line| line.contains("\"GET /v2/") && line.contains("/blobs/sha256:"))
            .filter(|line| line.contains("HTTP/1.1\" 200"))
            .count()
    }

    /// `GET path`, with the user's credentials if `authorized`: status and body
    /// (`None` if the registry does not answer).
    pub fn get(&self, path: &str, authorized: bool) -> Option<(u16, Vec<u8>)> {
        self.request("GET", path, authorized, &[], None)
    }

    /// One request to the registry's API, answered with its status and body.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        authorized: bool,
        body: &[u8],
        content_type: Option<&str>,
    ) -> Option<(u16, Vec<u8>)> {
        let url = if path.starts_with("http") {
            path.to_string()
        } else {
            format!("http://{}{path}", self.addr)
        };
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .new_agent();
        let mut request = ureq::http::Request::builder()
            .method(method)
            .uri(url)
            .header("Accept", "application/vnd.oci.image.manifest.v1+json");
        if authorized {
            request = request.header("Authorization", basic_auth());
        }
        if let Some(content_type) = content_type {
            request = request.header("Content-Type", content_type);
        }
        let mut response = agent.run(request.body(body.to_vec()).ok()?).ok()?;
        let status = response.status().as_u16();
        let mut bytes = Vec::new();
        let location = response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        response
            .body_mut()
            .as_reader()
            .read_to_end(&mut bytes)
            .ok()?;
        // An upload's next URL, for `put_blob`.
        Some((status, location.map_or(bytes, String::into_bytes)))
    }

    /// Uploads `bytes` as a blob of `repository` (monolithically) and returns its digest.
    pub fn put_blob(&self, repository: &str, bytes: &[u8]) -> String {
        let digest = crate::sha256_digest(bytes);
        let (status, location) = self
            .request(
                "POST",
                &format!("/v2/{repository}/blobs/uploads/"),
                true,
                &[],
                None,
            )
            .expect("upload started");
        assert_eq!(status, 202, "starting an upload");
        let location = String::from_utf8(location).unwrap();
        let separator = if location.contains('?') { '&' } else { '?' };
        let (status, _) = self
            .request(
                "PUT",
                &format!("{location}{separator}digest={digest}"),
                true,
                bytes,
                Some("application/octet-stream"),
            )
            .expect("upload finished");
        assert_eq!(status, 201, "finishing an upload");
        digest
    }

    /// Puts `manifest` (JSON of `media_type`) as `repository:tag`.
    pub fn put_manifest(&self, repository: &str, tag: &str, media_type: &str, manifest: &[u8]) {
        let (status, body) = self
            .request(
                "PUT",
                &format!("/v2/{repository}/manifests/{tag}"),
                true,
                manifest,
                Some(media_type),
            )
            .expect("manifest put");
        assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    }

    /// Where the registry keeps blob `digest`'s bytes on disk.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.dir
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// The link that makes blob `digest` part of `repository`.
    pub fn layer_link(&self, repository: &str, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.dir
            .join("data/docker/registry/v2/repositories")
            .join(repository)
            .join("_layers/sha256")
            .join(hex)
    }

    /// A Docker config folder (for `DOCKER_CONFIG`) holding the user's
    /// credentials for this registry in `auths`, written under `dir`.
    pub fn docker_config(&self, dir: &Path) -> PathBuf {
        let config = dir.join("docker");
        std::fs::create_dir_all(&config).unwrap();
        let auths = serde_json::json!({ "auths": { self.host(): { "auth": base64_user() } } });
        std::fs::write(config.join("config.json"), auths.to_string()).unwrap();
        config
    }
}

/// A one-component app (`hello`) in `dir` (created), small to push and pull:
/// hello.wasm with a custom section naming `label`, so that its layer is its
/// own (the registry keeps one copy of a blob for every repository, and some
/// tests change the copy).
pub fn hello_app(dir: &Path, label: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let mut wasm = std::fs::read(crate::artifact("wasm32-wasip2/release/hello.wasm")).unwrap();
    let name = b"spinbench-test";
    let size = 1 + name.len() + label.len();
    assert!(size < 128, "a one-byte section size");
    wasm.extend([
        0,
        u8::try_from(size).unwrap(),
        u8::try_from(name.len()).unwrap(),
    ]);
    wasm.extend(name);
    wasm.extend(label.as_bytes());
    std::fs::write(dir.join("hello.wasm"), wasm).unwrap();
    let manifest = dir.join("spin.toml");
    std::fs::write(
        &manifest,
        "spin_manifest_version = 2\n[application]\nname = \"hello\"\n\
         [[trigger.http]]\nroute = \"/hello\"\ncomponent = \"hello\"\n\
         [component.hello]\nsource = \"hello.wasm\"\n",
    )
    .unwrap();
    manifest
}

fn basic_auth() -> String {
    format!("Basic {}", base64_user())
}

/// `USER:PASSWORD` in base64, as Docker's config and Basic auth carry it.
fn base64_user() -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"))
}

/// A fresh folder for a registry under target/e2e-registry/, named for this
/// test process; the folders of test processes that are gone are removed (a
/// shared registry lives as long as its process, so no destructor removes its
/// folder).
fn own_folder() -> tempfile::TempDir {
    let parent = workspace_root().join("target/e2e-registry");
    std::fs::create_dir_all(&parent).expect("target/e2e-registry");
    for entry in std::fs::read_dir(&parent).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let owner = name.to_str().and_then(|n| n.split('-').next());
        if owner.is_some_and(|pid| !Path::new("/proc").join(pid).exists()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    tempfile::Builder::new()
        .prefix(&format!("{}-", std::process::id()))
        .tempdir_in(&parent)
        .expect("the registry's folder")
}
