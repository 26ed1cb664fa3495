//! Outbound networking as Spin allows it: each case serves tests/apps/outbound
//! under a manifest with the `allowed_outbound_hosts` it needs, points the
//! component at servers this test runs on 127.0.0.1, and checks both what the
//! guest got and what reached the servers. Every escape the list must stop is
//! tried: an unlisted host, an unlisted port, an IP address for a listed name,
//! `localhost` for a listed `127.0.0.1`, and a redirect to an unlisted server.
//! Redis and MQTT run against Debian's `redis-server` and `mosquitto` when
//! installed (skipped with a message otherwise).

use e2e::{Server, get, serve_until_exit, workspace_root};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const WASM: &str = "target/wasm32-wasip2/release/outbound_app.wasm";

/// A loopback server run by a thread of this test, counting connections.
struct Local {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
}

impl Local {
    fn port(&self) -> u16 {
        self.addr.port()
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Answers every connection with `serve(stream)`.
    fn start(serve: fn(TcpStream, &str), response: String) -> Local {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                counted.fetch_add(1, Ordering::SeqCst);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                serve(stream, &response);
            }
        });
        Local { addr, connections }
    }

    /// An HTTP/1.1 server answering every request with `status`, `headers` and `body`.
    fn http(status: &str, headers: &str, body: &str) -> Local {
        let response = format!(
            "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n{headers}\r\n{body}",
            body.len()
        );
        Local::start(
            |stream, response| {
                let mut reader = BufReader::new(&stream);
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let _ = (&stream).write_all(response.as_bytes());
            },
            response,
        )
    }

    fn tcp_echo() -> Local {
        Local::start(
            |mut stream, _| {
                let mut buffer = [0u8; 4];
                if stream.read_exact(&mut buffer).is_ok() {
                    let _ = stream.write_all(&buffer);
                }
            },
            String::new(),
        )
    }
}

/// The test app under a manifest granting `hosts` (TOML strings), with
/// `[variables]` given as TOML lines.
fn manifest(hosts: &[String], variables: &str) -> (tempfile::TempDir, PathBuf) {
    let wasm = workspace_root().join(WASM);
    assert!(wasm.exists(), "{WASM} is not built: run `make build` first");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spin.toml");
    let hosts: Vec<String> = hosts.iter().map(|h| format!("{h:?}")).collect();
    std::fs::write(
        &path,
        format!(
            "spin_manifest_version = 2\n[application]\nname = \"outbound\"\n[variables]\n{variables}\n\
             [[trigger.http]]\nroute = \"/...\"\ncomponent = \"outbound\"\n\
             [component.outbound]\nsource = {:?}\nallowed_outbound_hosts = [{}]\n",
            wasm.display().to_string(),
            hosts.join(", ")
        ),
    )
    .unwrap();
    (dir, path)
}

fn serve(hosts: &[String]) -> (tempfile::TempDir, Server) {
    let (dir, path) = manifest(hosts, "");
    (dir, Server::runner_with(&path, &[]))
}

fn ask(server: &Server, path: &str) -> String {
    let answer = get(&server.url(path));
    assert_eq!(answer.status, 200, "{path}: {}", answer.text());
    answer.text()
}

/// How spin-sdk 5 prints `HTTP-request-denied`.
const DENIED: &str = "error=Http(ErrorCode::HttpRequestDenied)";

#[test]
fn outbound_http_reaches_exactly_the_listed_hosts() {
    let listed = Local::http("200 OK", "", "from the listed server");
    let unlisted = Local::http("200 OK", "", "must not be reached");
    let (p, q) = (listed.port(), unlisted.port());
    let (_dir, server) = serve(&[
        format!("http://localhost:{p}"),
        format!("http://127.0.0.1:{q}"),
    ]);
    let answer = ask(&server, &format!("/http?http://localhost:{p}/x"));
    assert_eq!(answer, "status=200 location= body=from the listed server");
    assert_eq!(listed.connections(), 1);
    // An IP address for the listed name, the same port under another scheme,
    // an unlisted port of a listed address, `localhost` for a listed address.
    for escape in [
        format!("http://127.0.0.1:{p}/x"),
        format!("http://[::1]:{p}/x"),
        format!("https://localhost:{p}/x"),
        format!("http://127.0.0.1:{p}/x"),
        format!("http://localhost:{q}/x"),
        format!("http://example.com:{p}/x"),
    ] {
        assert_eq!(ask(&server, &format!("/http?{escape}")), DENIED, "{escape}");
    }
    assert_eq!(
        listed.connections(),
        1,
        "a denied request reached the listed server"
    );
    assert_eq!(unlisted.connections(), 0);
    // The listed address itself is reachable.
    assert!(ask(&server, &format!("/http?http://127.0.0.1:{q}/")).starts_with("status=200"));
}

