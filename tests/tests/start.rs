//! What `serve` does before it listens. The pool's setup (one `mprotect` per
//! slot, for its fiber stack's guard page) is paid per slot, so a start that
//! set the full pool up first would pay for every slot before the first
//! request; `serve` starts on a small pool and prepares the full one in the
//! background. Counted with strace (system calls, not seconds), skipped with a
//! message where strace is absent.

use e2e::{GroupServer, Server, artifact, get, on_path, runner_args, workspace_root};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

/// Far more slots than anything else in a start calls `mprotect` for.
const SLOTS: u32 = 4_000;

#[test]
fn the_full_pool_is_set_up_after_listening_not_before() {
    let Some(strace) = on_path("strace") else {
        eprintln!("skipped: strace is not on PATH (Debian's strace package)");
        return;
    };
    artifact("wasm32-wasip2/release/hello.wasm");
    let trace = std::env::temp_dir().join(format!("e2e-start-{}.strace", std::process::id()));
    // Port 0: spinbench binds a free one and announces it.
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let mut command = Command::new(strace);
    command
        .args(["-f", "-qq", "-e", "trace=mprotect,listen", "-o"])
        .arg(&trace)
        .arg(artifact("release/spinbench"))
        .args(runner_args(
            &workspace_root().join("spin.toml"),
            &["--max-instances", &SLOTS.to_string()],
        ))
        .args(["--listen", &addr.to_string()])
        // strace and spinbench in a group of their own, stopped together:
        // killing strace alone would leave its tracee serving.
        .process_group(0);
    let group = GroupServer {
        server: Server::start_command("spinbench-strace", command, addr),
    };
    let server = &group.server;
    assert_eq!(get(&server.url("/hello")).status, 200);
    // The full pool comes up in the background; the log says when.
    let start = Instant::now();
    while !server.log().contains("pooling allocator ready") {
        assert!(
            start.elapsed() < Duration::from_mins(1),
            "the full pool was never reported ready:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(get(&server.url("/hello")).status, 200);
    // SIGTERM to both; strace writes the rest of its trace as they exit.
    drop(group);

    let calls = std::fs::read_to_string(&trace).expect("strace output");
    let _ = std::fs::remove_file(&trace);
    let (before, after) = calls
        .split_once(" listen(")
        .expect("strace saw the listener open");
    let mprotects = |text: &str| text.matches(" mprotect(").count();
    let (before, after) = (mprotects(before), mprotects(after));
    // Before: the starting pool's few slots and the loaded code; after: the
    // full pool's slots, one each.
    assert!(
        before < SLOTS as usize / 4,
        "{before} mprotect calls before listen: the full {SLOTS}-slot pool was set up on the start path"
    );
    assert!(
        after >= SLOTS as usize,
        "only {after} mprotect calls after listen: where was the {SLOTS}-slot pool set up?"
    );
}
