use super::*;

const REPO_FILE: &str = include_str!("../../../spinbench.toml");

fn parse(text: &str) -> Result<BenchFile, FileError> {
    BenchFile::parse(text, PathBuf::from("/app"))
}

/// The error's text, which must name `line`.
fn error_at(text: &str, line: usize) -> String {
    let error = parse(text).expect_err("the file is refused").to_string();
    assert!(
        error.contains(&format!("line {line}")),
        "expected line {line} in: {error}"
    );
    error
}

const MINIMAL: &str = "[[component]]\nid = \"app\"\nprobe = { path = \"/\" }\n";

#[test]
fn a_minimal_file_takes_every_default() {
    let file = parse(MINIMAL).unwrap();
    assert_eq!(file.manifest, Path::new("/app/spin.toml"));
    assert_eq!(file.p3_manifest, None);
    let c = &file.components[0];
    assert_eq!((c.id.as_str(), c.probe_status, c.line), ("app", 200, 1));
    assert_eq!(
        c.probe,
        Request {
            method: "GET".into(),
            target: "/".into(),
            headers: vec![],
            body: Body::Empty
        }
    );
    assert!(c.native.is_none() && c.load.is_empty() && c.memory_hold.is_none());
    assert!(c.hashing_per_core.is_none());
}

#[test]
fn every_key_is_read() {
    let text = r#"
manifest = "app/spin.toml"
p3_manifest = "app/spin-p3.toml"

[[component]]
id = "api"
probe = { method = "POST", path = "/api?x=1", headers = { Content-Type = "application/json" }, body = "{}", status = 201 }
memory = { hold = { path = "/api/slow" } }
hashing_per_core = { request = { method = "PUT", path = "/api", body_bytes = 64 }, quick_body_bytes = 8, openssl_speed = "sha256" }
[component.native]
command = "bin/api --port {port} --name 'my api'"
plain_calls = true
[[component.native.variant]]
host = "native-debug"
command = "/opt/api-debug --listen {addr}"
build = "make debug"
[[component.load]]
users = 5
[[component.load]]
users = "3*cores"
request = { method = "PUT", path = "/api", body_bytes = 1000 }
ceiling = 250.5
steady_state = { ramp_up = "2s" }
per_core = true
throughput = "bytes"
quick = { users = "cores", request = { path = "/api?q" }, ramp_up = "250ms" }
[[component.load]]
users = 1
quick = false
"#;
    let file = parse(text).unwrap();
    assert_eq!(file.manifest, Path::new("/app/app/spin.toml"));
    assert_eq!(
        file.p3_manifest.as_deref(),
        Some(Path::new("/app/app/spin-p3.toml"))
    );
    let c = &file.components[0];
    assert_eq!(c.line, 5);
    assert_eq!(c.probe_status, 201);
    assert_eq!(c.probe.method, "POST");
    assert_eq!(c.probe.target, "/api?x=1");
    assert_eq!(
        c.probe.headers,
        [("content-type".to_string(), "application/json".to_string())]
    );
    assert_eq!(c.probe.body, Body::Text("{}".into()));
    assert_eq!(c.memory_hold.as_ref().unwrap().target, "/api/slow");
    let h = c.hashing_per_core.as_ref().unwrap();
    assert_eq!(
        (
            h.request.body.len(),
            h.quick_body_bytes,
            h.openssl_speed.as_deref()
        ),
        (64, Some(8), Some("sha256"))
    );

    let native = c.native.as_ref().unwrap();
    assert_eq!(native.command.program, Path::new("/app/bin/api"));
    assert_eq!(
        native.command.args,
        ["--port", "{port}", "--name", "my api"]
    );
    assert!(native.plain_calls);
    let cmd = native.command.command("127.0.0.1:4000".parse().unwrap());
    let args: Vec<_> = cmd.get_args().collect();
    assert_eq!(args, ["--port", "4000", "--name", "my api"]);
    let v = &native.variants[0];
    assert_eq!(
        (v.host.as_str(), v.build.as_deref()),
        ("native-debug", Some("make debug"))
    );
    assert_eq!(v.command.program, Path::new("/opt/api-debug"));

    let [plain, steady, full_only] = &c.load[..] else {
        panic!("three scenarios")
    };
    assert_eq!(plain.full.users, Users::Fixed(5));
    assert_eq!(
        plain.full.request, c.probe,
        "a scenario's request defaults to the probe"
    );
    assert_eq!(plain.quick.as_ref().unwrap().users, Users::Fixed(5));
    assert_eq!(
        (plain.per_core, plain.throughput),
        (false, Throughput::Requests)
    );
    assert_eq!(steady.full.users, Users::PerCore(3));
    assert_eq!(steady.full.users.count(2), 6);
    assert_eq!(steady.full.request.body, Body::Generated(1000));
    assert_eq!(steady.full.ramp_up, Some(Duration::from_secs(2)));
    assert_eq!(steady.ceiling, Some(250.5));
    assert!(steady.per_core);
    assert_eq!(steady.throughput, Throughput::Bytes);
    let quick = steady.quick.as_ref().unwrap();
    assert_eq!(quick.users, Users::PerCore(1));
    assert_eq!(quick.request.target, "/api?q");
    assert_eq!(quick.ramp_up, Some(Duration::from_millis(250)));
    assert!(full_only.quick.is_none());
}

