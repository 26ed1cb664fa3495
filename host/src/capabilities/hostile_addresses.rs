//! Spellings of an outbound address that two parsers may read apart, for
//! the client modules' tests (redis, mqtt, mysql): each runs every spelling
//! through the allow-list and its client crate and asserts that the address
//! is refused or reaches the granted destination, and nothing else.
//!
//! In a spelling `{s}` is the scheme, `{g}` the granted port of 127.0.0.1,
//! `{f}` a forbidden port; `{q}` and `{a}` are where a client that needs a
//! query parameter (rumqttc's `client_id`) gets it, as the first (`?...`) or
//! a further (`&...`) parameter.

/// The granted destination of every spelling.
pub const GRANTED: &str = "127.0.0.1:7001";
pub const GRANTED_PORT: u16 = 7001;
pub const FORBIDDEN_PORT: u16 = 7002;

const SPELLINGS: &[&str] = &[
    // The authority ends at `#`, `?` or `/` for a URL parser; a userinfo
    // encoder that looks for the `@` first reads past it.
    "{s}://127.0.0.1:{f}{q}#@127.0.0.1:{g}",
    "{s}://127.0.0.1:{f}?@127.0.0.1:{g}{a}",
    "{s}://127.0.0.1:{f}/@127.0.0.1:{g}{q}",
    "{s}://127.0.0.1:{f}\\@127.0.0.1:{g}{q}",
    "{s}://127.0.0.1:{f}%23@127.0.0.1:{g}{q}",
    "{s}://127.0.0.1:{f}\t#@127.0.0.1:{g}{q}",
    "{s}://127.0.0.1:{f}\n{q}#@127.0.0.1:{g}",
    "{s}://u:p#w@127.0.0.1:{f}{q}",
    "{s}://u:p@w@127.0.0.1:{f}{q}",
    "{s}://127.0.0.1:{g}@127.0.0.1:{f}{q}",
    "{s}://127.0.0.1:{g}#@127.0.0.1:{f}{q}",
    "127.0.0.1:{f}{q}#@127.0.0.1:{g}",
    "//127.0.0.1:{f}{q}#@127.0.0.1:{g}",
    // Ports: leading zeros, overflow, two of them, none.
    "{s}://127.0.0.1:0{g}{q}",
    "{s}://127.0.0.1:{g}0{q}",
    "{s}://127.0.0.1:65536{q}",
    "{s}://127.0.0.1:{f}:{g}{q}",
    "{s}://127.0.0.1:{g}:{f}{q}",
    "{s}://127.0.0.1:{q}",
    "{s}://127.0.0.1:+{g}{q}",
    // Hosts: other spellings of 127.0.0.1 and of other addresses.
    "{s}://[::ffff:127.0.0.1]:{g}{q}",
    "{s}://[::1]:{g}{q}",
    "{s}://[127.0.0.1]:{g}{q}",
    "{s}://127.0.0.1.:{g}{q}",
    "{s}://0x7f.1:{g}{q}",
    "{s}://0177.0.0.1:{g}{q}",
    "{s}://2130706433:{g}{q}",
    "{s}://127.1:{g}{q}",
    "{s}://%31%32%37.0.0.1:{g}{q}",
    "{s}://127.0.0.1%2f:{g}{q}",
    "{s}://127.0.0.1%00:{g}{q}",
    "{s}://localhost:{g}{q}",
    "{s}://LOCALHOST:{g}{q}",
    "{s}://127.0.0.2:{g}{q}",
    "{s}://0.0.0.0:{g}{q}",
    // Scheme, whitespace, control characters.
    "{S}://127.0.0.1:{g}{q}",
    " {s}://127.0.0.1:{g}{q} ",
    "{s}://127.0.0.1:{g}{q}\r\n",
    "{s}://127.0.0.1 :{g}{q}",
    "{s}://127.0.0.1:{g} {q}",
    "{s}://\u{1}127.0.0.1:{g}{q}",
    // Query parameters naming another host, several hosts, sockets.
    "{s}://127.0.0.1:{g}/?host=127.0.0.1:{f}{a}",
    "{s}://127.0.0.1:{g}/?socket=/tmp/forbidden.sock{a}",
    "{s}://127.0.0.1:{g},127.0.0.1:{f}{q}",
    "{s}+unix:///tmp/forbidden.sock{q}",
    "unix:///tmp/forbidden.sock{q}",
    "{s}+unix://localhost:{g}/tmp/forbidden.sock{q}",
    "unix://localhost:{g}/tmp/forbidden.sock{q}",
    "{s}://127.0.0.1:{g}/tmp/forbidden.sock{q}",
];

/// Whether `destination` is one the allow-lists below grant.
pub fn is_granted(destination: &super::dial::Destination) -> bool {
    let host = destination.host.to_string();
    destination.port == GRANTED_PORT && (host == "127.0.0.1" || host == "localhost")
}

/// Every spelling under `scheme`, for a client that needs `query` (without
/// its `?`) in every address, or none.
pub fn spellings(scheme: &str, query: &str) -> Vec<String> {
    let (first, further) = if query.is_empty() {
        (String::new(), String::new())
    } else {
        (format!("?{query}"), format!("&{query}"))
    };
    SPELLINGS
        .iter()
        .map(|spelling| {
            spelling
                .replace("{s}", scheme)
                .replace("{S}", &scheme.to_uppercase())
                .replace("{g}", &GRANTED_PORT.to_string())
                .replace("{f}", &FORBIDDEN_PORT.to_string())
                .replace("{q}", &first)
                .replace("{a}", &further)
        })
        .collect()
}

/// The allow-lists the spellings are checked against: the granted port
/// under the client's scheme, and every scheme on 127.0.0.1 and localhost at
/// that port (so a spelling the client reads under another scheme or as a
/// socket is still allowed by the list, and must be refused by the check).
pub fn allow_lists(scheme: &str) -> [Vec<String>; 2] {
    [
        vec![format!("{scheme}://{GRANTED}")],
        vec![
            format!("*://{GRANTED}"),
            format!("*://localhost:{GRANTED_PORT}"),
        ],
    ]
}

/// Connections that arrived at a listener.
pub type Arrivals = std::sync::Arc<std::sync::atomic::AtomicUsize>;

/// Accepts on `listener` until the runtime ends, counting each connection
/// before closing it (so a client's error comes after the count).
fn count(listener: tokio::net::TcpListener) -> Arrivals {
    let arrivals = Arrivals::default();
    let counted = arrivals.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(stream);
        }
    });
    arrivals
}

/// Listeners at one port on 127.0.0.1 (where `localhost` resolves: the
/// decoy, and on ::1 where the machine has it) and on 127.0.0.2 (what the
/// check pinned): a client that looks `localhost` up again reaches a decoy.
pub async fn decoys_and_pinned() -> (u16, Vec<Arrivals>, Arrivals) {
    for _ in 0..20 {
        let decoy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = decoy.local_addr().unwrap().port();
        let Ok(pinned) = tokio::net::TcpListener::bind(("127.0.0.2", port)).await else {
            continue;
        };
        let mut decoys = vec![count(decoy)];
        if let Ok(v6) = tokio::net::TcpListener::bind(("::1", port)).await {
            decoys.push(count(v6));
        }
        return (port, decoys, count(pinned));
    }
    panic!("no port free on both 127.0.0.1 and 127.0.0.2");
}

/// The sum of `arrivals`.
pub fn arrived(arrivals: &[Arrivals]) -> usize {
    arrivals
        .iter()
        .map(|a| a.load(std::sync::atomic::Ordering::SeqCst))
        .sum()
}
