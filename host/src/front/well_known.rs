//! The paths Spin's HTTP trigger answers itself, under `/.well-known/spin/`
//! (spinframework/spin `crates/trigger-http/src/server.rs`, v4.0.2): `health`
//! (`200 OK`) and `info` (the application's name and version, as JSON);
//! anything else there is a `404`, whatever the routes say.

use super::reply;
use crate::instance::Body;
use crate::manifest::Manifest;
use bytes::Bytes;
use http::{Response, header};

const PREFIX: &str = "/.well-known/spin/";

#[derive(Debug, Clone)]
pub struct WellKnown {
    /// `info`'s body, built once.
    info: Bytes,
}

impl WellKnown {
    pub fn new(manifest: &Manifest) -> Self {
        let mut info = serde_json::Map::new();
        info.insert("name".into(), manifest.application.name().into());
        if let Some(version) = manifest.application.version() {
            info.insert("version".into(), version.into());
        }
        let info = serde_json::to_vec_pretty(&info).unwrap_or_default();
        Self {
            info: Bytes::from(info),
        }
    }

    /// The answer to `path` if it is a well-known one.
    pub fn answer(&self, path: &str) -> Option<Response<Body>> {
        let name = path.strip_prefix(PREFIX)?;
        Some(match name {
            "health" => Response::new(reply::full(Bytes::from_static(b"OK"))),
            "info" => {
                let mut response = Response::new(reply::full(self.info.clone()));
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    header::HeaderValue::from_static("application/json"),
                );
                response
            }
            _ => reply::no_route(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn answer(path: &str) -> Option<(u16, String)> {
        let manifest = Manifest::parse(
            "spin_manifest_version = 2\n[application]\nname = \"shop\"\nversion = \"1.2.0\"\n[trigger]\n",
            "/".into(),
        )
        .unwrap();
        let response = WellKnown::new(&manifest).answer(path)?;
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        Some((status, String::from_utf8(body.to_vec()).unwrap()))
    }

    #[tokio::test]
    async fn health_info_and_nothing_else() {
        assert_eq!(
            answer("/.well-known/spin/health").await,
            Some((200, "OK".into()))
        );
        let (status, info) = answer("/.well-known/spin/info").await.unwrap();
        assert_eq!(status, 200);
        let info: serde_json::Value = serde_json::from_str(&info).unwrap();
        assert_eq!(
            info,
            serde_json::json!({"name": "shop", "version": "1.2.0"})
        );
        assert_eq!(
            answer("/.well-known/spin/other").await,
            Some((404, String::new()))
        );
        assert_eq!(answer("/health").await, None);
    }
}
