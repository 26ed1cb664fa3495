//! What Spin 4.3 runs beside plain HTTP routes, served by `spinbench serve`
//! from tests/apps/parity (spin-sdk 5.2 and 7 components, built by `make
//! build` as their templates build them), each as Spin serves it
//! (spinframework/spin main at 94a8fc8a, the 4.1 code; 4.1 to 4.3 by their
//! release notes):
//!
//! - service chaining: `http://<component>.spin.internal/` reaches that
//!   component in process, across WASIp2 and WASIp3, only where the caller's
//!   `allowed_outbound_hosts` lists it, with the `spin-*` headers Spin sets;
//! - selective deployment: `--component-id` / `SPIN_COMPONENTS_TO_RETAIN`;
//! - the Redis trigger, against a real `redis-server`;
//! - component dependencies (from a path, another component, a URL with its
//!   digest), composed at load, inheriting only the grants they are given;
//! - Spin 4.1's HTTP middleware, chained in front of a WASIp3 route's
//!   component, inheriting only the grants it is given; refused at start in
//!   front of a WASIp2 one, with the reason.

use e2e::parity::middleware;
use e2e::parity::{app, line};
use e2e::{Server, artifact, get, serve_until_exit, workspace_root};
use std::time::{Duration, Instant};

/// `spinbench serve -f tests/apps/parity` with `extra` flags and `env`, its
/// state in a fresh directory.
fn serve(extra: &[&str], env: &[(&str, &str)]) -> (Server, tempfile::TempDir) {
    let state = tempfile::tempdir().unwrap();
    let cache = workspace_root().join("target/e2e-cache");
    let app = app();
    let mut args = vec![
        "serve",
        "-f",
        app.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
        "--state-dir",
        state.path().to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let server = Server::start_configured(
        "parity",
        &artifact("release/spinbench"),
        &args,
        |command, addr| {
            command.arg("--listen").arg(addr.to_string());
            command.envs(env.iter().copied());
        },
    );
    (server, state)
}

/// The HTTP components only: no Redis server needed.
const HTTP_ONLY: &[&str] = &["--component-id", "front,back,secret,strict"];

#[test]
fn a_chained_request_reaches_its_component_in_process_with_spins_headers() {
    let (server, _state) = serve(HTTP_ONLY, &[]);
    let answer = get(&server.url("/front/chain/echo/x?y=1"));
    assert_eq!(answer.status, 200, "{}", answer.text());
    let body = answer.text();
    assert!(body.starts_with("path=/echo/x\n"), "{body}");
    for (name, value) in [
        ("spin-full-url", "http://localhost/echo/x?y=1"),
        ("spin-path-info", "/echo/x"),
        ("spin-matched-route", "/..."),
        ("spin-raw-component-route", "/..."),
        ("spin-component-route", ""),
        ("spin-base-path", "/"),
        ("spin-client-addr", "0.0.0.0:0"),
        ("x-caller", "front"),
    ] {
        assert_eq!(line(&body, name), Some(value), "{name} in {body}");
    }
    // A WASIp3 component chains to a WASIp2 one.
    let answer = get(&server.url("/back/to-front"));
    assert_eq!(answer.text(), "front said 200 OK: hello from front");
    // The private component is reached by no route.
    assert_eq!(get(&server.url("/secret")).status, 404);
}

#[test]
fn chaining_is_allowed_only_to_the_components_the_caller_lists() {
    let (server, _state) = serve(HTTP_ONLY, &[]);
    // `secret` exists, but front lists only back; `nobody` is no component.
    for component in ["secret", "nobody", "front"] {
        let answer = get(&server.url(&format!("/front/to/{component}/x")));
        assert_eq!(answer.status, 200, "{}", answer.text());
        assert_eq!(
            answer.text(),
            "error=Http(ErrorCode::HttpRequestDenied)",
            "{component}"
        );
    }
    assert!(
        get(&server.url("/front/to/back/x"))
            .text()
            .starts_with("path=/x")
    );
}

#[test]
fn selective_deployment_keeps_the_named_components_and_refuses_a_broken_chain() {
    // Through Spin's flag and through SpinKube's variable alike (a list as
    // people write it, with a space after the comma: each entry is trimmed).
    let (server, _state) = serve(&[], &[("SPIN_COMPONENTS_TO_RETAIN", "front, back")]);
    assert_eq!(get(&server.url("/front/hello")).text(), "hello from front");
    assert!(
        get(&server.url("/front/chain/x"))
            .text()
            .starts_with("path=/x")
    );
    drop(server);
    let (server, _state) = serve(&["-c", "front", "-c", "back"], &[]);
    assert_eq!(get(&server.url("/back/to-front")).status, 200);
    drop(server);
    // back chains to front: back alone is refused, in Spin's words.
    let manifest = app().join("spin.toml");
    let (status, output) =
        serve_until_exit(&manifest, &["--component-id", "back"]).expect("refused at start");
    assert!(!status.success());
    assert!(
        output.contains(
            "Selected component 'back' cannot use service chaining to unselected component: allowed_outbound_hosts = [\"http://front.spin.internal\"]"
        ),
        "{output}"
    );
    let (_, output) =
        serve_until_exit(&manifest, &["--component-id", "nobody"]).expect("refused at start");
    assert!(
        output.contains("Specified component \"nobody\" not found in application"),
        "{output}"
    );
}

/// GETs `path` until it answers `want` (a Redis message is handled after
/// `PUBLISH` returns), at most 10 s.
fn eventually(server: &Server, path: &str, want: &str) {
    let start = Instant::now();
    loop {
        let answer = get(&server.url(path));
        if answer.status == 200 && answer.text() == want {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{path}: {} {} (want {want})\n{}",
            answer.status,
            answer.text(),
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn redis_messages_run_their_subscribers_beside_http_triggers() {
    let Some(redis) = e2e::brokers::redis() else {
        return;
    };
    let address = e2e::parity::redis_url(&redis);
    let (server, _state) = serve(
        &["--request-timeout", "2s"],
        &[("SPIN_VARIABLE_REDIS_ADDRESS", address.as_str())],
    );
    // Both subscribers (spin-sdk 5.2's `fermyon:spin/inbound-redis`, spin-sdk
    // 7's async `spin:redis/inbound-redis@3.0.0`) are subscribed at start.
    assert_eq!(e2e::parity::publish(&redis, "parity", b"hello"), 1);
    eventually(&server, "/front/kv/sub2", "1:hello");
    eventually(&server, "/front/kv/sub3", "hello");
    // A handler that traps, then one that never returns, stop nothing: the
    // next message still runs, on a fresh instance (its count is 1 again).
    e2e::parity::publish(&redis, "parity", b"trap");
    e2e::parity::publish(&redis, "parity", b"spin");
    e2e::parity::publish(&redis, "parity", b"after");
    eventually(&server, "/front/kv/sub2", "1:after");
    // Both the trap and the runaway (stopped at its 2 s deadline) are logged
    // (by the host's log queue: read until they show, at most 5 s).
    let failures = |log: &str| {
        log.matches("component \"sub2\" failed on a Redis message")
            .count()
    };
    let waited = Instant::now();
    let mut log = server.log();
    while failures(&log) < 2 && waited.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
        log = server.log();
    }
    assert_eq!(failures(&log), 2, "{log}");
    assert!(log.contains("asked to trap"), "{log}");
    // Channels no trigger names reach no component.
    assert_eq!(e2e::parity::publish(&redis, "elsewhere", b"x"), 0);
}

#[test]
fn an_unreachable_redis_server_stops_the_start_and_other_triggers_are_refused() {
    let manifest = app().join("spin.toml");
    let closed = Server::free_addr();
    let (status, output) = {
        let mut args = e2e::runner_args(&manifest, &["--listen", "127.0.0.1:0"]);
        args.push("--state-dir".into());
        args.push(String::new());
        let mut command = std::process::Command::new(artifact("release/spinbench"));
        command
            .args(&args)
            .env("SPIN_VARIABLE_REDIS_ADDRESS", format!("redis://{closed}"));
        e2e::run_command_to_exit(command, None, Duration::from_mins(1)).expect("refused at start")
    };
    assert!(!status.success());
    assert!(
        output.contains(&format!(
            "Redis trigger failed to connect to redis://{closed}"
        )),
        "{output}"
    );
    // A trigger type Spin does not build in is refused at start, with why.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(&manifest).unwrap().replace(
        "[[trigger.redis]]\nchannel = \"parity\"\ncomponent = \"sub2\"",
        "[[trigger.cron]]\ncron_expression = \"1/2 * * * * *\"\ncomponent = \"sub2\"",
    );
    let cron = dir.path().join("spin.toml");
    std::fs::write(
        &cron,
        text.replace(
            "../../../target",
            &format!("{}/target", workspace_root().display()),
        ),
    )
    .unwrap();
    let (status, output) = serve_until_exit(&cron, &[]).expect("refused at start");
    assert!(!status.success());
    assert!(
        output.contains("[[trigger.cron]] is not supported by spinbench serve")
            && output.contains("Spin plugins"),
        "{output}"
    );
}

#[test]
fn a_dependency_is_composed_in_and_inherits_only_what_it_is_given() {
    let (server, _state) = serve(HTTP_ONLY, &[]);
    // From a path, inheriting `environment`: it reads its parent's.
    let answer = get(&server.url("/front/greet/Ada"));
    assert_eq!(answer.text(), "Hello, Ada! (GREETING_STYLE=warm)");
    // From another component, inheriting nothing: its read of the
    // environment traps, and the request fails, whatever the parent has.
    let answer = get(&server.url("/strict/greet/Ada"));
    assert_eq!(answer.status, 500, "{}", answer.text());
    // (its answer would name the parent's `GREETING_STYLE` had it read it)
    assert!(
        !answer.text().contains("GREETING_STYLE"),
        "{}",
        answer.text()
    );
    // The rest of the component is untouched by the composition.
    assert_eq!(get(&server.url("/strict/hello")).text(), "hello from front");
}

/// `spinbench serve -f manifest` serving `front` and `back`.
fn serve_manifest(manifest: &std::path::Path) -> Server {
    let cache = workspace_root().join("target/e2e-cache");
    Server::start_configured(
        "parity-middleware",
        &artifact("release/spinbench"),
        &[
            "serve",
            "-f",
            manifest.to_str().unwrap(),
            "-c",
            "front,back",
            "--cache-dir",
            cache.to_str().unwrap(),
            "--state-dir",
            "",
        ],
        |command, addr| {
            command.arg("--listen").arg(addr.to_string());
        },
    )
}

#[test]
fn middleware_runs_in_front_of_its_route_and_may_answer_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve_manifest(&middleware::manifest(dir.path(), false));
    middleware::runs_in_front_of_its_route(&server.url(""));
}

#[test]
fn middleware_reaches_only_what_it_inherits() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve_manifest(&middleware::manifest(dir.path(), false));
    middleware::reaches_only_what_it_inherits(&server.url(""));
}

