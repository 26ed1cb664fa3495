//! A WAGI program, as any language with a WASI libc writes one: the request
//! comes as CGI variables, arguments and stdin; the response goes to stdout,
//! a header block, a blank line, the body. By `PATH_INFO`:
//! - `/redirect`: a `Location` only (a 302);
//! - `/teapot`: `Status: 418`;
//! - `/silent`: writes nothing;
//! - anything else: `200 text/plain`, a line per thing it was given
//!   (`args=`, `stdin=`, then `NAME=value` for each variable tests/tests/wagi.rs reads).

use std::io::{Read, Write};

const VARIABLES: &[&str] = &[
    "REQUEST_METHOD",
    "SCRIPT_NAME",
    "PATH_INFO",
    "QUERY_STRING",
    "CONTENT_LENGTH",
    "SERVER_NAME",
    "SERVER_PORT",
    "X_FULL_URL",
    "X_MATCHED_ROUTE",
    "X_PATH_MATCH_NAME",
    "HTTP_X_TEST",
    "GREETING",
];

fn main() {
    let variable = |name: &str| std::env::var(name).unwrap_or_default();
    let mut out = std::io::stdout().lock();
    match variable("PATH_INFO").as_str() {
        "/redirect" => {
            write!(out, "Location: /elsewhere\n\n").unwrap();
        }
        "/teapot" => {
            write!(out, "Status: 418 I'm a teapot\nContent-Type: text/plain\n\nshort and stout").unwrap();
        }
        "/silent" => {}
        _ => {
            let mut stdin = String::new();
            std::io::stdin().read_to_string(&mut stdin).unwrap();
            let args: Vec<String> = std::env::args().collect();
            write!(out, "Content-Type: text/plain\r\nX-Wagi: yes\r\n\r\n").unwrap();
            writeln!(out, "args={}", args.join("|")).unwrap();
            writeln!(out, "stdin={stdin}").unwrap();
            for name in VARIABLES {
                writeln!(out, "{name}={}", variable(name)).unwrap();
            }
        }
    }
}