#[test]
fn generated_bodies_are_the_same_every_time() {
    let body = Body::Generated(4096);
    assert_eq!(body.bytes().len(), 4096);
    assert_eq!(body.bytes(), body.bytes());
    assert!(body.bytes().iter().any(|b| *b != body.bytes()[0]));
}

#[test]
fn the_repository_file_describes_the_function_set() {
    let file = parse(REPO_FILE).unwrap();
    assert!(file.components.len() >= 6);
    assert!(file.p3_manifest.is_some());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    for c in &file.components {
        assert!(!c.load.is_empty(), "{} has a load scenario", c.id);
        match &c.manifest {
            // The function set: each with its native counterpart.
            None => assert!(c.native.is_some(), "{} has a native counterpart", c.id),
            // The same hello in another language, from that app's manifest.
            Some(other) => {
                let relative = other.strip_prefix(&file.dir).unwrap();
                c.check_against(&Manifest::load(&root.join(relative)).unwrap())
                    .unwrap();
            }
        }
    }
    let manifest = Manifest::load(&root.join("spin.toml")).unwrap();
    file.check_against(&manifest).unwrap();
    assert!(file.components.iter().any(|c| c.memory_hold.is_some()));
    assert!(file.components.iter().any(|c| c.hashing_per_core.is_some()));
}

#[test]
fn syntax_and_shape_errors_name_their_line() {
    error_at("[[component]]\nid = \"a\"\nprobe = { path = \"/\" \n", 3);
    let e = error_at(&format!("{MINIMAL}colour = \"blue\"\n"), 4);
    assert!(e.contains("colour"), "{e}");
    let e = error_at(
        "[[component]]\nid = \"a\"\nprobe = { path = \"no-slash\" }\n",
        3,
    );
    assert!(e.contains("must start with '/'"), "{e}");
    let e = error_at(
        "[[component]]\nid = \"a\"\nprobe = { path = \"/\", method = \"get\" }\n",
        3,
    );
    assert!(e.contains("upper-case"), "{e}");
    let e = error_at(
        "[[component]]\nid = \"a\"\nprobe = { path = \"/\", status = 42 }\n",
        3,
    );
    assert!(e.contains("100 to 599"), "{e}");
    let e = error_at(&format!("{MINIMAL}[[component.load]]\nusers = 0\n"), 5);
    assert!(e.contains("positive"), "{e}");
    let e = error_at(
        &format!("{MINIMAL}[[component.load]]\nusers = \"lots\"\n"),
        5,
    );
    assert!(e.contains("cores"), "{e}");
    let e = error_at(
        &format!(
            "{MINIMAL}[[component.load]]\nusers = 1\nsteady_state = {{ ramp_up = \"soon\" }}\n"
        ),
        6,
    );
    assert!(e.contains("duration"), "{e}");
    let e = error_at(
        &format!("{MINIMAL}[[component.load]]\nusers = 1\nthroughput = \"MB\"\n"),
        6,
    );
    assert!(e.contains("requests"), "{e}");
    let e = error_at("[[component]]\nprobe = { path = \"/\" }\n", 1);
    assert!(e.contains("id"), "{e}");
}

