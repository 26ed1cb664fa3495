//! The manifest as Spin writes it, key by key: what parses, and what `serve`
//! hosts or refuses (in one line naming the key and pointing at `spin up`).

#![allow(
    clippy::used_underscore_binding,
    reason = "`_x` fields are Spin's keys the runner only checks; these tests read them back"
)]

use super::*;

const REPO_MANIFEST: &str = include_str!("../../../spin.toml");
const REPO_P3_MANIFEST: &str = include_str!("../../../spin-p3.toml");
const MISBEHAVING_MANIFEST: &str = include_str!("../../../tests/misbehaving/spin.toml");
const TEMPLATE_APP: &str = include_str!("../../../tests/template-app/spin.toml");
const TEMPLATE_KV: &str = include_str!("../../../tests/template-app/kv/spin.toml");

/// Spin's `templates/http-rust/content/spin.toml` (the spin-sdk 5 era, wasm32-wasip2),
/// placeholders filled in as `spin new -t http-rust hello-world` fills them.
const SPIN_NEW_HTTP_RUST: &str = r#"#:schema https://schemas.spinframework.dev/spin/manifest-v2/latest.json

spin_manifest_version = 2

[application]
name = "hello-world"
version = "0.1.0"
authors = ["Jane Doe <jane@example.com>"]
description = ""

[[trigger.http]]
route = "/..."
component = "hello-world"

[component.hello-world]
source = "target/wasm32-wasip2/release/hello_world.wasm"
allowed_outbound_hosts = []
[component.hello-world.build]
command = "cargo build --target wasm32-wasip2 --release"
watch = ["src/**/*.rs", "Cargo.toml"]
"#;

/// A minimal app the tests below add one key to.
const MINIMAL: &str = r#"spin_manifest_version = 2
[application]
name = "app"
[[trigger.http]]
route = "/..."
component = "app"
[component.app]
source = "app.wasm"
"#;

fn parse(text: &str) -> Result<Manifest> {
    Manifest::parse(text, PathBuf::from("/app"))
}

/// `MINIMAL` with `line` added to the end of the section headed `header`.
fn with(header: &str, line: &str) -> String {
    let at = MINIMAL.find(header).expect("header in MINIMAL") + header.len();
    let end = MINIMAL[at..]
        .find("\n[")
        .map_or(MINIMAL.len(), |i| at + i + 1);
    format!("{}{line}\n{}", &MINIMAL[..end], &MINIMAL[end..])
}

/// The one-line refusal `serve` gives for `text`.
fn refusal(text: &str) -> String {
    let manifest = parse(text).unwrap_or_else(|e| panic!("{e:#}\n{text}"));
    let error = hosting::check(&manifest).expect_err("refused").to_string();
    assert!(!error.contains('\n'), "not one line: {error}");
    assert!(error.ends_with("`spin up` runs this app"), "{error}");
    error
}

fn hosted(text: &str) -> Manifest {
    let manifest = parse(text).unwrap_or_else(|e| panic!("{e:#}\n{text}"));
    hosting::check(&manifest).unwrap_or_else(|e| panic!("{e}\n{text}"));
    manifest
}

#[test]
fn the_repo_manifests_are_hosted() {
    let manifest = hosted(REPO_MANIFEST);
    assert_eq!(manifest.application.name(), "spinbench");
    assert_eq!(manifest.http_routes().len(), 7);
    assert_eq!(manifest.component.len(), 7);
    let hello = &manifest.component["hello"];
    assert!(hello.allowed_outbound_hosts.is_empty());
    assert!(hello.build.as_ref().unwrap().commands()[0].contains("-p hello"));
    hosted(REPO_P3_MANIFEST);
    hosted(MISBEHAVING_MANIFEST);
}

#[test]
fn every_route_has_a_component() {
    let manifest = parse(REPO_MANIFEST).unwrap();
    for route in manifest.http_routes() {
        assert!(
            manifest.component.contains_key(route.component().unwrap()),
            "{route:?}"
        );
    }
}

#[test]
fn relative_sources_resolve_against_the_manifest_dir() {
    let manifest = parse(REPO_MANIFEST).unwrap();
    let path = manifest.source_path(&manifest.component["hello"]);
    assert_eq!(
        path.as_deref(),
        Some(Path::new("/app/target/wasm32-wasip2/release/hello.wasm"))
    );
}

