//! Registry credentials, looked up as Spin 4.0.2 looks them up
//! (spinframework/spin v4.0.2 `crates/oci/src/client.rs`, `Client::auth`, and
//! `auth.rs`), first found wins:
//! 1. `spinbench registry login`'s file, `$XDG_CONFIG_HOME/spinbench/registry-auth.json`;
//! 2. `spin registry login`'s, `$XDG_CONFIG_HOME/fermyon/registry-auth.json`
//!    (both `{"auths": {"<server>": "<base64 of user:password>"}}`);
//! 3. Docker's config (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`):
//!    the server's credential helper, its `auths` entry, or the credentials
//!    store (read by the `docker_credential` crate, which Spin uses);
//! 4. none: anonymous.
//!
//! The server is the reference's registry (`index.docker.io` for Docker Hub).

use anyhow::{Context, Result};
use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A login file: base64 `user:password` by server.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct AuthFile {
    pub auths: BTreeMap<String, String>,
}

/// `$XDG_CONFIG_HOME`, else `~/.config`.
fn config_dir() -> Option<PathBuf> {
    let nonempty = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    nonempty("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| nonempty("HOME").map(|home| Path::new(&home).join(".config")))
}

/// Where `spinbench registry login` keeps credentials.
pub fn login_file() -> Option<PathBuf> {
    config_dir().map(|dir| dir.join("spinbench/registry-auth.json"))
}

/// Where `spin registry login` keeps them.
fn spin_login_file() -> Option<PathBuf> {
    config_dir().map(|dir| dir.join("fermyon/registry-auth.json"))
}

/// The credentials for `server`, and where they came from (for messages).
pub fn credentials(server: &str) -> (RegistryAuth, String) {
    for file in [login_file(), spin_login_file()].into_iter().flatten() {
        if let Some((user, password)) = AuthFile::load(&file).ok().and_then(|f| f.get(server)) {
            return (
                RegistryAuth::Basic(user, password),
                file.display().to_string(),
            );
        }
    }
    match docker_credential::get_credential(server) {
        Ok(docker_credential::DockerCredential::UsernamePassword(user, password)) => (
            RegistryAuth::Basic(user, password),
            "Docker's config".to_string(),
        ),
        // Spin reads no identity tokens either.
        Ok(docker_credential::DockerCredential::IdentityToken(_)) => (
            RegistryAuth::Anonymous,
            "none (Docker's config has an identity token, which is not used)".to_string(),
        ),
        Err(docker_credential::CredentialRetrievalError::HelperFailure {
            helper, stderr, ..
        }) => (
            RegistryAuth::Anonymous,
            format!(
                "none (Docker's credential helper {helper} failed: {})",
                stderr.trim()
            ),
        ),
        Err(_) => (RegistryAuth::Anonymous, "none".to_string()),
    }
}

/// A server as `spin registry login` keys it: a URL's host (and port), and
/// Docker Hub's `docker.io` as `index.docker.io`.
pub fn server_key(input: &str) -> String {
    let server = url::Url::parse(input)
        .ok()
        .filter(|url| url.has_host() && matches!(url.scheme(), "http" | "https"))
        .map_or_else(
            || input.trim_end_matches('/').to_string(),
            |url| match url.port() {
                Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
                None => url.host_str().unwrap_or_default().to_string(),
            },
        );
    if server == "docker.io" {
        "index.docker.io".to_string()
    } else {
        server
    }
}

impl AuthFile {
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)?;
        serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))
    }

    /// The user and password kept for `server`.
    pub fn get(&self, server: &str) -> Option<(String, String)> {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(self.auths.get(server)?)
            .ok()?;
        let (user, password) = std::str::from_utf8(&decoded).ok()?.split_once(':')?;
        Some((user.to_string(), password.to_string()))
    }

    pub fn insert(&mut self, server: &str, user: &str, password: &str) {
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        self.auths.insert(server.to_string(), encoded);
    }

    /// Writes the file readable by its owner only (it holds passwords): a
    /// temporary file (created 0600) renamed into place.
    pub fn save(&self, path: &Path) -> Result<()> {
        let dir = path.parent().context("no parent directory")?;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        std::io::Write::write_all(&mut file, &serde_json::to_vec_pretty(self)?)?;
        file.persist(path)
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_are_keyed_as_spin_keys_them() {
        assert_eq!(server_key("https://ghcr.io"), "ghcr.io");
        assert_eq!(server_key("ghcr.io"), "ghcr.io");
        assert_eq!(server_key("http://127.0.0.1:5000/"), "127.0.0.1:5000");
        assert_eq!(server_key("127.0.0.1:5000"), "127.0.0.1:5000");
        assert_eq!(server_key("docker.io"), "index.docker.io");
    }

    #[test]
    fn a_login_file_keeps_base64_user_and_password_by_server() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/registry-auth.json");
        let mut file = AuthFile::default();
        file.insert("r.io", "me", "pa:ss");
        file.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        // Spin's form: base64 of `me:pa:ss`.
        assert!(text.contains("bWU6cGE6c3M="), "{text}");
        let read = AuthFile::load(&path).unwrap();
        assert_eq!(read.get("r.io"), Some(("me".into(), "pa:ss".into())));
        assert_eq!(read.get("other.io"), None);
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }
}
