//! A pull's requests to a registry, each answer read under a bound: the
//! manifest up to `--max-manifest-size`, a blob up to the size its
//! descriptor gives (refused at once when the answer says it is longer, and
//! stopped at the first byte past it when it does not say) and hashed as it
//! is written to the store, an error's body up to 64 KiB.
//!
//! These two requests are made here, not through `oci-client`: its 0.18
//! `pull_manifest_raw` reads the whole answer before anything checks it
//! (`res.bytes()`, client.rs `_pull_manifest_raw`), so does an error answer
//! to a blob (`stream_from_response`), and a blob whose descriptor lists
//! `urls` is fetched from those addresses when the registry fails
//! (`pull_blob_response`): a manifest would choose what the puller dials.
//! Here a blob comes from the registry the reference names, and nowhere
//! else. `oci-client` still finds the credentials' token (`Client::auth`),
//! and pushes.

use crate::store::BlobWriter;
use anyhow::anyhow;
use oci_client::Reference;
use spinbench_host::manifest::Digest;
use std::time::Duration;

/// Bytes of an error answer read for its message.
const MAX_ERROR_BODY: u64 = 64 << 10;

/// How a request failed, for the caller to word.
#[derive(Debug)]
pub enum FetchError {
    /// The registry answered with an error status: its OCI error codes and messages.
    Status {
        status: u16,
        codes: Vec<String>,
        message: String,
    },
    /// The registry could not be reached, or stopped answering.
    Transport(reqwest::Error),
    /// The answer broke a bound or did not match what was asked.
    Refused(anyhow::Error),
}

impl From<reqwest::Error> for FetchError {
    fn from(error: reqwest::Error) -> Self {
        FetchError::Transport(error)
    }
}

/// Requests to one repository, with the credentials a pull found.
pub struct Fetch {
    http: reqwest::Client,
    /// `<scheme>://<registry>/v2/<repository>`.
    base: String,
    authorization: Option<String>,
}

impl Fetch {
    pub fn new(
        reference: &Reference,
        insecure: bool,
        authorization: Option<String>,
        timeout: Duration,
    ) -> Result<Self, FetchError> {
        let http = reqwest::Client::builder()
            .danger_accept_invalid_certs(insecure)
            .connect_timeout(timeout)
            .read_timeout(timeout)
            .user_agent(concat!("spinbench/", env!("CARGO_PKG_VERSION")))
            .build()?;
        let scheme = if insecure { "http" } else { "https" };
        Ok(Self {
            http,
            base: format!(
                "{scheme}://{}/v2/{}",
                reference.resolve_registry(),
                reference.repository()
            ),
            authorization,
        })
    }

    /// The manifest `tag_or_digest` names, of one of `accept`'s types, up to `max` bytes.
    pub async fn manifest(
        &self,
        tag_or_digest: &str,
        accept: &[&str],
        max: u64,
    ) -> Result<Vec<u8>, FetchError> {
        let url = format!("{}/manifests/{tag_or_digest}", self.base);
        let response = self.get(&url, &accept.join(", ")).await?;
        let refusal = || {
            FetchError::Refused(anyhow!(
                "the manifest is longer than {max} bytes, {}",
                crate::boundary::limits::Bound::Manifest.past(max)
            ))
        };
        let mut bytes = Vec::new();
        read_bounded(response, max, refusal, |chunk| {
            bytes.extend_from_slice(chunk);
            Ok(())
        })
        .await?;
        Ok(bytes)
    }

    /// Blob `digest`, exactly `size` bytes, streamed into `writer`.
    pub async fn blob(
        &self,
        digest: Digest,
        size: u64,
        writer: &mut BlobWriter,
    ) -> Result<(), FetchError> {
        let url = format!("{}/blobs/{digest}", self.base);
        let response = self.get(&url, "*/*").await?;
        let refusal = || {
            FetchError::Refused(anyhow!(
                "the registry sends more than the {size} bytes its descriptor gives"
            ))
        };
        let received = read_bounded(response, size, refusal, |chunk| {
            writer.write(chunk).map_err(FetchError::Refused)
        })
        .await?;
        if received != size {
            return Err(FetchError::Refused(anyhow!(
                "the registry sent {received} bytes, not the {size} its descriptor gives"
            )));
        }
        Ok(())
    }

    /// A GET with the credentials, its answer if it is a success.
    async fn get(&self, url: &str, accept: &str) -> Result<reqwest::Response, FetchError> {
        let mut request = self.http.get(url).header(reqwest::header::ACCEPT, accept);
        if let Some(authorization) = &self.authorization {
            // reqwest drops it on a redirect to another host (a blob store).
            request = request.header(reqwest::header::AUTHORIZATION, authorization);
        }
        let response = request.send().await?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let mut body = Vec::new();
        let _ = read_bounded(
            response,
            MAX_ERROR_BODY,
            || FetchError::Refused(anyhow!("")),
            |chunk| {
                body.extend_from_slice(chunk);
                Ok(())
            },
        )
        .await;
        let (codes, message) = envelope(&body);
        Err(FetchError::Status {
            status: status.as_u16(),
            codes,
            message,
        })
    }
}

/// Reads `response` into `sink` chunk by chunk, refusing it (`refusal`) as
/// soon as it says, or turns out, to be longer than `limit`; returns its length.
async fn read_bounded(
    mut response: reqwest::Response,
    limit: u64,
    refusal: impl Fn() -> FetchError,
    mut sink: impl FnMut(&[u8]) -> Result<(), FetchError>,
) -> Result<u64, FetchError> {
    if response
        .content_length()
        .is_some_and(|length| length > limit)
    {
        return Err(refusal());
    }
    let mut total: u64 = 0;
    while let Some(chunk) = response.chunk().await? {
        total = total.saturating_add(chunk.len() as u64);
        if total > limit {
            return Err(refusal());
        }
        sink(&chunk)?;
    }
    Ok(total)
}

/// The codes and messages of an OCI error body (`{"errors": [{code, message}]}`).
fn envelope(body: &[u8]) -> (Vec<String>, String) {
    #[derive(serde::Deserialize)]
    struct Envelope {
        errors: Vec<Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        code: String,
        #[serde(default)]
        message: String,
    }
    match serde_json::from_slice::<Envelope>(body) {
        Ok(envelope) => {
            let message = envelope
                .errors
                .iter()
                .map(|e| format!("{}: {}", e.code, e.message))
                .collect::<Vec<_>>()
                .join("; ");
            let codes = envelope.errors.into_iter().map(|e| e.code).collect();
            (codes, message)
        }
        Err(_) => (
            Vec::new(),
            String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_error_body_gives_its_codes_and_messages() {
        let (codes, message) = super::envelope(
            br#"{"errors":[{"code":"BLOB_UNKNOWN","message":"blob unknown to registry"}]}"#,
        );
        assert_eq!(codes, ["BLOB_UNKNOWN"]);
        assert_eq!(message, "BLOB_UNKNOWN: blob unknown to registry");
        let (codes, message) = super::envelope(b"<html>nope</html>");
        assert!(codes.is_empty());
        assert_eq!(message, "<html>nope</html>");
    }
}
