//! Every line `spinbench serve` writes leaves in one write, whichever thread
//! writes it, and no write is larger than a pipe keeps in one piece: what a
//! container log, `kubectl logs` or a log shipper reads from the pipe is whole
//! lines, however the writes of the runner's threads and a guest's output
//! interleave.
//!
//! The server's stdout and stderr are one packet-mode pipe (`O_DIRECT`): the
//! kernel keeps each `write(2)` a packet of its own (cut at `PIPE_BUF`), and
//! each read returns one packet. So a line written in pieces (as `eprintln!`
//! writes its format string's pieces), or in one write too long for a pipe to
//! keep whole, shows as a packet that does not end its line, whether or not
//! another thread happened to write in between this time.

use e2e::{artifact, get, runner_args, workspace_root};
use rustix::pipe::{PipeFlags, pipe_with};
use std::io::Read;
use std::os::fd::OwnedFd;
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// Reads packets from `reader` until the pipe closes, each sent on as it came.
fn packets(reader: OwnedFd) -> Receiver<Vec<u8>> {
    let (sender, packets) = channel();
    std::thread::spawn(move || {
        let mut reader = std::fs::File::from(reader);
        let mut buffer = vec![0; 64 * 1024];
        while let Ok(n @ 1..) = reader.read(&mut buffer) {
            if sender.send(buffer[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    packets
}

/// The packets received within `limit` of now, or until one holds `until`.
fn collect(packets: &Receiver<Vec<u8>>, all: &mut Vec<Vec<u8>>, until: &str, limit: Duration) {
    let start = Instant::now();
    while start.elapsed() < limit {
        let Ok(packet) = packets.recv_timeout(Duration::from_millis(100)) else {
            continue;
        };
        let done = String::from_utf8_lossy(&packet).contains(until);
        all.push(packet);
        if done {
            return;
        }
    }
}

/// `spinbench serve` of `manifest` with an empty compiled-code cache (so that
/// it compiles, and says so, on several threads) on port 0, its stdout and
/// stderr the packet pipe; requests sent with `drive`, then SIGTERM (its
/// shutdown lines): every packet it wrote.
fn writes_of_a_serve(manifest: &str, drive: impl FnOnce(&str)) -> Vec<Vec<u8>> {
    let (reader, writer) =
        pipe_with(PipeFlags::DIRECT | PipeFlags::CLOEXEC).expect("a packet-mode pipe");
    let packets = packets(reader);
    let cache = tempfile::tempdir().unwrap();
    let mut args = runner_args(&workspace_root().join(manifest), &[]);
    // The e2e cache is warm: this run's own cache is empty.
    let at = args.iter().position(|a| a == "--cache-dir").unwrap();
    args[at + 1] = cache.path().display().to_string();
    args.extend(["--listen".into(), "127.0.0.1:0".into()]);
    let mut command = Command::new(artifact("release/spinbench"));
    command
        .args(&args)
        .stdin(Stdio::null())
        .stdout(writer.try_clone().unwrap())
        .stderr(writer);
    let mut child = e2e::process::spawn_tied(command).unwrap();
    let mut all = Vec::new();
    collect(
        &packets,
        &mut all,
        "Available Routes",
        Duration::from_mins(3),
    );
    let text: String = all.iter().map(|p| String::from_utf8_lossy(p)).collect();
    let at = text
        .find("http://127.0.0.1:")
        .unwrap_or_else(|| panic!("no address announced within 3 minutes; it wrote:\n{text}"))
        + 7;
    let addr: String = text[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':')
        .collect();
    drive(&format!("http://{addr}"));
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let _ = child.wait();
    collect(&packets, &mut all, "\u{0}never", Duration::from_secs(2));
    all
}

/// Fails, quoting them, if any packets do not end a line or are longer than
/// a pipe writes in one piece.
fn assert_whole_lines(packets: &[Vec<u8>]) {
    assert!(
        packets.len() > 3,
        "too few writes to say anything: {packets:?}"
    );
    let broken: Vec<String> = packets
        .iter()
        .filter(|p| !p.ends_with(b"\n") || p.len() > 4096)
        .map(|p| format!("{:?}", String::from_utf8_lossy(p)))
        .collect();
    assert!(
        broken.is_empty(),
        "{} of {} writes do not end a line:\n{}",
        broken.len(),
        packets.len(),
        broken.join("\n")
    );
}

#[test]
fn the_function_set_s_start_requests_and_shutdown_are_written_in_whole_lines() {
    let packets = writes_of_a_serve("spin.toml", |base| {
        let threads: Vec<_> = e2e::functions()
            .iter()
            .map(|f| {
                let url = format!("{base}/{f}");
                std::thread::spawn(move || get(&url))
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
    });
    assert_whole_lines(&packets);
    let text: String = packets.iter().map(|p| String::from_utf8_lossy(p)).collect();
    for id in e2e::functions() {
        assert!(text.contains(&format!("{id}: compiled in")), "{text}");
    }
}

#[test]
fn a_guest_s_flood_of_long_and_escaped_lines_is_written_in_whole_lines() {
    artifact("wasm32-wasip2/release/misbehaving.wasm");
    let packets = writes_of_a_serve("tests/misbehaving/spin.toml", |base| {
        // Several guests at once, each with lines longer than the runner keeps
        // in one line, escapes that lengthen them, and traps.
        let threads: Vec<_> = (0..4)
            .flat_map(|_| {
                [
                    format!("{base}/misbehave/stderr?kib=9&lines=6"),
                    format!("{base}/misbehave/trap"),
                ]
            })
            .map(|url| std::thread::spawn(move || get(&url)))
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
    });
    assert_whole_lines(&packets);
    let text: String = packets.iter().map(|p| String::from_utf8_lossy(p)).collect();
    assert!(text.contains("forged runner line"), "{text}");
    assert!(text.contains("this component panics on purpose"), "{text}");
}
