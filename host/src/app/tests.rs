//! End-to-end checks of the host against the repo's built components. A test
//! whose `.wasm` has not been built fails, saying how to build it: a check that
//! did not run must not pass.

use super::in_process::full_body;
use super::*;
use crate::instance::reuse::Handler;
use http_body_util::BodyExt;
use std::path::Path;
use std::time::Instant;

const WASM_DIR: &str = "target/wasm32-wasip2/release";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A host serving `component` (built to `<wasm>.wasm`) at `route`.
fn host(component: &str, wasm: &str, route: &str, timeout: Duration) -> Host {
    let source = format!("{WASM_DIR}/{wasm}.wasm");
    assert!(
        repo_root().join(&source).exists(),
        "{source} is not built: run `make build` (or `spinbench build --manifest spin.toml`) first"
    );
    let text = format!(
        "spin_manifest_version = 2\n[application]\nname = \"t\"\n\
         [[trigger.http]]\nroute = \"{route}\"\ncomponent = \"{component}\"\n\
         [component.{component}]\nsource = \"{source}\"\n"
    );
    let manifest = Manifest::parse(&text, repo_root()).unwrap();
    let options = HostOptions {
        cache_dir: None,
        request_timeout: timeout,
        pool: PoolSizing {
            max_instances: 8,
            ..PoolSizing::default()
        },
        ..HostOptions::default()
    };
    Host::new(&manifest, &options).unwrap()
}

fn get(uri: &str) -> Request<Bytes> {
    Request::get(uri).body(Bytes::new()).unwrap()
}

#[tokio::test]
async fn hello_answers_in_process() {
    let host = host("hello", "hello", "/hello", Duration::from_secs(30));
    let response = host.handle_timed("hello", get("/hello")).await.unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(&response.body[..], b"Hello, World!");
    assert!(response.instantiate > Duration::ZERO);
    assert!(host.handle_timed("nope", get("/hello")).await.is_err());
}

#[tokio::test]
async fn unknown_paths_get_spins_404_with_an_empty_body() {
    let host = host("hello", "hello", "/hello", Duration::from_secs(30));
    let client = ClientAddr::new("127.0.0.1:1".parse().unwrap());
    let (response, component) = host.handle(full_request("/nope"), &client).await;
    assert_eq!(component, None);
    assert_eq!(response.status(), 404);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(body.is_empty(), "{body:?}");
}

#[tokio::test]
async fn a_busy_guest_is_interrupted_with_504() {
    let host = host("cpu", "cpu", "/cpu", Duration::from_millis(300));
    let start = Instant::now();
    let response = host.handle_timed("cpu", get("/cpu?ms=5000")).await.unwrap();
    assert_eq!(response.status, 504, "{:?}", response.body);
    assert!(start.elapsed() < Duration::from_secs(3));
    assert!(String::from_utf8_lossy(&response.body).contains("\"error\""));
}

#[tokio::test]
async fn a_waiting_guest_times_out_with_504() {
    let host = host("io", "io", "/io", Duration::from_millis(300));
    let start = Instant::now();
    let client = ClientAddr::new("127.0.0.1:1".parse().unwrap());
    let (response, _) = host.handle(full_request("/io?ms=5000"), &client).await;
    assert_eq!(response.status(), 504);
    assert!(start.elapsed() < Duration::from_secs(3));
}

fn full_request(
    uri: &str,
) -> Request<http_body_util::combinators::UnsyncBoxBody<Bytes, wasmtime_wasi_http::Error>> {
    get(uri).map(full_body)
}

/// The in-process API is not gated by the admission cap, so it can exhaust the
/// pool: the instantiation that finds no free slot is a 503 with Retry-After,
/// not a 500, and the others complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_pool_is_a_503_with_retry_after() {
    let host = host("io", "io", "/io", Duration::from_secs(10));
    let host = std::sync::Arc::new(host);
    let calls: Vec<_> = (0..12)
        .map(|_| {
            let host = host.clone();
            tokio::spawn(async move { host.handle_timed("io", get("/io?ms=400")).await.unwrap() })
        })
        .collect();
    let mut statuses = Vec::new();
    for call in calls {
        let response = call.await.unwrap();
        if response.status == 503 {
            assert_eq!(response.headers["retry-after"], "1");
            assert!(String::from_utf8_lossy(&response.body).contains("\"error\""));
        }
        statuses.push(response.status.as_u16());
    }
    assert!(
        statuses.iter().all(|s| [200, 503].contains(s)),
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        8,
        "{statuses:?}"
    );
}

/// A host serving the WASIp3 `hello` at `/hello` with `reuse`, or `None` if not built.
fn p3_hello(reuse: ReuseLimits) -> Option<Host> {
    let source = "target/p3/wasm32-wasip2/release/hello_p3.wasm";
    if !repo_root().join(source).exists() {
        crate::err_line!("skipping: {source} is not built");
        return None;
    }
    let text = format!(
        "spin_manifest_version = 2\n[application]\nname = \"t\"\n\
         [[trigger.http]]\nroute = \"/hello\"\ncomponent = \"hello\"\n\
         [component.hello]\nsource = \"{source}\"\n"
    );
    let manifest = Manifest::parse(&text, repo_root()).unwrap();
    let options = HostOptions {
        cache_dir: None,
        pool: PoolSizing {
            max_instances: 8,
            ..PoolSizing::default()
        },
        reuse,
        ..HostOptions::default()
    };
    Some(Host::new(&manifest, &options).unwrap())
}

