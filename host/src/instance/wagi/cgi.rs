//! WAGI's CGI translation, as Spin 4.0.2 does it (spinframework/spin v4.0.2
//! `crates/http/src/wagi/mod.rs`, `crates/trigger-http/src/wagi.rs` and
//! `headers.rs`): a request becomes a command line and CGI/1.1 environment
//! variables (RFC 3875), and what the program writes to stdout becomes the
//! response.

use bytes::{Bytes, BytesMut};
use http::{HeaderName, HeaderValue, Response, StatusCode};
use percent_encoding::percent_decode_str;
use std::collections::BTreeMap;

/// The `spin-*` request headers and the CGI variable each is passed as
/// (Spin's `compute_default_headers` pairs); `spin-path-match-<name>` is
/// `X_PATH_MATCH_<NAME>`.
const SPIN_HEADER_VARIABLES: &[(&str, &str)] = &[
    ("spin-full-url", "X_FULL_URL"),
    ("spin-path-info", "PATH_INFO"),
    ("spin-matched-route", "X_MATCHED_ROUTE"),
    ("spin-component-route", "X_COMPONENT_ROUTE"),
    ("spin-raw-component-route", "X_RAW_COMPONENT_ROUTE"),
    ("spin-base-path", "X_BASE_PATH"),
    ("spin-client-addr", "X_CLIENT_ADDR"),
];
const PATH_MATCH_HEADER: &str = "spin-path-match-";

/// The program's arguments: `argv` split at spaces, `${SCRIPT_NAME}` the
/// request's path and `${ARGS}` its query with each `&` a space (so an empty
/// query leaves an empty argument, as in Spin).
pub fn arguments(argv: &str, uri: &http::Uri) -> Vec<String> {
    let args = uri.query().unwrap_or_default().replace('&', " ");
    argv.replace("${SCRIPT_NAME}", uri.path())
        .replace("${ARGS}", &args)
        .split(' ')
        .map(str::to_string)
        .collect()
}

/// The CGI environment of a request whose `spin-*` headers are set (by the
/// front) and whose body is `content_length` bytes.
pub fn environment(parts: &http::request::Parts, content_length: usize) -> Vec<(String, String)> {
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    };
    let (server_name, server_port) = server_name_and_port(parts);
    let path_info = header("spin-path-info");
    let client_ip = header("spin-client-addr")
        .parse::<std::net::SocketAddr>()
        .map(|addr| addr.ip().to_string())
        .unwrap_or_default();
    let mut variables = BTreeMap::new();
    let mut set = |name: &str, value: String| {
        variables.insert(name.to_string(), value);
    };
    set("AUTH_TYPE", String::new());
    set("CONTENT_LENGTH", content_length.to_string());
    // Spin looks the type up under the name `CONTENT_TYPE`, which no request
    // header has: it is always empty there (the type is in HTTP_CONTENT_TYPE).
    set("CONTENT_TYPE", String::new());
    set("GATEWAY_INTERFACE", "CGI/1.1".into());
    set("QUERY_STRING", parts.uri.query().unwrap_or_default().into());
    set("REMOTE_ADDR", client_ip.clone());
    set("REMOTE_HOST", client_ip);
    set("REMOTE_USER", String::new());
    set("REQUEST_METHOD", parts.method.to_string());
    let matched = header("spin-matched-route");
    set(
        "SCRIPT_NAME",
        matched.strip_suffix("/...").unwrap_or(matched).to_string(),
    );
    set("X_RAW_PATH_INFO", path_info.to_string());
    set(
        "PATH_TRANSLATED",
        percent_decode_str(path_info)
            .decode_utf8_lossy()
            .into_owned(),
    );
    set("SERVER_NAME", server_name);
    set("SERVER_PORT", server_port);
    set("SERVER_PROTOCOL", format!("{:?}", parts.version));
    set("SERVER_SOFTWARE", "WAGI/1".into());
    for (name, value) in &parts.headers {
        let name = name.as_str();
        if name.starts_with("spin-") || name == "authorization" || name == "connection" {
            continue;
        }
        let value = value.to_str().unwrap_or("CORRUPT VALUE").to_string();
        set(
            &format!("HTTP_{}", name.to_uppercase().replace('-', "_")),
            value,
        );
    }
    // Spin's own values last: they win over any variable of the same name.
    for (header_name, variable) in SPIN_HEADER_VARIABLES {
        set(variable, header(header_name).to_string());
    }
    for (name, value) in &parts.headers {
        if let Some(param) = name.as_str().strip_prefix(PATH_MATCH_HEADER) {
            let variable = format!("X_PATH_MATCH_{}", param.to_uppercase().replace('-', "_"));
            set(&variable, value.to_str().unwrap_or_default().to_string());
        }
    }
    variables.into_iter().collect()
}

