//! Whole lines on stdout and stderr, for the host, the runner and the shim.
//!
//! `eprintln!` formats straight into an unbuffered stderr, one `write(2)` per
//! piece of its format string, so a line like `hello: loaded from cache in 4ms`
//! leaves in three writes, and whatever another thread (or the same process's
//! stdout, into the same container log) writes in between lands inside it. A
//! log reader (a test, `kubectl logs`, a log shipper) then sees broken lines.
//!
//! Here a line is formatted first and leaves in one write. Text of several
//! lines leaves in writes of whole lines of at most [`ATOMIC_WRITE`] bytes: a
//! pipe (a container's log FIFO) keeps a write that size in one piece against
//! every other writer, and a file opened for append keeps any write whole. The
//! crates that use this deny clippy's `print_stdout` and `print_stderr`, so a
//! `println!` cannot come back unnoticed. Lines queued while serving go
//! through [`crate::logger`], which writes each with the same call.

use std::io::Write;

/// The most a pipe writes in one piece, whoever else writes to it (Linux's
/// `PIPE_BUF`).
pub const ATOMIC_WRITE: usize = 4096;

/// Writes `text` (whole lines: a missing final newline is added) to stderr.
/// Write errors are ignored, as `eprintln!` would panic on them: a closed
/// stderr must not stop a server.
pub fn stderr(text: &str) {
    let _ = write_whole_lines(&mut std::io::stderr().lock(), text);
}

/// Writes `text` (whole lines: a missing final newline is added) to stdout
/// and flushes it, so that the lines are out before whatever happens next.
pub fn stdout(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    write_whole_lines(&mut out, text)?;
    out.flush()
}

/// Writes `text` to `out` in writes of whole lines, each write at most
/// [`ATOMIC_WRITE`] bytes unless one line alone is longer (then that line is
/// one write of its own).
pub fn write_whole_lines(out: &mut impl Write, text: &str) -> std::io::Result<()> {
    write_whole_byte_lines(out, text.as_bytes())
}

/// [`write_whole_lines`] of bytes.
pub fn write_whole_byte_lines(out: &mut impl Write, text: &[u8]) -> std::io::Result<()> {
    if text.is_empty() {
        return Ok(());
    }
    let mut text = std::borrow::Cow::Borrowed(text);
    if !text.ends_with(b"\n") {
        text.to_mut().push(b'\n');
    }
    for chunk in chunks(&text) {
        out.write_all(chunk)?;
    }
    Ok(())
}

/// `bytes` (ending in a newline) cut after newlines into pieces of at most
/// [`ATOMIC_WRITE`] bytes, or of one longer line.
fn chunks(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let window = &rest[..rest.len().min(ATOMIC_WRITE)];
        let end = match window.iter().rposition(|&b| b == b'\n') {
            Some(last_newline) => last_newline + 1,
            // One line longer than a pipe keeps whole: it goes alone.
            None => rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(rest.len(), |newline| newline + 1),
        };
        let (chunk, tail) = rest.split_at(end);
        rest = tail;
        Some(chunk)
    })
}

/// `eprintln!`, written whole: the line is formatted, then written in one call.
#[macro_export]
macro_rules! err_line {
    ($($arg:tt)*) => {
        $crate::lines::stderr(&::std::format!($($arg)*))
    };
}

/// `println!`, written whole and flushed; evaluates to the write's `io::Result`.
#[macro_export]
macro_rules! out_line {
    ($($arg:tt)*) => {
        $crate::lines::stdout(&::std::format!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records each `write` call, as a packet-mode pipe would deliver it.
    #[derive(Default)]
    struct Writes(Vec<Vec<u8>>);

    impl Write for Writes {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn writes_of(text: &str) -> Vec<String> {
        let mut writes = Writes::default();
        write_whole_lines(&mut writes, text).unwrap();
        writes
            .0
            .into_iter()
            .map(|w| String::from_utf8(w).unwrap())
            .collect()
    }

    #[test]
    fn a_line_is_one_write_with_its_newline() {
        assert_eq!(
            writes_of("hello: compiled in 4ms"),
            ["hello: compiled in 4ms\n"]
        );
        assert_eq!(writes_of("a\nb\n"), ["a\nb\n"]);
    }

    #[test]
    fn long_text_is_cut_only_after_a_newline_and_within_a_pipe_s_atomic_size() {
        let line = format!("{}\n", "x".repeat(999));
        let text = line.repeat(10);
        let writes = writes_of(&text);
        assert_eq!(writes.concat(), text);
        for write in &writes {
            assert!(write.len() <= ATOMIC_WRITE, "{}", write.len());
            assert!(write.ends_with('\n'));
        }
        assert_eq!(writes.len(), 3, "4 + 4 + 2 lines of 1000 bytes");
    }

    #[test]
    fn a_line_longer_than_a_pipe_keeps_goes_alone_and_whole() {
        let long = "y".repeat(ATOMIC_WRITE + 10);
        let writes = writes_of(&format!("a\n{long}\nb\n"));
        assert_eq!(
            writes,
            ["a\n".to_string(), format!("{long}\n"), "b\n".to_string()]
        );
    }
}