/// Sequential requests, then how many instances served them.
async fn instances_for(host: &Host, requests: usize, pause: Duration) -> u64 {
    for _ in 0..requests {
        let response = host.handle_timed("hello", get("/hello")).await.unwrap();
        assert_eq!(response.status, 200);
        tokio::time::sleep(pause).await;
    }
    match &host.application().components["hello"].handler {
        Handler::Reused(reused) => reused.instances_created(),
        Handler::Fresh(_) | Handler::Wagi(_) => panic!("hello_p3 is a WASIp3 component"),
    }
}

#[tokio::test]
async fn the_reuse_count_limit_is_applied() {
    let Some(default) = p3_hello(ReuseLimits::default()) else {
        return;
    };
    assert_eq!(instances_for(&default, 4, Duration::ZERO).await, 1);
    let once = ReuseLimits {
        max_requests: 1,
        ..ReuseLimits::default()
    };
    let host = p3_hello(once).unwrap();
    assert_eq!(instances_for(&host, 4, Duration::ZERO).await, 4);
}

#[tokio::test]
async fn the_idle_instance_timeout_is_applied() {
    let short = ReuseLimits {
        idle_timeout: Duration::from_millis(20),
        ..ReuseLimits::default()
    };
    let Some(host) = p3_hello(short) else {
        return;
    };
    // Each pause outlasts the idle timeout: every request finds its instance gone.
    assert_eq!(instances_for(&host, 3, Duration::from_millis(300)).await, 3);
    let default = p3_hello(ReuseLimits::default()).unwrap();
    assert_eq!(
        instances_for(&default, 3, Duration::from_millis(300)).await,
        1
    );
}

/// A component reading its variables through spin-sdk, as `spin new` writes it.
#[tokio::test]
async fn the_template_component_reads_its_variable() {
    let source = "target/wasm32-wasip2/release/template_hello.wasm";
    if !repo_root().join(source).exists() {
        crate::err_line!("skipping: {source} is not built");
        return;
    }
    let text = format!(
        "spin_manifest_version = 2\n[application]\nname = \"t\"\n\
         [variables]\nname = {{ default = \"spinbench\" }}\n\
         [[trigger.http]]\nroute = \"/...\"\ncomponent = \"t\"\n\
         [component.t]\nsource = \"{source}\"\n\
         variables = {{ greeting = \"Hello, {{{{ name }}}}!\" }}\n"
    );
    let manifest = Manifest::parse(&text, repo_root()).unwrap();
    let options = HostOptions {
        cache_dir: None,
        pool: PoolSizing {
            max_instances: 8,
            ..PoolSizing::default()
        },
        ..HostOptions::default()
    };
    let host = Host::new(&manifest, &options).unwrap();
    let response = host.handle_timed("t", get("/")).await.unwrap();
    assert_eq!(response.status, 200, "{:?}", response.body);
    assert_eq!(&response.body[..], b"Hello, spinbench!");
}

/// `environment` reaches the guest's `std::env` (the misbehaving component
/// reports how many variables it sees; without `environment`, none).
#[tokio::test]
async fn a_components_environment_reaches_the_guest() {
    let source = "target/wasm32-wasip2/release/misbehaving.wasm";
    if !repo_root().join(source).exists() {
        crate::err_line!("skipping: {source} is not built");
        return;
    }
    let host_with = |environment: &str| {
        let text = format!(
            "spin_manifest_version = 2\n[application]\nname = \"t\"\n\
             [[trigger.http]]\nroute = \"/misbehave/...\"\ncomponent = \"m\"\n\
             [component.m]\nsource = \"{source}\"\n{environment}\n"
        );
        let manifest = Manifest::parse(&text, repo_root()).unwrap();
        let options = HostOptions {
            cache_dir: None,
            pool: PoolSizing {
                max_instances: 8,
                ..PoolSizing::default()
            },
            ..HostOptions::default()
        };
        Host::new(&manifest, &options).unwrap()
    };
    for (environment, expected) in [("", 0), ("environment = { A = \"1\", B = \"2\" }", 2)] {
        let host = host_with(environment);
        let response = host
            .handle_timed("m", get("/misbehave/escape"))
            .await
            .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
        assert_eq!(report["env_vars"], expected, "{environment}: {report}");
    }
}

/// What `precompile` leaves in a cache is what `Host::new` loads, for either
/// engine (WASIp2's, and WASIp3's with the async ABI), on the pool as on
/// demand: a container started after the shim's precompile compiles nothing.
#[test]
fn precompiled_components_are_loaded_not_compiled() {
    for source in [
        format!("{WASM_DIR}/hello.wasm"),
        "target/p3/wasm32-wasip2/release/hello_p3.wasm".to_string(),
    ] {
        assert!(
            repo_root().join(&source).exists(),
            "{source} is not built: run `make build` first"
        );
        let text = format!(
            "spin_manifest_version = 2\n[application]\nname = \"t\"\n\
             [[trigger.http]]\nroute = \"/hello\"\ncomponent = \"hello\"\n\
             [component.hello]\nsource = \"{source}\"\n"
        );
        let manifest = Manifest::parse(&text, repo_root()).unwrap();
        let cache = tempfile::tempdir().unwrap();
        let compiled = precompile(&manifest, cache.path()).unwrap();
        assert_eq!(
            compiled,
            vec![("hello".to_string(), Origin::Compiled)],
            "{source}"
        );
        for allocation in [Allocation::Pooling, Allocation::OnDemand] {
            let options = HostOptions {
                cache_dir: Some(cache.path().to_path_buf()),
                allocation,
                pool: PoolSizing {
                    max_instances: 8,
                    ..PoolSizing::default()
                },
                ..HostOptions::default()
            };
            let host = Host::new(&manifest, &options).unwrap();
            let origins: Vec<Origin> = host.loads().iter().map(|l| l.origin).collect();
            assert_eq!(
                origins,
                vec![Origin::LoadedFromCache],
                "{source} {allocation:?}"
            );
        }
    }
}
