//! A minimal blocking HTTP/1.1 client for readiness probes, canned requests and
//! requests held open to keep instances live. Load itself goes through oha.

use anyhow::{Context, Result, bail};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// One request, as the same bytes go to every host.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Path and query, e.g. `/io?ms=10`.
    pub target: String,
    /// Names lower-case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl From<&crate::benchfile::Request> for Request {
    fn from(r: &crate::benchfile::Request) -> Request {
        Request {
            method: r.method.clone(),
            target: r.target.clone(),
            headers: r.headers.clone(),
            body: r.body.bytes(),
        }
    }
}

impl Request {
    /// The `content-type` header, if the request has one.
    pub fn content_type(&self) -> Option<&str> {
        self.headers
            .iter()
            .find(|(name, _)| name == "content-type")
            .map(|(_, value)| value.as_str())
    }

    /// The request's bytes, with `Connection: close` so the answer ends at EOF.
    pub fn to_bytes(&self, addr: SocketAddr) -> Vec<u8> {
        let mut head = format!(
            "{} {} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n",
            self.method, self.target
        );
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !self.body.is_empty() || self.method == "POST" {
            head.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&self.body);
        bytes
    }
}

/// Opens a connection and sends `request` without waiting for the answer.
pub fn send(addr: SocketAddr, request: &Request, timeout: Duration) -> Result<TcpStream> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout)
        .with_context(|| format!("connecting to {addr}"))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.set_nodelay(true)?;
    stream.write_all(&request.to_bytes(addr))?;
    Ok(stream)
}

/// Reads an answer to its end; returns the status code and the body's length.
pub fn finish(mut stream: TcpStream) -> Result<(u16, usize)> {
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .context("reading the answer")?;
    let status = parse_status(&answer)?;
    let body_len = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(0, |i| answer.len() - i - 4);
    Ok((status, body_len))
}

/// Sends `request` and waits for the whole answer.
pub fn call(addr: SocketAddr, request: &Request, timeout: Duration) -> Result<(u16, usize)> {
    finish(send(addr, request, timeout)?)
}

fn parse_status(answer: &[u8]) -> Result<u16> {
    let line = answer.split(|b| *b == b'\n').next().unwrap_or_default();
    let text = String::from_utf8_lossy(line);
    match text.split_whitespace().nth(1).and_then(|s| s.parse().ok()) {
        Some(status) if text.starts_with("HTTP/1.") => Ok(status),
        _ => bail!("not an HTTP answer: {:?}", text.trim()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_bytes_and_status() {
        let addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let req = Request {
            method: "POST".into(),
            target: "/echo".into(),
            headers: vec![("content-type".into(), "application/json".into())],
            body: b"{}".to_vec(),
        };
        let text = String::from_utf8(req.to_bytes(addr)).unwrap();
        assert!(text.starts_with("POST /echo HTTP/1.1\r\nHost: 127.0.0.1:9\r\n"));
        assert!(text.ends_with("Content-Length: 2\r\n\r\n{}"));
        assert_eq!(parse_status(b"HTTP/1.1 200 OK\r\n\r\n").unwrap(), 200);
        assert!(parse_status(b"garbage").is_err());
    }
}
