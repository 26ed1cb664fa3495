//! The runner's stderr while serving: one thread writes it; request threads only
//! queue lines, and drop them (counted) when the queue is full, so a stderr
//! nobody reads (a stalled log collector) never blocks a runtime thread.
//!
//! A guest's stdout and stderr are captured per store ([`GuestOutput`]), as
//! `spin up` shows a component's output: each line is
//! prefixed with the component id and the store's number (a WASIp2 request, or a
//! reused WASIp3 instance), control characters are escaped (a guest cannot
//! forge a runner line or drive the terminal), and at most a budget of bytes is
//! kept, then one "truncated" marker.

use bytes::Bytes;
use std::collections::BTreeSet;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// Guest stderr kept per store by default, in bytes (a Rust panic message with
/// its location is well under 1 KiB).
pub const DEFAULT_GUEST_LOG_BYTES: usize = 64 * 1024;
/// Lines waiting for the writer thread; past it, lines are dropped and counted.
/// With [`MAX_LINE`] this bounds the queue to about 4 MiB.
const QUEUE_LINES: usize = 1024;
/// Longest guest line kept whole; a longer one continues on the next line.
const MAX_LINE: usize = 4096;
/// What a guest may write per `check-write` permit (wasmtime's usual stream size).
const WRITE_PERMIT: usize = 64 * 1024;

/// Lines dropped because the queue was full, reported by the writer when it can.
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Numbers stores in guest log prefixes.
static NEXT_STORE: AtomicU64 = AtomicU64::new(1);

/// Queues one line of the runner's own log (a trailing newline is added);
/// never blocks.
pub fn line(text: impl Into<String>) {
    let mut text = text.into();
    text.push('\n');
    send(text.into_bytes());
}

fn send(line: Vec<u8>) {
    match queue().try_send(line) {
        Ok(()) => {}
        Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn queue() -> &'static SyncSender<Vec<u8>> {
    static QUEUE: OnceLock<SyncSender<Vec<u8>>> = OnceLock::new();
    QUEUE.get_or_init(|| {
        let (sender, receiver) = sync_channel(QUEUE_LINES);
        // If the thread cannot be spawned, the receiver is gone and every line
        // is counted as dropped: serving matters more than logging.
        let _ = std::thread::Builder::new()
            .name("log-writer".into())
            .spawn(move || write_lines(receiver));
        sender
    })
}

fn write_lines(receiver: Receiver<Vec<u8>>) {
    let mut stderr = std::io::stderr();
    for line in receiver {
        let _ = crate::lines::write_whole_byte_lines(&mut stderr, &line);
        let dropped = DROPPED.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            let _ = crate::lines::write_whole_lines(
                &mut stderr,
                &format!("warning: {dropped} log lines dropped (stderr is not read fast enough)"),
            );
        }
    }
}

/// A component id as a `&'static str`, so that a store's log prefix costs no
/// allocation. Ids are interned: a process hosting the same manifest many
/// times (tests, `compare`) keeps one copy of each.
pub fn component_label(id: &str) -> &'static str {
    static LABELS: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut labels = LABELS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(label) = labels.get(id) {
        return label;
    }
    let label: &'static str = Box::leak(id.into());
    labels.insert(label);
    label
}

/// One store's stdout and stderr: every stream the guest opens on either
/// shares the budget. Costs one allocation per store when the guest writes nothing.
#[derive(Clone)]
pub struct GuestOutput(Arc<Mutex<Capture>>);

struct Capture {
    component: &'static str,
    store: u64,
    /// The line being written, without its prefix.
    line: Vec<u8>,
    /// Bytes the guest may still write before output is dropped.
    left: usize,
    truncated: bool,
}

impl GuestOutput {
    pub fn new(component: &'static str, budget: usize) -> Self {
        Self(Arc::new(Mutex::new(Capture {
            component,
            store: NEXT_STORE.fetch_add(1, Ordering::Relaxed),
            line: Vec::new(),
            left: budget,
            truncated: false,
        })))
    }

    fn capture(&self, bytes: &[u8]) {
        let mut capture = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        capture.write(bytes);
    }
}

impl Capture {
    fn write(&mut self, bytes: &[u8]) {
        let kept = bytes.len().min(self.left);
        self.left -= kept;
        let mut rest = &bytes[..kept];
        while !rest.is_empty() {
            let room = MAX_LINE - self.line.len();
            let window = &rest[..rest.len().min(room)];
            let newline = window.iter().position(|byte| *byte == b'\n');
            let take = newline.map_or(window.len(), |at| at + 1);
            self.line.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if newline.is_some() || self.line.len() == MAX_LINE {
                self.emit();
            }
        }
        if kept < bytes.len() && !self.truncated {
            self.truncated = true;
            self.emit();
            let marker = format!(
                "{}… truncated: its output past this point is dropped\n",
                self.prefix()
            );
            send(marker.into_bytes());
        }
    }