#[test]
fn rules_across_keys_name_their_line() {
    let e = error_at(
        &format!("{MINIMAL}\n[[component]]\nid = \"app\"\nprobe = {{ path = \"/\" }}\n"),
        6,
    );
    assert!(e.contains("twice"), "{e}");
    let e = error_at(
        "[[component]]\nid = \"a\"\nprobe = { path = \"/\", body = \"x\", body_bytes = 3 }\n",
        3,
    );
    assert!(e.contains("not both"), "{e}");
    let e = error_at(
        &format!("{MINIMAL}native = {{ command = \"bin/app\" }}\n"),
        4,
    );
    assert!(e.contains("{addr}"), "{e}");
    let e = error_at(
        &format!(
            "{MINIMAL}[component.native]\ncommand = \"a {{addr}}\"\n[[component.native.variant]]\nhost = \"fast\"\ncommand = \"b {{addr}}\"\n"
        ),
        7,
    );
    assert!(e.contains("native-"), "{e}");
    let e = error_at(
        &format!("{MINIMAL}[[component.load]]\nusers = 1\nthroughput = \"bytes\"\n"),
        4,
    );
    assert!(e.contains("body"), "{e}");
    let e = error_at(
        &format!("{MINIMAL}[[component.load]]\nusers = 1\nquick = {{ ramp_up = \"1s\" }}\n"),
        4,
    );
    assert!(e.contains("steady_state"), "{e}");
    let e = error_at(
        &format!(
            "{MINIMAL}[[component.load]]\nusers = 1\nrequest = {{ path = \"/\", status = 201 }}\n"
        ),
        6,
    );
    assert!(e.contains("probe only"), "{e}");
    let e = error_at(
        &format!("{MINIMAL}[[component.load]]\nusers = 1\nceiling = -3\n"),
        4,
    );
    assert!(e.contains("ceiling"), "{e}");
    let e = error_at(
        &format!("{MINIMAL}hashing_per_core = {{ request = {{ path = \"/h\" }} }}\n"),
        4,
    );
    assert!(e.contains("body_bytes"), "{e}");
    assert!(
        parse("manifest = \"spin.toml\"\n")
            .unwrap_err()
            .to_string()
            .contains("no [[component]]")
    );
}

#[test]
fn components_missing_from_the_manifest_are_named() {
    let manifest = Manifest::parse(
        "spin_manifest_version = 2\n[application]\nname = \"x\"\n[[trigger.http]]\nroute = \"/\"\ncomponent = \"web\"\n[component.web]\nsource = \"web.wasm\"\n",
        PathBuf::from("/app"),
    )
    .unwrap();
    let file = parse(&format!(
        "{MINIMAL}\n[[component]]\nid = \"web\"\nprobe = {{ path = \"/\" }}\n"
    ))
    .unwrap();
    let e = file.check_against(&manifest).unwrap_err().to_string();
    assert!(
        e.starts_with("line 1:") && e.contains("\"app\"") && e.contains("web"),
        "{e}"
    );
}

#[test]
fn services_and_the_runtime_config_are_read() {
    let text = format!(
        r#"runtime_config = "rc/runtime-config.toml"

[[service]]
command = "bin/stub --listen 127.0.0.1:8081 --name 'stub one'"
ready = "127.0.0.1:8081"

[[service]]
command = "redis-server --port 6390"
ready = "[::1]:6390"
ready_timeout = "30s"

{MINIMAL}"#
    );
    let file = parse(&text).unwrap();
    assert_eq!(
        file.runtime_config.as_deref(),
        Some(Path::new("/app/rc/runtime-config.toml"))
    );
    let [stub, redis] = &file.services[..] else {
        panic!("two services: {:?}", file.services)
    };
    assert_eq!(stub.command.program, Path::new("/app/bin/stub"));
    assert_eq!(
        stub.command.args,
        ["--listen", "127.0.0.1:8081", "--name", "stub one"]
    );
    assert_eq!(stub.ready, "127.0.0.1:8081".parse().unwrap());
    assert_eq!(stub.ready_timeout, Duration::from_secs(10));
    assert_eq!(stub.line, 3);
    // A bare program name is looked up on PATH when started.
    assert_eq!(redis.command.program, Path::new("redis-server"));
    assert_eq!(redis.ready_timeout, Duration::from_secs(30));
    assert_eq!(redis.line, 7);
    // Without them: no services, no runtime config.
    let file = parse(MINIMAL).unwrap();
    assert!(file.services.is_empty() && file.runtime_config.is_none());
}

#[test]
fn a_service_must_be_ready_on_a_loopback_port() {
    for ready in ["10.0.0.1:80", "127.0.0.1", "localhost:80", "127.0.0.1:0"] {
        let text = format!("[[service]]\ncommand = \"stub\"\nready = \"{ready}\"\n{MINIMAL}");
        let error = error_at(&text, 3);
        assert!(error.contains("loopback"), "{ready}: {error}");
    }
    let text = format!("[[service]]\ncommand = \"stub\"\n{MINIMAL}");
    assert!(parse(&text).unwrap_err().to_string().contains("ready"));
    let text = format!("[[service]]\ncommand = \"\"\nready = \"127.0.0.1:1\"\n{MINIMAL}");
    assert!(error_at(&text, 2).contains("cannot split command"));
}
