//! Misbehaviour on demand, for the runner's isolation tests (`tests/tests/hostile.rs`).
//!
//! Each path does one bad thing. The "try" paths answer `200` with a JSON
//! report of what the sandbox allowed, so a test can assert it allowed nothing.

#[cfg(target_arch = "wasm32")]
mod component {
    use spin_sdk::http::{Method, Request, Response};
    use spin_sdk::http_component;

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
            "/misbehave/escape" => Response::new(200, escape_report().await),
            _ => Response::new(404, "no such misbehaviour"),
        }
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

    #[allow(unconditional_recursion)] // the point: overflow the stack
    fn recurse(depth: u64, pad: [u8; 1024]) -> u64 {
        std::hint::black_box(&pad);
        recurse(depth + 1, std::hint::black_box(pad)) + pad[0] as u64
    }

    /// What the sandbox let through; every field should say it was refused or empty.
    async fn escape_report() -> String {
        let read_root = std::fs::read_dir("/").map(|d| d.count());
        let read_passwd = std::fs::read("/etc/passwd").map(|b| b.len());
        let write_tmp = std::fs::write("/tmp/escaped", b"x");
        let env_vars = std::env::vars().count();
        let tcp = std::net::TcpStream::connect("127.0.0.1:22").map(|_| ());
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").map(|_| ());
        let lookup = std::net::ToSocketAddrs::to_socket_addrs("localhost:80").map(|a| a.count());
        let outbound = spin_sdk::http::send::<_, spin_sdk::http::Response>(Request::new(
            Method::Get,
            "http://127.0.0.1:1/",
        ))
        .await
        .map(|r| *r.status());
        format!(
            concat!(
                "{{\"read_root\":{},\"read_passwd\":{},\"write_tmp\":{},\"env_vars\":{},",
                "\"tcp_connect\":{},\"udp_bind\":{},\"dns_lookup\":{},\"outbound_http\":{}}}"
            ),
            allowed(&read_root),
            allowed(&read_passwd),
            allowed(&write_tmp),
            env_vars,
            allowed(&tcp),
            allowed(&udp),
            allowed(&lookup),
            allowed(&outbound),
        )
    }

    fn allowed<T, E>(result: &Result<T, E>) -> bool {
        result.is_ok()
    }
}
