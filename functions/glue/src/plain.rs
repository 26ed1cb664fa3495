//! The endpoint's logic called as a plain Rust function, without HTTP: the floor
//! under every host in `spinbench compare`'s instance cold start (and its
//! hashing per core). `<name>-native --plain-calls N --method M --target T
//! [--content-type CT] [--body-file F] [--status S]` makes N timed calls after
//! a warm-up and prints each one's microseconds on its own line, so the runner
//! needs no function linked into it to time one.

use crate::{Endpoint, Handler, Head, Reply};
use std::time::Instant;

/// Untimed calls before the timed ones (page faults, caches, branch predictors).
const WARMUP: usize = 20;

/// One request, as the plain call gets it.
#[derive(Debug, Clone, Default)]
pub struct PlainRequest {
    pub method: String,
    /// Path and query.
    pub target: String,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

/// Drives an endpoint as the hosts do, minus HTTP. A `Delayed` handler's wait is
/// the host's timer, not the logic's, so it is not waited here.
pub fn call(endpoint: &Endpoint, request: &PlainRequest) -> Reply {
    let (path, query) = request
        .target
        .split_once('?')
        .unwrap_or((&request.target, ""));
    let head = Head {
        method: request.method.clone(),
        path: path.to_string(),
        query: query.to_string(),
        content_type: request.content_type.clone(),
        content_length: Some(request.body.len() as u64),
    };
    let answer = endpoint
        .admit(&head)
        .and_then(|()| match &endpoint.handler {
            Handler::Head(handle) => handle(&head),
            Handler::Buffered { handle, .. } => handle(&head, &request.body),
            Handler::Streamed { start, .. } => start(&head).map(|mut sink| {
                request
                    .body
                    .chunks(64 * 1024)
                    .for_each(|chunk| sink.write(chunk));
                sink.finish()
            }),
            Handler::Delayed(handle) => handle(&head).map(|(_, reply)| reply),
        });
    answer.unwrap_or_else(|e| e.to_reply())
}

/// `calls` timed calls after the warm-up, in µs; fails on another status than `status`.
pub fn time_calls(
    endpoint: &Endpoint,
    request: &PlainRequest,
    status: u16,
    calls: usize,
) -> Result<Vec<f64>, String> {
    let mut out = Vec::with_capacity(calls);
    for i in 0..WARMUP + calls {
        let started = Instant::now();
        let reply = call(endpoint, request);
        let took = started.elapsed();
        std::hint::black_box(&reply);
        if reply.status != status {
            return Err(format!(
                "{} {} answered {}, not {status}",
                request.method, request.target, reply.status
            ));
        }
        if i >= WARMUP {
            out.push(took.as_secs_f64() * 1e6);
        }
    }
    Ok(out)
}

/// The `--plain-calls` command line (after `--plain-calls`): prints the samples.
pub fn main(endpoint: &Endpoint, mut args: impl Iterator<Item = String>) -> Result<(), String> {
    let usage = "usage: <name>-native --plain-calls N --method M --target T [--content-type CT] [--body-file F] [--status S]";
    let calls: usize = args.next().and_then(|n| n.parse().ok()).ok_or(usage)?;
    let mut request = PlainRequest {
        method: "GET".into(),
        target: endpoint.route.into(),
        ..PlainRequest::default()
    };
    let mut status = 200;
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(usage)?;
        match flag.as_str() {
            "--method" => request.method = value,
            "--target" => request.target = value,
            "--content-type" => request.content_type = Some(value),
            "--body-file" => {
                request.body = std::fs::read(&value).map_err(|e| format!("{value}: {e}"))?;
            }
            "--status" => status = value.parse().map_err(|_| usage)?,
            other => return Err(format!("unknown argument {other:?}\n{usage}")),
        }
    }
    let samples = time_calls(endpoint, &request, status, calls)?;
    let lines: Vec<String> = samples.iter().map(|s| format!("{s:.4}")).collect();
    println!("{}", lines.join("\n"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ApiError;

    #[allow(clippy::unnecessary_wraps, reason = "the signature of `Handler::Head`")]
    fn hello(_: &Head) -> Result<Reply, ApiError> {
        Ok(Reply::text(200, "hi"))
    }

    static HELLO: Endpoint = Endpoint {
        route: "/hi",
        methods: &["GET"],
        handler: Handler::Head(hello),
        cpu_bound: false,
    };

    #[test]
    fn calls_the_logic_and_times_it() {
        let get = PlainRequest {
            method: "GET".into(),
            target: "/hi?x=1".into(),
            ..PlainRequest::default()
        };
        assert_eq!(call(&HELLO, &get).body, b"hi");
        let delete = PlainRequest {
            method: "DELETE".into(),
            ..get.clone()
        };
        assert_eq!(call(&HELLO, &delete).status, 405);
        assert_eq!(time_calls(&HELLO, &get, 200, 3).unwrap().len(), 3);
        let error = time_calls(&HELLO, &delete, 200, 3).unwrap_err();
        assert!(error.contains("405"), "{error}");
    }
}