#[test]
fn what_spin_new_http_rust_writes_is_hosted() {
    let manifest = hosted(SPIN_NEW_HTTP_RUST);
    assert_eq!(
        manifest.application.authors,
        ["Jane Doe <jane@example.com>"]
    );
    assert_eq!(manifest.http_routes()[0].route, "/...");
}

#[test]
fn the_template_app_uses_workdir_a_command_list_and_a_variable() {
    let manifest = hosted(TEMPLATE_APP);
    assert!(!manifest.application.description.is_empty());
    assert_eq!(
        manifest.variables["greeting"].default.as_deref(),
        Some("Hello from a Spin variable")
    );
    let component = &manifest.component["template-hello"];
    assert_eq!(component.variables["greeting"], "{{ greeting }}");
    let build = component.build.as_ref().unwrap();
    assert_eq!(build.workdir.as_deref(), Some("hello"));
    assert_eq!(build.commands().len(), 2);
    // Its key-value sibling passes the manifest check: its import is what is refused.
    hosted(TEMPLATE_KV);
}

#[test]
fn descriptive_and_tool_keys_are_accepted() {
    for (header, line) in [
        ("[application]", "authors = [\"a\", \"b\"]"),
        ("[application]", "description = \"an app\""),
        ("[application]", "version = \"1.2.3\""),
        (
            "[application]",
            "targets = [\"spin-up:3.3\", { registry = \"r.io\", id = \"env:1\" }]",
        ),
        ("[application]", "tool.lint = { level = \"high\" }"),
        ("[application]", "trigger.http = { base = \"/\" }"),
        ("[component.app]", "description = \"a component\""),
        (
            "[component.app]",
            "tool.clean = { command = \"cargo clean\" }",
        ),
        (
            "[component.app]",
            "profile.debug = { source = \"debug.wasm\" }",
        ),
        (
            "[component.app]",
            "dependencies_inherit_configuration = true",
        ),
        ("[component.app]", "allowed_outbound_hosts = []"),
        (
            "[component.app]",
            "allowed_outbound_hosts = [\"https://example.com\", \"redis://*:*\"]",
        ),
        ("[component.app]", "allowed_http_hosts = [\"example.com\"]"),
        ("[component.app]", "variables = { x = \"1\" }"),
        ("[component.app]", "environment = { RUST_LOG = \"info\" }"),
        (
            "[component.app]",
            "build = { command = [\"a\", \"b\"], workdir = \"w\", watch = [\"*.rs\"] }",
        ),
        ("[[trigger.http]]", "id = \"main\""),
        ("[[trigger.http]]", "executor = { type = \"http\" }"),
        ("[[trigger.http]]", "executor = { type = \"spin\" }"),
    ] {
        hosted(&with(header, line));
    }
}

#[test]
fn stores_databases_and_files_are_hosted() {
    for line in [
        "key_value_stores = [\"default\", \"cache\"]",
        "sqlite_databases = [\"default\"]",
        // Resolved when the component's context is built (`capabilities::files`).
        "files = [\"assets/*\", { source = \"static\", destination = \"/\" }]",
        "exclude_files = [\"secret/*\"]",
    ] {
        hosted(&with("[component.app]", line));
    }
}

#[test]
fn application_variables_are_accepted_with_a_default_or_required() {
    let text = format!(
        "{MINIMAL}[variables]\ngreeting = {{ default = \"hi\", description = \"d\", secret = true }}\n\
         token = {{ required = true }}\n"
    );
    let manifest = hosted(&text);
    assert!(manifest.variables["token"].required);
    assert!(manifest.variables["greeting"].secret);
    let both = format!("{MINIMAL}[variables]\nx = {{ default = \"a\", required = true }}\n");
    assert!(parse(&both).is_err());
    let neither = format!("{MINIMAL}[variables]\nx = {{ description = \"a\" }}\n");
    assert!(parse(&neither).is_err());
}

#[test]
fn a_private_route_is_hosted_but_not_routed() {
    let manifest = hosted(&MINIMAL.replace("route = \"/...\"", "route = { private = true }"));
    assert!(manifest.http_routes().is_empty());
    assert!(parse(&MINIMAL.replace("route = \"/...\"", "route = { private = false }")).is_err());
}

#[test]
fn unknown_keys_are_rejected() {
    for (header, line) in [
        ("[application]", "colour = \"blue\""),
        ("[component.app]", "colour = \"blue\""),
        ("[[trigger.http]]", "colour = \"blue\""),
        (
            "[component.app]",
            "build = { command = \"x\", colour = \"blue\" }",
        ),
    ] {
        let error = format!("{:#}", parse(&with(header, line)).unwrap_err());
        assert!(error.contains("colour"), "{error}");
    }
    let error = format!(
        "{:#}",
        parse(&format!("colour = 1\n{MINIMAL}")).unwrap_err()
    );
    assert!(error.contains("colour"), "{error}");
}

