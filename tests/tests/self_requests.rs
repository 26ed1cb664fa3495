//! Requests a component makes to its own application (`self` in
//! `allowed_outbound_hosts`), as Spin 4.0.2 sends them: a relative URL or
//! `http://self.alt/...` goes to the address `serve` listens on, through the
//! router like any client's request, path and query kept; without a `self`
//! entry it is denied with `HTTP-request-denied`. Through tests/apps/outbound
//! (spin-sdk 5, wasi:http), which forwards `/http?<url>` and answers `/self`.

use e2e::{Server, get, workspace_root};
use std::path::PathBuf;

const WASM: &str = "target/wasm32-wasip2/release/outbound_app.wasm";

/// The outbound test app under a manifest listing `hosts`.
fn serve(hosts: &[&str]) -> (tempfile::TempDir, Server) {
    let wasm = workspace_root().join(WASM);
    assert!(wasm.exists(), "{WASM} is not built: run `make build` first");
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("spin.toml");
    let hosts: Vec<String> = hosts.iter().map(|h| format!("{h:?}")).collect();
    std::fs::write(
        &path,
        format!(
            "spin_manifest_version = 2\n[application]\nname = \"self\"\n\
             [[trigger.http]]\nroute = \"/...\"\ncomponent = \"outbound\"\n\
             [component.outbound]\nsource = {:?}\nallowed_outbound_hosts = [{}]\n",
            wasm.display().to_string(),
            hosts.join(", ")
        ),
    )
    .unwrap();
    let server = Server::runner_with(&path, &[]);
    (dir, server)
}

fn ask(server: &Server, path: &str) -> String {
    let answer = get(&server.url(path));
    assert_eq!(answer.status, 200, "{path}: {}", answer.text());
    answer.text()
}

#[test]
fn a_request_to_self_reaches_the_app_itself() {
    let (_dir, server) = serve(&["http://self"]);
    for url in ["/self?relative", "http://self.alt/self?alt"] {
        let query = url.rsplit('?').next().unwrap();
        assert_eq!(
            ask(&server, &format!("/http?{url}")),
            format!("status=200 location= body=reached the app: {query}"),
            "{url}"
        );
    }
    // Routed like any request: a path the component does not know is its 404.
    assert_eq!(
        ask(&server, "/http?/nothing-here"),
        "status=404 location= body=no such test"
    );
}

#[test]
fn without_self_in_the_list_a_request_to_self_is_denied() {
    let (_dir, server) = serve(&["http://127.0.0.1:1"]);
    for url in ["/self?x", "http://self.alt/self?x"] {
        let report = ask(&server, &format!("/http?{url}"));
        assert!(report.contains("HttpRequestDenied"), "{url}: {report}");
    }
}
