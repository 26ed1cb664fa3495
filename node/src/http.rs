//! The probes' client: one HTTP/1.1 GET, bounded in time, any status an answer.

use anyhow::{Context, Result};
use std::time::Duration;

/// `GET url` within `limit`: its status and body (bodies over 1 MiB are an error).
pub fn get(url: &str, limit: Duration) -> Result<(u16, String)> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(limit))
        .build()
        .into();
    let mut response = agent
        .get(url)
        .call()
        .with_context(|| format!("GET {url}"))?;
    let status = response.status().as_u16();
    let body = response
        .body_mut()
        .with_config()
        .limit(1 << 20)
        .read_to_string()
        .with_context(|| format!("GET {url}: the body"))?;
    Ok((status, body))
}