#[test]
fn middleware_in_front_of_a_wasip2_component_is_refused_at_start_with_the_reason() {
    // Spin 4.1 chains middleware through `wasi:http/handler@0.3.0`, which a
    // WASIp2 component (front, spin-sdk 5.2) does not export; so does Spin's
    // composition fail.
    let dir = tempfile::tempdir().unwrap();
    let manifest = middleware::manifest(dir.path(), true);
    let (status, output) = serve_until_exit(&manifest, &["-c", "front,back", "--state-dir", ""])
        .expect("refused at start");
    assert!(!status.success());
    assert!(
        output.contains("chaining the middleware of component \"front-for-")
            && output.contains("the route's component must export wasi:http/handler@0.3.0"),
        "{output}"
    );
}

/// A loopback server answering every GET with `body`, at most `limit` times.
fn file_server(body: Vec<u8>, limit: usize) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(limit) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 2 {
                line.clear();
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    base
}

#[test]
fn a_dependency_from_a_url_is_fetched_and_checked_by_its_digest() {
    let greeter =
        std::fs::read(workspace_root().join("target/wasm32-wasip2/release/parity_greeter.wasm"))
            .unwrap();
    let digest = e2e::sha256_digest(&greeter);
    let base = file_server(greeter, 4);
    let target = format!("{}/target", workspace_root().display());
    let original = std::fs::read_to_string(app().join("spin.toml")).unwrap();
    let local = "{ path = \"../../../target/wasm32-wasip2/release/parity_greeter.wasm\", inherit_configuration = [\"environment\"] }";
    assert!(original.contains(local));
    let write = |digest: &str| {
        let dir = tempfile::tempdir().unwrap();
        let text = original
            .replace(local, &format!("{{ url = \"{base}/greeter.wasm\", digest = \"{digest}\", inherit_configuration = [\"environment\"] }}"))
            .replace("../../../target", &target);
        std::fs::write(dir.path().join("spin.toml"), text).unwrap();
        dir
    };
    let dir = write(&digest);
    let cache = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("spin.toml");
    let server = Server::start(
        "parity-url",
        &artifact("release/spinbench"),
        &[
            "serve",
            "-f",
            manifest.to_str().unwrap(),
            "--cache-dir",
            cache.path().to_str().unwrap(),
            "--state-dir",
            "",
            "-c",
            "front,back",
        ],
    );
    assert_eq!(
        get(&server.url("/front/greet/Bo")).text(),
        "Hello, Bo! (GREETING_STYLE=warm)"
    );
    drop(server);
    // Another digest: refused at start, naming both.
    let wrong = format!("sha256:{}", "0".repeat(64));
    let dir = write(&wrong);
    let (status, output) = serve_until_exit(
        &dir.path().join("spin.toml"),
        &["-c", "front,back", "--state-dir", ""],
    )
    .expect("refused at start");
    assert!(!status.success());
    assert!(
        output.contains(&wrong) && output.contains(&digest),
        "{output}"
    );
}
