//! Each route exercises `wasi:keyvalue@0.2.0-draft2` on the `default` store
//! and answers `200` with what came of it, or `500` with the store's error
//! (`access-denied`, `no-such-store`, `other: <message>`):
//!
//! - `GET /open?<label>`: `opened <label>`;
//! - `PUT /value/<key>?<value>`, `GET /value/<key>` (404 if none),
//!   `DELETE /value/<key>` (`deleted <key>`), `GET /exists/<key>`;
//! - `GET /keys[?<cursor>]`: `list-keys`, the keys sorted, one a line, then
//!   `cursor: <none|cursor>`;
//! - `POST /set-many?<k>=<v>&..`, `GET /get-many?<k>,<k>,..` (`k=v` a line,
//!   in the order answered), `POST /delete-many?<k>,<k>,..`;
//! - `POST /increment/<key>?<delta>`: the new value;
//! - `POST /cas/<key>?<value>`: reads, swaps, answers `<old> -> <value>`;
//! - `POST /cas-conflict/<key>?<value>`: reads, changes the key behind the
//!   `cas`'s back to `intruder`, swaps (which must fail), then retries with
//!   the `cas` the failure hands back;
//! - `PUT /spin/<key>?<value>`: sets through Spin's own
//!   `fermyon:spin/key-value@2.0.0`, for the `wasi:keyvalue` routes to read.

mod bindings {
    wit_bindgen::generate!({ path: "wit", world: "app", generate_all });
}

use bindings::wasi::keyvalue::atomics::{self, Cas, CasError};
use bindings::wasi::keyvalue::batch;
use bindings::wasi::keyvalue::store::{self, Bucket, Error};
use spin_sdk::http::{Method, Request, Response};
use spin_sdk::http_component;

#[http_component]
fn handle(req: Request) -> anyhow::Result<Response> {
    let path = req.path().trim_start_matches('/').to_string();
    let (route, key) = match path.split_once('/') {
        Some((route, key)) => (route.to_string(), key.to_string()),
        None => (path, String::new()),
    };
    let query = req.query().to_string();
    let (status, body) = match answer(req.method(), &route, &key, &query) {
        Ok(answer) => answer,
        Err(error) => (500, describe(&error)),
    };
    Ok(Response::builder()
        .status(status)
        .header("content-type", "text/plain")
        .body(body)
        .build())
}

fn describe(error: &Error) -> String {
    match error {
        Error::NoSuchStore => "no-such-store".to_string(),
        Error::AccessDenied => "access-denied".to_string(),
        Error::Other(message) => format!("other: {message}"),
    }
}

fn text(value: Option<Vec<u8>>) -> String {
    value.map_or_else(
        || "<none>".to_string(),
        |v| String::from_utf8_lossy(&v).into_owned(),
    )
}

fn answer(method: &Method, route: &str, key: &str, query: &str) -> Result<(u16, String), Error> {
    if route == "open" {
        store::open(query)?;
        return Ok((200, format!("opened {query}")));
    }
    if route == "spin" {
        let spin = spin_sdk::key_value::Store::open_default()
            .map_err(|error| Error::Other(format!("{error:?}")))?;
        spin.set(key, query.as_bytes())
            .map_err(|error| Error::Other(format!("{error:?}")))?;
        return Ok((200, format!("spin set {key}")));
    }
    let bucket = store::open("default")?;
    Ok(match (method, route) {
        (Method::Put, "value") => {
            bucket.set(key, query.as_bytes())?;
            (200, format!("set {key}"))
        }
        (Method::Get, "value") => match bucket.get(key)? {
            Some(value) => (200, text(Some(value))),
            None => (404, format!("no key {key:?}")),
        },
        (Method::Delete, "value") => {
            bucket.delete(key)?;
            (200, format!("deleted {key}"))
        }
        (Method::Get, "exists") => (200, bucket.exists(key)?.to_string()),
        (Method::Get, "keys") => {
            let cursor = (!query.is_empty()).then_some(query);
            let mut response = bucket.list_keys(cursor)?;
            response.keys.sort();
            let cursor = response.cursor.unwrap_or_else(|| "none".to_string());
            let mut lines = response.keys;
            lines.push(format!("cursor: {cursor}"));
            (200, lines.join("\n"))
        }
        (Method::Post, "set-many") => {
            let pairs: Vec<(String, Vec<u8>)> = query
                .split('&')
                .filter_map(|pair| pair.split_once('='))
                .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
                .collect();
            batch::set_many(&bucket, &pairs)?;
            (200, format!("set {}", pairs.len()))
        }
        (Method::Get, "get-many") => {
            let keys = list(query);
            let found = batch::get_many(&bucket, &keys)?;
            let lines: Vec<String> = found
                .into_iter()
                .map(|(k, v)| format!("{k}={}", text(v)))
                .collect();
            (200, lines.join("\n"))
        }
        (Method::Post, "delete-many") => {
            let keys = list(query);
            batch::delete_many(&bucket, &keys)?;
            (200, format!("deleted {}", keys.len()))
        }
        (Method::Post, "increment") => {
            let delta = query
                .parse()
                .map_err(|_| Error::Other(format!("delta {query:?} is not an s64")))?;
            (200, atomics::increment(&bucket, key, delta)?.to_string())
        }
        (Method::Post, "cas") => {
            let cas = Cas::new(&bucket, key)?;
            let old = text(cas.current()?);
            atomics::swap(cas, query.as_bytes()).map_err(store_error)?;
            (200, format!("{old} -> {query}"))
        }
        (Method::Post, "cas-conflict") => cas_conflict(&bucket, key, query)?,
        _ => (405, "no such route".to_string()),
    })
}

fn list(query: &str) -> Vec<String> {
    query
        .split(',')
        .filter(|k| !k.is_empty())
        .map(String::from)
        .collect()
}

/// A swap after another write must fail with a fresh `cas`, whose value is
/// the other write's, and whose own swap then succeeds.
fn cas_conflict(bucket: &Bucket, key: &str, value: &str) -> Result<(u16, String), Error> {
    let cas = Cas::new(bucket, key)?;
    let read = text(cas.current()?);
    bucket.set(key, b"intruder")?;
    let retry = match atomics::swap(cas, value.as_bytes()) {
        Ok(()) => return Ok((409, format!("read {read}, swapped over a change"))),
        Err(CasError::StoreError(error)) => return Err(error),
        Err(CasError::CasFailed(retry)) => retry,
    };
    let seen = text(retry.current()?);
    atomics::swap(retry, value.as_bytes()).map_err(store_error)?;
    Ok((
        200,
        format!("read {read}; failed, then saw {seen}; retried: {value}"),
    ))
}

fn store_error(error: CasError) -> Error {
    match error {
        CasError::StoreError(error) => error,
        CasError::CasFailed(_) => Error::Other("cas-failed".to_string()),
    }
}
