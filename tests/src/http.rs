//! The tests' HTTP client: requests through `ureq`, answers compared between hosts as
//! [`Answer`]s, and raw exchanges over TCP for the edge cases a client library
//! would smooth over.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// What a test compares between hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }
}

/// One request with the request headers `headers`: the answer and its
/// response headers (names lower-case). A redirect is an answer too: it is
/// not followed.
pub fn exchange(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (Answer, Vec<(String, String)>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(Duration::from_mins(1)))
        .build()
        .into();
    let mut request = ureq::http::Request::builder().method(method).uri(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let mut response = agent
        .run(request.body(body.to_vec()).expect("valid request"))
        .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let headers: Vec<(String, String)> = response
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let answer = Answer {
        status: response.status().as_u16(),
        content_type: header(&headers, "content-type")
            .unwrap_or_default()
            .to_string(),
        body: response
            .body_mut()
            .read_to_vec()
            .unwrap_or_else(|e| panic!("{method} {url}: reading the body: {e}")),
    };
    (answer, headers)
}

/// The one value of response header `name` (lower-case), if sent; sent twice fails.
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    let mut values = headers.iter().filter(|(k, _)| k == name);
    let value = values.next().map(|(_, v)| v.as_str());
    assert!(values.next().is_none(), "{name} sent twice: {headers:?}");
    value
}

/// One request over a fresh connection; 4xx and 5xx are answers, not errors.
pub fn send(method: &str, url: &str, content_type: Option<&str>, body: &[u8]) -> Answer {
    send_with_headers(method, url, content_type, body).0
}

/// Like [`send`], also returning the response headers (names lower-case).
pub fn send_with_headers(
    method: &str,
    url: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> (Answer, Vec<(String, String)>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .allow_non_standard_methods(true)
        .timeout_global(Some(Duration::from_mins(1)))
        .build()
        .into();
    let mut request = ureq::http::Request::builder().method(method).uri(url);
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    let request = request.body(body.to_vec()).expect("valid request");
    let mut response = agent
        .run(request)
        .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let headers: Vec<(String, String)> = response
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let content_type = headers
        .iter()
        .find(|(k, _)| k == "content-type")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let body = response
        .body_mut()
        .with_config()
        .limit(64 * 1024 * 1024)
        .read_to_vec()
        .unwrap_or_else(|e| panic!("{method} {url}: reading body: {e}"));
    let answer = Answer {
        status: response.status().as_u16(),
        content_type,
        body,
    };
    (answer, headers)
}

/// Writes `request` as is, closes the writing half (so a body shorter than its
/// `Content-Length` ends early), and returns whatever came back (possibly nothing).
pub fn raw_then_close(addr: SocketAddr, request: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let _ = stream.write_all(request);
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    response
}

pub fn get(url: &str) -> Answer {
    send("GET", url, None, b"")
}

/// A GET that must be answered within `limit`; `Err` says why it was not.
pub fn get_within(url: &str, limit: Duration) -> Result<Answer, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(limit))
        .build()
        .into();
    let mut response = agent.get(url).call().map_err(|e| e.to_string())?;
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = response
        .body_mut()
        .read_to_vec()
        .map_err(|e| e.to_string())?;
    Ok(Answer {
        status: response.status().as_u16(),
        content_type,
        body,
    })
}

/// Writes `head` and then `body_len` bytes of zeros (ignoring write errors, as a
/// server may answer and close before reading it all), and reads the answer.
/// For requests a well-behaved client library will not send: lying lengths,
/// endless chunked bodies, raw bytes in the request line.
pub fn raw_exchange(addr: SocketAddr, head: &[u8], body_len: usize, chunked: bool) -> Answer {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_mins(1)))
        .unwrap();
    stream.write_all(head).expect("write head");
    let mut writer = stream.try_clone().expect("clone");
    let sender = std::thread::spawn(move || {
        let chunk = vec![0u8; 64 * 1024];
        let mut left = body_len;
        while left > 0 {
            let n = left.min(chunk.len());
            let ok = if chunked {
                write!(writer, "{n:x}\r\n")
                    .and_then(|()| writer.write_all(&chunk[..n]))
                    .and_then(|()| writer.write_all(b"\r\n"))
            } else {
                writer.write_all(&chunk[..n])
            };
            if ok.is_err() {
                return;
            }
            left -= n;
        }
        if chunked {
            let _ = writer.write_all(b"0\r\n\r\n");
        }
    });
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let _ = sender.join();
    parse_response(&response)
}

/// Parses a `Connection: close` HTTP/1.1 response, with or without chunked framing.
pub fn parse_response(raw: &[u8]) -> Answer {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let header = |name: &str| {
        head.split("\r\n")
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_string())
    };
    let payload = &raw[split + 4..];
    let body = if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        dechunk(payload)
    } else {
        payload.to_vec()
    };
    Answer {
        status,
        content_type: header("content-type").unwrap_or_default(),
        body,
    }
}

/// Reads one `Content-Length`-framed response from a kept-alive connection, leaving
/// the connection open; an error if it closes or its read timeout passes first.
pub fn read_response(stream: &mut TcpStream) -> std::io::Result<Answer> {
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        raw.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&raw).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body)?;
    raw.extend_from_slice(&body);
    Ok(parse_response(&raw))
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(line_end) = data.windows(2).position(|w| w == b"\r\n") {
        let size_field = String::from_utf8_lossy(&data[..line_end]);
        let size =
            usize::from_str_radix(size_field.split(';').next().unwrap().trim(), 16).unwrap_or(0);
        data = &data[line_end + 2..];
        if size == 0 || data.len() < size {
            break;
        }
        body.extend_from_slice(&data[..size]);
        data = &data[(size + 2).min(data.len())..];
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_chunked_responses() {
        let plain =
            parse_response(b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\n\r\n{}");
        assert_eq!((plain.status, plain.body.as_slice()), (404, &b"{}"[..]));
        let chunked = parse_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n5\r\nHello\r\n3\r\n!!!\r\n0\r\n\r\n",
        );
        assert_eq!(chunked.body, b"Hello!!!");
        assert_eq!(chunked.content_type, "text/plain");
    }
}