/// `SERVER_NAME` and `SERVER_PORT`: from the `Host` header, else Spin's
/// hard-coded `default_host` and the URI's port or 80.
fn server_name_and_port(parts: &http::request::Parts) -> (String, String) {
    let mut host = "default_host".to_string();
    let mut port = parts.uri.port_u16().unwrap_or(80).to_string();
    if let Some(value) = parts
        .headers
        .get(http::header::HOST)
        .and_then(|value| value.to_str().ok())
    {
        let mut pieces = value.splitn(2, ':');
        if let Some(name) = pieces.next().filter(|name| !name.is_empty()) {
            host = name.to_string();
        }
        if let Some(number) = pieces.next().filter(|number| !number.is_empty()) {
            port = number.to_string();
        }
    }
    (host, port)
}

/// What the program wrote that is not a response, in the words Spin uses.
#[derive(Debug, PartialEq, Eq)]
pub enum CgiError {
    /// No output at all: most likely not a WAGI program.
    NoOutput,
    /// A header Spin cannot send (its text says which).
    InvalidHeader(String),
}

/// The response a CGI program's stdout describes: header lines (`\r` ignored)
/// up to the first blank line, then the body. `Status: <code> [text]` sets
/// the status (an unparsable one is a 502), `Location` a redirect (302 unless
/// a status is given), `Content-Type` the type; one of the three must be
/// there, else it is Spin's 500. Other valid headers are passed on. The body
/// is the output's own bytes, not a copy of them.
pub fn response(mut stdout: BytesMut) -> Result<Response<Bytes>, CgiError> {
    if stdout.is_empty() {
        return Err(CgiError::NoOutput);
    }
    // No blank line: no headers at all (so no response, as in Spin).
    let (head, body) = match head_end(&stdout) {
        Some((head, body_start)) => (head, stdout.split_off(body_start).freeze()),
        None => (Vec::new(), Bytes::new()),
    };
    let head = String::from_utf8(head).map_err(|e| CgiError::InvalidHeader(e.to_string()))?;
    // One value per name, the last written winning, as in Spin's map.
    let fields: BTreeMap<String, String> = head
        .trim()
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_lowercase(), value.trim().to_string()))
        .collect();
    let mut response = Response::new(body);
    let mut sufficient = false;
    if let Some(status) = fields.get("status") {
        sufficient = true;
        let code = status
            .split_once(' ')
            .map_or(status.as_str(), |(code, _)| code);
        *response.status_mut() = code.parse().unwrap_or(StatusCode::BAD_GATEWAY);
    }
    for (name, value) in &fields {
        let invalid = |e: &dyn std::fmt::Display| CgiError::InvalidHeader(format!("{name}: {e}"));
        match name.as_str() {
            "status" => {}
            "location" => {
                sufficient = true;
                if !fields.contains_key("status") {
                    *response.status_mut() = StatusCode::FOUND;
                }
                let value = HeaderValue::from_str(value).map_err(|e| invalid(&e))?;
                response.headers_mut().insert(http::header::LOCATION, value);
            }
            _ => {
                sufficient |= name == "content-type";
                // A name HTTP cannot carry is skipped, as Spin skips it.
                let Ok(header) = HeaderName::from_lowercase(name.as_bytes()) else {
                    continue;
                };
                let value = HeaderValue::from_str(value).map_err(|e| invalid(&e))?;
                response.headers_mut().insert(header, value);
            }
        }
    }
    if !sufficient {
        let mut error = Response::new(Bytes::from_static(
            b"Exactly one of 'location' or 'content-type' must be specified",
        ));
        *error.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        return Ok(error);
    }
    Ok(response)
}

/// The header block (without its `\r`s) and where the body starts, after
/// the first blank line; `None` without one.
fn head_end(stdout: &[u8]) -> Option<(Vec<u8>, usize)> {
    let mut head = Vec::new();
    let mut last = 0u8;
    for (at, &byte) in stdout.iter().enumerate() {
        if byte == b'\r' {
            continue;
        }
        if byte == b'\n' && last == b'\n' {
            return Some((head, at + 1));
        }
        last = byte;
        head.push(byte);
    }
    None
}

#[cfg(test)]
#[path = "cgi_tests.rs"]
mod tests;