#[test]
fn other_manifest_versions_are_rejected() {
    let text = REPO_MANIFEST.replace("spin_manifest_version = 2", "spin_manifest_version = 1");
    let error = format!("{:#}", parse(&text).unwrap_err());
    assert!(error.contains("spin_manifest_version"), "{error}");
}

#[test]
fn a_route_to_a_missing_component_is_rejected() {
    let text = REPO_MANIFEST.replace("component = \"echo\"", "component = \"nope\"");
    let error = format!("{:#}", parse(&text).unwrap_err());
    assert!(error.contains("nope"), "{error}");
}

#[test]
fn what_serve_cannot_host_is_refused_by_key() {
    for (header, line, key) in [
        (
            "[component.app]",
            "dependencies = { \"a:b/c\" = \"1.0.0\" }",
            "dependencies",
        ),
        (
            "[application]",
            "trigger.redis = { address = \"redis://localhost\", other = \"x\" }",
            "[application.trigger.redis] other",
        ),
        (
            "[application]",
            "trigger.cron = { every = \"1m\" }",
            "[application.trigger.cron] every",
        ),
        (
            "[[trigger.http]]",
            "components = { a = \"b\" }",
            "components",
        ),
    ] {
        let error = refusal(&with(header, line));
        assert!(error.contains(key), "{key}: {error}");
    }
}

#[test]
fn a_url_source_is_hosted_when_its_digest_is_one_spin_accepts() {
    let digest = format!("sha256:{}", "ab".repeat(32));
    let source = format!("{{ url = \"https://example.com/a.wasm\", digest = \"{digest}\" }}");
    hosted(&MINIMAL.replace("source = \"app.wasm\"", &format!("source = {source}")));
    for (digest, why) in [
        ("sha256:00", "64 hex digits"),
        ("md5:0123", "must start with 'sha256:'"),
    ] {
        let source = format!("{{ url = \"https://example.com/a.wasm\", digest = \"{digest}\" }}");
        let manifest =
            parse(&MINIMAL.replace("source = \"app.wasm\"", &format!("source = {source}")))
                .unwrap();
        // Spin refuses it too: an error in one line, not a "use spin up".
        let error = hosting::check(&manifest).unwrap_err().to_string();
        assert!(error.contains("`source`") && error.contains(why), "{error}");
        assert!(!error.contains('\n'), "{error}");
    }
}

#[test]
fn a_wagi_trigger_has_spin_s_default_argv_unless_it_gives_one() {
    let wagi = MINIMAL.replace(
        "component = \"app\"",
        "component = \"app\"\nexecutor = { type = \"wagi\" }",
    );
    let manifest = hosted(&wagi);
    let config = manifest.trigger.http[0].wagi().expect("a WAGI trigger");
    assert_eq!(config.argv, "${SCRIPT_NAME} ${ARGS}");
    let given = MINIMAL.replace(
        "component = \"app\"",
        "component = \"app\"\nexecutor = { type = \"wagi\", argv = \"x ${ARGS}\", entrypoint = \"_start\" }",
    );
    assert_eq!(
        hosted(&given).trigger.http[0].wagi().unwrap().argv,
        "x ${ARGS}"
    );
    assert!(hosted(MINIMAL).trigger.http[0].wagi().is_none());
}

#[test]
fn registry_sources_are_refused_by_key() {
    for (source, key) in [
        (
            "{ registry = \"ttl.sh\", package = \"a:b\", version = \"1.0.0\" }",
            "source = { registry = \"ttl.sh\"",
        ),
        (
            "{ package = \"a:b\", version = \"1.0.0\" }",
            "source = { registry = \"default\"",
        ),
    ] {
        let error =
            refusal(&MINIMAL.replace("source = \"app.wasm\"", &format!("source = {source}")));
        assert!(error.contains(key), "{key}: {error}");
        assert!(error.contains("wasm-pkg"), "{error}");
    }
}