    fn prefix(&self) -> String {
        format!("guest[{} #{}]: ", self.component, self.store)
    }

    /// Sends the pending line, prefixed.
    fn emit(&mut self) {
        if self.line.is_empty() {
            return;
        }
        let line = log_line(&self.prefix(), &self.line);
        self.line.clear();
        send(line.into_bytes());
    }
}

/// `prefix` and the guest's `text` (lossy UTF-8, its newline dropped) with
/// control characters escaped, so that the text cannot end the line early,
/// rewrite it (`\r`) or send terminal escapes. Escapes make text longer: where
/// the line would pass what a pipe writes in one piece
/// ([`crate::lines::ATOMIC_WRITE`]), it goes on in a line of its own with the
/// same prefix, so that every line still leaves in one write.
fn log_line(prefix: &str, text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    let mut out = String::with_capacity(prefix.len() + text.len() + 1);
    out.push_str(prefix);
    let mut line_start = 0;
    let mut piece = String::new();
    for c in text.strip_suffix('\n').unwrap_or(&text).chars() {
        piece.clear();
        if c.is_control() && c != '\t' {
            piece.extend(c.escape_default());
        } else {
            piece.push(c);
        }
        let full = out.len() - line_start + piece.len() + 1 > crate::lines::ATOMIC_WRITE;
        if full && out.len() - line_start > prefix.len() {
            out.push('\n');
            line_start = out.len();
            out.push_str(prefix);
        }
        out.push_str(&piece);
    }
    out.push('\n');
    out
}

impl Drop for Capture {
    /// A last line without a newline is still logged when the store goes.
    fn drop(&mut self) {
        self.emit();
    }
}

impl StdoutStream for GuestOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl IsTerminal for GuestOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

/// WASIp2 `output-stream`: always ready, never blocks; bytes past the budget
/// are accepted and dropped, so a chatty guest neither waits nor fails.
impl OutputStream for GuestOutput {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.capture(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_PERMIT)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for GuestOutput {
    async fn ready(&mut self) {}
}

/// WASIp3 `stderr` stream: likewise always ready.
impl tokio::io::AsyncWrite for GuestOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.capture(bytes);
        Poll::Ready(Ok(bytes.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_capture(budget: usize) -> Capture {
        Capture {
            component: "c",
            store: 7,
            line: Vec::new(),
            left: budget,
            truncated: false,
        }
    }

    #[test]
    fn lines_are_split_at_newlines_and_at_the_line_cap() {
        let mut c = new_capture(1 << 20);
        c.write(b"one\ntw");
        assert_eq!(c.line, b"tw");
        c.write(b"o\n");
        assert!(c.line.is_empty());
        c.write(&vec![b'x'; MAX_LINE + 10]);
        assert_eq!(c.line.len(), 10);
    }

    #[test]
    fn the_budget_counts_bytes_and_truncates_once() {
        let mut c = new_capture(10);
        c.write(b"0123456789abc");
        assert!(c.truncated);
        assert_eq!(c.left, 0);
        assert!(c.line.is_empty());
        c.write(b"more");
        assert!(c.line.is_empty());
    }

    #[test]
    fn guest_text_cannot_forge_a_line_or_send_escapes() {
        assert_eq!(
            log_line("guest[c #1]: ", b"error: forged\r\x1b[2K\n"),
            "guest[c #1]: error: forged\\r\\u{1b}[2K\n"
        );
        assert_eq!(log_line("p: ", b"\xff\tok"), "p: \u{fffd}\tok\n");
    }

    #[test]
    fn a_line_escapes_make_long_goes_on_in_lines_a_pipe_writes_whole() {
        let text = [b'\x1b'; MAX_LINE];
        let out = log_line("guest[c #1]: ", &text);
        let lines: Vec<&str> = out.split_inclusive('\n').collect();
        assert!(lines.len() > 1);
        for line in &lines {
            assert!(line.len() <= crate::lines::ATOMIC_WRITE, "{}", line.len());
            assert!(line.starts_with("guest[c #1]: \\u{1b}"), "{line}");
        }
        let escapes: usize = lines.iter().map(|l| l.matches("\\u{1b}").count()).sum();
        assert_eq!(escapes, MAX_LINE);
    }

    #[test]
    fn labels_are_interned() {
        let a = component_label("same-id");
        let b = component_label(&String::from("same-id"));
        assert!(std::ptr::eq(a, b));
    }
}