#[test]
fn a_redirect_to_an_unlisted_host_is_not_followed() {
    let target = Local::http("200 OK", "", "secret");
    let location = format!("http://127.0.0.1:{}/secret", target.port());
    let redirector = Local::http("302 Found", &format!("location: {location}\r\n"), "");
    let (_dir, server) = serve(&[format!("http://127.0.0.1:{}", redirector.port())]);
    let answer = ask(
        &server,
        &format!("/http?http://127.0.0.1:{}/", redirector.port()),
    );
    assert_eq!(answer, format!("status=302 location={location} body="));
    // Following it is a new request, checked against the list like any other.
    assert_eq!(ask(&server, &format!("/http?{location}")), DENIED);
    assert_eq!(target.connections(), 0, "the redirect target was reached");
}

#[test]
fn without_a_grant_nothing_leaves() {
    let http = Local::http("200 OK", "", "no");
    let echo = Local::tcp_echo();
    let (_dir, server) = serve(&[]);
    let answer = ask(&server, &format!("/http?http://127.0.0.1:{}/", http.port()));
    assert_eq!(answer, DENIED);
    let answer = ask(&server, &format!("/tcp?127.0.0.1:{}", echo.port()));
    assert_eq!(answer, "error=PermissionDenied");
    assert_eq!(http.connections() + echo.connections(), 0);
}

#[test]
fn tcp_connects_exactly_where_the_list_allows() {
    let echo = Local::tcp_echo();
    let other = Local::tcp_echo();
    let p = echo.port();
    // A CIDR range from variables, as Spin's conformance test writes it.
    let (_dir, path) = manifest(
        &[format!("*://{{{{ prefix }}}}/24:{p}")],
        "prefix = { default = \"127.0.0.0\" }",
    );
    let server = Server::runner_with(&path, &[]);
    assert_eq!(ask(&server, &format!("/tcp?127.0.0.1:{p}")), "echoed=ping");
    assert_eq!(
        ask(&server, &format!("/tcp?127.0.0.9:{p}")),
        "error=ConnectionRefused"
    );
    assert_eq!(
        ask(&server, &format!("/tcp?127.0.0.1:{}", other.port())),
        "error=PermissionDenied"
    );
    assert_eq!(
        ask(&server, &format!("/tcp?127.0.1.1:{p}")),
        "error=PermissionDenied"
    );
    assert_eq!(other.connections(), 0);
    // A name in the list allows no address: `localhost` is not 127.0.0.1.
    let (_dir, by_name) = serve(&[format!("tcp://localhost:{p}")]);
    assert_eq!(
        ask(&by_name, &format!("/tcp?127.0.0.1:{p}")),
        "error=PermissionDenied"
    );
    assert_eq!(echo.connections(), 1);
}

#[test]
fn an_invalid_entry_stops_the_start_naming_it() {
    for (entry, says) in [
        ("example.com", "no scheme"),
        ("http://example.com:80:90", "host \"example.com:80\""),
        ("ftp://example.com", "no well-known port"),
        ("http://*.127.0.0.1", "host"),
    ] {
        let (_dir, path) = manifest(&[entry.to_string()], "");
        let (status, output) = serve_until_exit(&path, &[]).expect("the runner exits");
        assert!(!status.success(), "{entry}: {output}");
        let line = output
            .lines()
            .find(|line| line.contains(&format!("{entry:?}")))
            .unwrap_or_else(|| panic!("{entry}: no line names it: {output}"));
        assert!(line.contains(says), "{entry}: {line}");
    }
}

