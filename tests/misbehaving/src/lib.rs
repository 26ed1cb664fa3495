//! Misbehaviour on demand, for the runner's isolation tests (`tests/tests/hostile.rs`).
//!
//! Each path does one bad thing. The "try" paths answer `200` with a JSON
//! report of what the sandbox allowed, so a test can assert it allowed nothing;
//! the "flood" and "alloc" paths answer `200` only if the host let them finish.

// `#[http_component]` expands to the component's exported ABI (`export_name`, unsafe
// blocks), which wit-bindgen generates from the WIT and the canonical ABI.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    use spin_sdk::http::{Fields, Method, Request, Response};
    use spin_sdk::http_component;
    use std::io::Write;

    #[http_component]
    async fn handle(req: Request) -> Response {
        let path = req.path().to_string();
        match path.as_str() {
            "/misbehave/ok" => Response::new(200, "fine"),
            "/misbehave/trap" => panic!("this component panics on purpose"),
            "/misbehave/loop" => runaway_loop(),
            "/misbehave/hog" => hog_memory(),
            "/misbehave/stack" => Response::new(200, format!("{}", recurse(0, [0u8; 1024]))),
            "/misbehave/huge" => Response::new(200, vec![b'x'; 512 * 1024 * 1024]),
            "/misbehave/escape" => Response::new(200, escape_report(number(&req, "port")).await),
            "/misbehave/alloc" => allocate(number(&req, "mib")),
            "/misbehave/fields" => keep_fields(number(&req, "kib"), number(&req, "count")),
            "/misbehave/stderr" => flood_stderr(number(&req, "kib"), number(&req, "lines")),
            _ => Response::new(404, "no such misbehaviour"),
        }
    }

    /// The query parameter `name` as a number (0 if absent or malformed).
    fn number(req: &Request, name: &str) -> usize {
        req.query()
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(key, _)| *key == name)
            .and_then(|(_, value)| value.parse().ok())
            .unwrap_or(0)
    }

    /// Allocates `mib` MiB at once and touches every page; traps if the host
    /// refuses the memory.
    fn allocate(mib: usize) -> Response {
        let block = std::hint::black_box(vec![1u8; mib << 20]);
        let touched: usize = block.iter().step_by(4096).map(|b| *b as usize).sum();
        Response::new(200, format!("allocated {mib} MiB ({touched} pages)"))
    }

    /// Creates `count` header sets, each holding one `kib` KiB value, and keeps
    /// them all until it answers: host memory, not the guest's.
    fn keep_fields(kib: usize, count: usize) -> Response {
        let value = vec![b'x'; kib << 10];
        let kept: Vec<Fields> = (0..count)
            .map(|_| {
                Fields::from_list(&[("x-flood".to_string(), value.clone())])
                    .expect("the host refused a header set")
            })
            .collect();
        Response::new(200, format!("kept {} header sets", kept.len()))
    }

    /// Writes `lines` lines of `kib` KiB to stderr, after one line that
    /// pretends to be the runner's and one with a terminal escape.
    fn flood_stderr(kib: usize, lines: usize) -> Response {
        let mut stderr = std::io::stderr();
        let _ = stderr.write_all(b"error: forged runner line\n\x1b[2Jcleared screen\n");
        let mut line = vec![b'e'; kib << 10];
        line.push(b'\n');
        for _ in 0..lines {
            let _ = stderr.write_all(&line);
        }
        Response::new(200, format!("wrote {lines} lines of {kib} KiB"))
    }

    fn runaway_loop() -> Response {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }

    /// Allocates 1 MiB at a time and touches it, until the host says no.
    fn hog_memory() -> Response {
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            hoard.push(vec![1u8; 1 << 20]);
            std::hint::black_box(&hoard);
        }
    }

    // The point: overflow the stack, a large frame at a time.
    #[allow(
        unconditional_recursion,
        clippy::only_used_in_recursion,
        clippy::large_types_passed_by_value
    )]
    fn recurse(depth: u64, pad: [u8; 1024]) -> u64 {
        std::hint::black_box(&pad);
        recurse(depth + 1, std::hint::black_box(pad)) + u64::from(pad[0])
    }

    /// What the sandbox let through; every field should say it was refused or
    /// empty. The TCP connect and the outbound request aim at 127.0.0.1:`port`,
    /// where the test listens, so only a denial (not a refused connection)
    /// keeps them out; their errors are reported too.
    async fn escape_report(port: usize) -> String {
        let read_root = std::fs::read_dir("/").map(Iterator::count);
        let read_passwd = std::fs::read("/etc/passwd").map(|b| b.len());
        let write_tmp = std::fs::write("/tmp/escaped", b"x");
        let env_vars = std::env::vars().count();
        let tcp = std::net::TcpStream::connect(("127.0.0.1", port as u16)).map(|_| ());
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").map(|_| ());
        let lookup = std::net::ToSocketAddrs::to_socket_addrs("localhost:80").map(Iterator::count);
        let outbound = spin_sdk::http::send::<_, spin_sdk::http::Response>(Request::new(
            Method::Get,
            format!("http://127.0.0.1:{port}/"),
        ))
        .await
        .map(|r| *r.status());
        format!(
            concat!(
                "{{\"read_root\":{},\"read_passwd\":{},\"write_tmp\":{},\"env_vars\":{},",
                "\"tcp_connect\":{},\"udp_bind\":{},\"dns_lookup\":{},\"outbound_http\":{},",
                "\"tcp_error\":{:?},\"outbound_error\":{:?}}}"
            ),
            allowed(&read_root),
            allowed(&read_passwd),
            allowed(&write_tmp),
            env_vars,
            allowed(&tcp),
            allowed(&udp),
            allowed(&lookup),
            allowed(&outbound),
            tcp.err()
                .map(|e| format!("{:?}", e.kind()))
                .unwrap_or_default(),
            outbound.err().map(|e| format!("{e:?}")).unwrap_or_default(),
        )
    }

    fn allowed<T, E>(result: &Result<T, E>) -> bool {
        result.is_ok()
    }
}
