//! Reaches out as the request asks and answers `200` with what came of it, so
//! that tests/tests/outbound.rs can assert what the host allowed:
//!
//! - `/http?<url>`: a GET of `<url>` (`spin_sdk::http::send`, wasi:http):
//!   `status=<code> location=<location> body=<body>`, or `error=<error>`;
//! - `/tcp?<ip:port>`: connects, writes `ping`, reads 4 bytes back:
//!   `echoed=<bytes>`, or `error=<io error kind>`;
//! - `/redis?<address>`: `set` then `get` of one key (`fermyon:spin/redis`):
//!   `value=<value>`, or `error=<error>`;
//! - `/mqtt?<address>`: publishes one message at QoS 1 (`fermyon:spin/mqtt`):
//!   `published`, or `error=<error>`;
//! - `/postgres?<address>`, `/postgres4?<address>`, `/mysql?<address>`: opens a
//!   connection (`fermyon:spin/postgres@2.0.0`, `spin:postgres/postgres@4.0.0`,
//!   `fermyon:spin/mysql@2.0.0`): `opened`, or `error=<error>`;
//! - `/llm?<model>`: infers with `<model>` (`fermyon:spin/llm@2.0.0`):
//!   `inferred`, or `error=<error>`;
//! - `/self?<text>`: reaches out to nothing, answers `reached the app: <text>`
//!   (what a request to `self` through `/http` finds);
//! - `/proxy?<url>`: a GET of `<url>`, answered with its status and body, or
//!   `502` and the error (a probe that fails when the upstream is not there).

// `#[http_component]` expands to the component's exported ABI (`export_name`, unsafe
// blocks), which wit-bindgen generates from the WIT and the canonical ABI.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    use spin_sdk::http::{Method, Request, Response};
    use spin_sdk::http_component;
    use std::io::{Read, Write};

    #[http_component]
    async fn handle(req: Request) -> Response {
        let target = req.query().to_string();
        let report = match req.path() {
            "/http" => http(&target).await,
            "/tcp" => tcp(&target),
            "/redis" => redis(&target),
            "/mqtt" => mqtt(&target),
            "/postgres" => opened(spin_sdk::pg::Connection::open(&target).map(drop)),
            "/postgres4" => opened(spin_sdk::pg4::Connection::open(&target).map(drop)),
            "/mysql" => opened(spin_sdk::mysql::Connection::open(&target).map(drop)),
            "/llm" => {
                match spin_sdk::llm::infer(spin_sdk::llm::InferencingModel::Other(&target), "hi") {
                    Ok(_) => "inferred".to_string(),
                    Err(error) => format!("error={error:?}"),
                }
            }
            "/self" => format!("reached the app: {target}"),
            "/proxy" => return proxy(&target).await,
            _ => return Response::new(404, "no such test"),
        };
        Response::new(200, report)
    }

    async fn http(url: &str) -> String {
        match spin_sdk::http::send::<_, Response>(Request::new(Method::Get, url)).await {
            Ok(response) => format!(
                "status={} location={} body={}",
                response.status(),
                response
                    .header("location")
                    .and_then(|value| value.as_str())
                    .unwrap_or(""),
                String::from_utf8_lossy(response.body())
            ),
            Err(error) => format!("error={error:?}"),
        }
    }

    async fn proxy(url: &str) -> Response {
        match spin_sdk::http::send::<_, Response>(Request::new(Method::Get, url)).await {
            Ok(response) => Response::new(*response.status(), response.body().to_vec()),
            Err(error) => Response::new(502, format!("error={error:?}")),
        }
    }

    fn tcp(address: &str) -> String {
        let echoed = std::net::TcpStream::connect(address).and_then(|mut stream| {
            stream.write_all(b"ping")?;
            let mut buffer = [0u8; 4];
            stream.read_exact(&mut buffer)?;
            Ok(buffer)
        });
        match echoed {
            Ok(bytes) => format!("echoed={}", String::from_utf8_lossy(&bytes)),
            Err(error) => format!("error={:?}", error.kind()),
        }
    }

    fn redis(address: &str) -> String {
        let result = spin_sdk::redis::Connection::open(address).and_then(|connection| {
            connection.set("outbound-test", b"stored".as_ref())?;
            connection.get("outbound-test")
        });
        match result {
            Ok(value) => format!(
                "value={}",
                String::from_utf8_lossy(&value.unwrap_or_default())
            ),
            Err(error) => format!("error={error:?}"),
        }
    }

    fn mqtt(address: &str) -> String {
        use spin_sdk::mqtt::{Connection, Qos};
        let result = Connection::open(address, "user", "password", 30).and_then(|connection| {
            connection.publish("outbound-test", b"hello".as_ref(), Qos::AtLeastOnce)
        });
        match result {
            Ok(()) => "published".to_string(),
            Err(error) => format!("error={error:?}"),
        }
    }

    fn opened<E: std::fmt::Debug>(result: Result<(), E>) -> String {
        match result {
            Ok(()) => "opened".to_string(),
            Err(error) => format!("error={error:?}"),
        }
    }
}