/// A service from Debian's packages on a free loopback port, stopped when dropped.
#[test]
fn redis_is_reached_only_when_allowed() {
    let Some(redis) = e2e::brokers::redis() else {
        return;
    };
    let port = redis.port;
    let (_dir, server) = serve(&[format!("redis://localhost:{port}")]);
    let address = format!("redis://localhost:{port}");
    assert_eq!(ask(&server, &format!("/redis?{address}")), "value=stored");
    for escape in [
        format!("redis://127.0.0.1:{port}"),
        format!("redis://localhost:{}", port + 1),
    ] {
        assert_eq!(
            ask(&server, &format!("/redis?{escape}")),
            "error=Error::InvalidAddress"
        );
    }
    let (_dir, denied) = serve(&[]);
    assert_eq!(
        ask(&denied, &format!("/redis?{address}")),
        "error=Error::InvalidAddress"
    );
}

#[test]
fn mqtt_is_reached_only_when_allowed() {
    let Some(mosquitto) = e2e::brokers::mosquitto() else {
        return;
    };
    let port = mosquitto.port;
    let address = format!("mqtt://localhost:{port}?client_id=outbound-test");
    let (_dir, server) = serve(&[format!("mqtt://localhost:{port}")]);
    assert_eq!(ask(&server, &format!("/mqtt?{address}")), "published");
    let (_dir, denied) = serve(&[]);
    assert_eq!(
        ask(&denied, &format!("/mqtt?{address}")),
        format!("error=Error::ConnectionFailed(\"address {address} is not permitted\")")
    );
}

#[test]
fn databases_are_refused_as_spin_refuses_them() {
    let (_dir, server) = serve(&[
        "postgres://db.local:5433".to_string(),
        "postgres://127.0.0.1:1".to_string(),
        "mysql://127.0.0.1:1".to_string(),
    ]);
    for (path, message) in [
        (
            "/postgres?postgres://user:pw@other.local:5432/app",
            "address postgres://other.local:5432 is not permitted",
        ),
        // A URL without a port is parsed with PostgreSQL's 5432, and Spin names it.
        (
            "/postgres4?postgres://other.local/app",
            "address postgres://other.local:5432 is not permitted",
        ),
        (
            "/mysql?mysql://root@db.local/app",
            "address mysql://root@db.local/app is not permitted",
        ),
        // Allowed, so dialled: nothing listens there (tests/tests/postgres.rs
        // has a server).
        ("/postgres?postgres://user@127.0.0.1:1/app", "Connect"),
        // tests/tests/mysql.rs has a MySQL server.
        ("/mysql?mysql://root@127.0.0.1:1/app", "Connection refused"),
    ] {
        let answer = ask(&server, path);
        assert!(
            answer.starts_with("error=")
                && answer.contains("ConnectionFailed")
                && answer.contains(message),
            "{path}: {answer}"
        );
    }
}

#[test]
fn llm_calls_are_answered_as_spin_s_local_engine_without_model_files_answers() {
    let (dir, path) = manifest(&[], "");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}ai_models = [\"llama2-chat\"]\n")).unwrap();
    let server = Server::runner_with(&path, &[]);
    // Not listed: denied, in Spin's words.
    let answer = ask(&server, "/llm?codellama-instruct");
    assert!(
        answer.starts_with("error=")
            && answer.contains("InvalidInput")
            && answer.contains("The component does not have access to use 'codellama-instruct'"),
        "{answer}"
    );
    // Listed: looked up where Spin's local engine looks (the state directory,
    // `.spin` beside the manifest), and not there.
    let answer = ask(&server, "/llm?llama2-chat");
    let registry = dir.path().join(".spin/ai-models");
    assert!(
        answer.starts_with("error=")
            && answer.contains("RuntimeError")
            && answer.contains(&format!(
                "Could not read model registry directory '{}'",
                registry.display()
            )),
        "{answer}"
    );
}
