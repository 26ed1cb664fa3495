//! `GET /<store>/<key>`: the value (404 if none); `PUT /<store>/<key>?<value>`:
//! sets it; `DELETE /<store>/<key>`; `GET /<store>`: the keys, sorted, one a
//! line. A store error is a 500 whose body is the error (`AccessDenied`).

use spin_sdk::http::{IntoResponse, Method, Request, Response};
use spin_sdk::http_service;
use spin_sdk::key_value::Store;

#[http_service]
async fn handle_key_value(req: Request) -> anyhow::Result<impl IntoResponse> {
    let path = req.uri().path().trim_start_matches('/').to_string();
    let (label, key) = match path.split_once('/') {
        Some((label, key)) => (label.to_string(), Some(key.to_string())),
        None => (path, None),
    };
    let value = req.uri().query().unwrap_or_default().to_string();
    let (status, body) = match answer(req.method(), &label, key, value).await {
        Ok(answer) => answer,
        Err(error) => (500, format!("{error:?}")),
    };
    Ok(Response::builder()
        .status(status)
        .header("content-type", "text/plain")
        .body(body))
}

async fn answer(
    method: &Method,
    label: &str,
    key: Option<String>,
    value: String,
) -> Result<(u16, String), spin_sdk::key_value::Error> {
    let store = Store::open(label).await?;
    Ok(match (method, key) {
        (&Method::GET, None) => {
            let mut keys = store.get_keys().await.collect().await?;
            keys.sort();
            (200, keys.join("\n"))
        }
        (&Method::GET, Some(key)) => match store.get(&key).await? {
            Some(value) => (200, String::from_utf8_lossy(&value).into_owned()),
            None => (404, format!("no key {key:?}")),
        },
        (&Method::PUT, Some(key)) => {
            store.set(&key, value.as_bytes()).await?;
            (200, format!("set {key}"))
        }
        (&Method::DELETE, Some(key)) => {
            store.delete(&key).await?;
            let gone = !store.exists(&key).await?;
            (200, format!("deleted {key}: {gone}"))
        }
        _ => (405, "GET, PUT or DELETE /<store>/<key>".to_string()),
    })
}