#[test]
fn redis_triggers_are_hosted_beside_http_ones() {
    let redis = format!(
        "{}[[trigger.redis]]\nchannel = \"messages\"\ncomponent = \"app\"\n",
        with(
            "[application]",
            "trigger.redis = { address = \"redis://127.0.0.1\" }"
        )
    );
    let manifest = hosted(&redis);
    assert_eq!(manifest.trigger.redis[0].channel, "messages");
    assert_eq!(manifest.triggered_components(), ["app"]);
    assert!(manifest.is_redis_component("app") && manifest.is_http_component("app"));
    let missing = redis.replace(
        "channel = \"messages\"\ncomponent = \"app\"",
        "channel = \"m\"\ncomponent = \"nope\"",
    );
    assert!(format!("{:#}", parse(&missing).unwrap_err()).contains("nope"));
}

#[test]
fn other_triggers_and_inline_components_are_refused_by_key() {
    let cron = format!(
        "{MINIMAL}[[trigger.cron]]\ncron_expression = \"1/2 * * * * *\"\ncomponent = \"app\"\n"
    );
    let error = refusal(&cron);
    assert!(
        error.contains("[[trigger.cron]]") && error.contains("Redis"),
        "{error}"
    );
    let inline = MINIMAL.replace(
        "component = \"app\"",
        "component = { source = \"inline.wasm\" }",
    );
    assert!(refusal(&inline).contains("component = { source = "));
}

#[test]
fn from_names_a_file_or_a_directory_holding_spin_toml() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    assert_eq!(resolve_path(&repo), repo.join("spin.toml"));
    let file = repo.join("spin-p3.toml");
    assert_eq!(resolve_path(&file), file);
}

/// compare serves each component alone: the reduced manifest keeps what the
/// component runs with (the app's variables, its own variables and
/// environment) and drops the other components and their routes.
#[test]
fn one_component_keeps_what_the_component_runs_with() {
    let app = r#"spin_manifest_version = 2
[application]
name = "two"
[variables]
greeting = { default = "hi" }
[[trigger.http]]
route = "/a/..."
component = "a"
[[trigger.http]]
route = "/b"
component = "b"
[component.a]
source = "a.wasm"
environment = { MODE = "fast" }
[component.a.variables]
greeting = "{{ greeting }}"
[component.b]
source = "b.wasm"
"#;
    let one = Manifest::parse(
        &one_component::one_component(app, "a").unwrap(),
        PathBuf::from("/app"),
    )
    .unwrap();
    assert_eq!(one.component.keys().collect::<Vec<_>>(), ["a"]);
    assert_eq!(one.http_routes().len(), 1);
    assert_eq!(one.http_routes()[0].route, "/a/...");
    assert_eq!(one.variables["greeting"].default.as_deref(), Some("hi"));
    assert_eq!(one.component["a"].variables["greeting"], "{{ greeting }}");
    assert_eq!(one.component["a"].environment["MODE"], "fast");
    let missing = one_component::one_component(app, "c").unwrap_err();
    assert!(format!("{missing:#}").contains("\"c\""), "{missing:#}");
}

#[test]
fn a_base_and_static_responses_are_hosted_and_read() {
    let manifest = hosted(&format!(
        "{}[[trigger.http]]\nroute = \"/health\"\nstatic_response = {{ status_code = 204, \
         headers = {{ x-a = \"b\" }}, body = \"ok\" }}\n",
        with("[application]", "trigger.http = { base = \"/api\" }")
    ));
    assert_eq!(manifest.http_base(), "/api");
    let routes = manifest.http_routes();
    assert_eq!(routes[0].component(), Some("app"));
    let RouteTarget::Static(response) = &routes[1].target else {
        panic!("{:?}", routes[1]);
    };
    assert_eq!(response.status_code, Some(204));
    assert_eq!(response.headers["x-a"], "b");
    assert_eq!(response.body.as_deref(), Some("ok"));
}

#[test]
fn a_trigger_needs_a_component_or_a_static_response_not_both() {
    let both = with(
        "[[trigger.http]]",
        "static_response = { status_code = 200 }",
    );
    let error = parse(&both).unwrap_err();
    assert!(format!("{error:#}").contains("both"), "{error:#}");
    let neither = MINIMAL.replace("component = \"app\"\n", "");
    let error = parse(&neither).unwrap_err();
    assert!(format!("{error:#}").contains("neither"), "{error:#}");
}

#[test]
fn only_triggered_components_are_checked_and_loaded() {
    let text = format!(
        "{MINIMAL}[component.unused]\nsource = {{ url = \"https://example.com/a.wasm\", digest = \"sha256:00\" }}\n\
         key_value_stores = [\"default\"]\n"
    );
    let manifest = hosted(&text);
    assert_eq!(manifest.triggered_components(), ["app"]);
}
