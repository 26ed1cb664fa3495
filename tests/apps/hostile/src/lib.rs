//! A component written as a hostile app author would write it: granted
//! `sqlite_databases = ["default"]`, `key_value_stores = ["default"]`, a
//! `files` mount and a short `allowed_outbound_hosts` list (what
//! tests/tests/sandbox.rs writes around it), it attacks each grant from the
//! inside. Each route tries every spelling of one attack and answers `200` with
//! `{"tries": [{"try", "escaped", "outcome"}]}`: `escaped` is whether the host
//! let it through. The test asserts that none did, and checks from outside that
//! nothing reached its forbidden listeners or files.
//!
//! - `/sqlite/attach?path=P&kv=K`: `ATTACH`/`VACUUM INTO` of `P` (outside the
//!   state directory) and of `K` (the key-value store's file), every spelling;
//! - `/sqlite/functions`: extension loading, `fts3_tokenizer`, the process-wide
//!   pragmas;
//! - `/sqlite/memory`: values built inside SQLite past every limit;
//! - `/sqlite/runaway`: a query that never ends (the test's request deadline
//!   cuts it; the host must interrupt it);
//! - `/files`: paths out of the mount, writes, links;
//! - `/http?granted=G&forbidden=F`: every spelling of a request that is not
//!   `http://127.0.0.1:G`, and the redirect `G` answers;
//! - `/sockets?granted=G&forbidden=F&udp=U`: connect, bind, listen, send-to;
//! - `/stores?granted=G&forbidden=F&socket=S`: Redis, MQTT, PostgreSQL and
//!   MySQL addresses naming a forbidden port, a Unix socket `S` or several hosts;
//! - `/addresses?granted=G&forbidden=F`: addresses the allow-list and the
//!   client crate would read apart (component/addresses.rs);
//! - `/key-value`, `/variables`, `/env`: stores, variables and environment not
//!   granted; `/stdout?mib=N`: `N` MiB written to stdout and stderr;
//! - `/hoard/...`: as much of the host's memory and descriptors as it lets
//!   the component hold (`component/hoard.rs`);
//! - `/ok`: answers `200` (the host still serves).

// `#[http_component]` expands to the component's exported ABI (`export_name`, unsafe
// blocks), which wit-bindgen generates from the WIT and the canonical ABI.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    mod hoard;

    use serde_json::{Value as Json, json};
    use spin_sdk::http::{Method, Request, Response};
    use spin_sdk::http_component;
    use spin_sdk::sqlite::{Connection, Value};

    mod addresses;

    /// What came of the tries of one attack.
    #[derive(Default)]
    struct Report(Vec<Json>);

    impl Report {
        fn record<T: std::fmt::Debug, E: std::fmt::Debug>(
            &mut self,
            attempt: &str,
            result: &Result<T, E>,
        ) {
            let outcome = match result {
                Ok(value) => format!("ok: {value:?}"),
                Err(error) => format!("refused: {error:?}"),
            };
            let outcome: String = outcome.chars().take(300).collect();
            self.0
                .push(json!({"try": attempt, "escaped": result.is_ok(), "outcome": outcome}));
        }

        fn answer(self) -> Response {
            Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .body(json!({ "tries": self.0 }).to_string())
                .build()
        }
    }

    #[http_component]
    async fn handle(req: Request) -> Response {
        let query = Query(req.query().to_string());
        match req.path() {
            "/ok" => Response::new(200, "still serving"),
            "/sqlite/attach" => sqlite_attach(&query.get("path"), &query.get("kv")).answer(),
            "/sqlite/functions" => sqlite_functions().answer(),
            "/sqlite/memory" => sqlite_memory().answer(),
            "/sqlite/runaway" => sqlite_runaway().answer(),
            "/files" => files().answer(),
            "/http" => http(&query.get("granted"), &query.get("forbidden"))
                .await
                .answer(),
            "/sockets" => sockets(&query).answer(),
            "/stores" => stores(&query).answer(),
            "/addresses" => addresses::addresses(&query).await.answer(),
            "/key-value" => key_value().answer(),
            "/variables" => variables().answer(),
            "/env" => environment(),
            "/stdout" => flood(query.get("mib").parse().unwrap_or(0)),
            path => match hoard::route(path, &query) {
                Some(report) => report.answer(),
                None => Response::new(404, "no such attack"),
            },
        }
    }

    /// The request's query parameters (`a=b&c=d`; values taken as written).
    struct Query(String);

    impl Query {
        fn get(&self, name: &str) -> String {
            self.0
                .split('&')
                .filter_map(|pair| pair.split_once('='))
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.to_string())
                .unwrap_or_default()
        }
    }

    fn text(value: &str) -> Value {
        Value::Text(value.to_string())
    }

    /// Runs `sql` with `parameters` on the default database and records it.
    fn sql(report: &mut Report, db: &Connection, sql: &str, parameters: &[Value]) {
        let result = db.execute(sql, parameters).map(|r| r.rows.len());
        report.record(sql, &result);
    }

    fn sqlite_attach(path: &str, kv: &str) -> Report {
        let mut report = Report::default();
        let db = match Connection::open_default() {
            Ok(db) => db,
            Err(error) => {
                report.record::<(), _>("open default", &Err(error));
                return report;
            }
        };
        for target in [path, kv] {
            let literal = target.replace('\'', "''");
            for statement in [
                format!("ATTACH DATABASE '{literal}' AS x"),
                format!("ATTACH DATABASE 'file:{literal}?mode=rwc' AS x"),
                format!("ATTACH DATABASE 'file://localhost{literal}' AS x"),
                format!("VACUUM INTO '{literal}'"),
            ] {
                sql(&mut report, &db, &statement, &[]);
            }
            for statement in [
                "ATTACH DATABASE ?1 AS x",
                "ATTACH DATABASE ?1 || '' AS x",
                "ATTACH DATABASE lower(?1) AS x",
                "ATTACH DATABASE (SELECT ?1) AS x",
                "ATTACH DATABASE 'file:' || ?1 || '?mode=rwc' AS x",
                "ATTACH ?1 AS x",
                "VACUUM INTO ?1",
                "VACUUM INTO ?1 || ''",
            ] {
                sql(&mut report, &db, statement, &[text(target)]);
            }
        }
        // Reading another store through the connection's own schema, if an
        // attach slipped through.
        sql(&mut report, &db, "SELECT * FROM x.spin_key_value", &[]);
        report
    }

    fn sqlite_functions() -> Report {
        let mut report = Report::default();
        let Ok(db) = Connection::open_default() else {
            return report;
        };
        for statement in [
            "SELECT load_extension('/lib/x86_64-linux-gnu/libc.so.6')",
            "SELECT load_extension('libc.so.6', 'getpid')",
            "SELECT fts3_tokenizer('simple')",
            "SELECT fts3_tokenizer('evil', x'4141414141414141')",
            "PRAGMA hard_heap_limit = 0",
            "PRAGMA soft_heap_limit = 0",
            "PRAGMA temp_store_directory = '/tmp'",
            "PRAGMA data_store_directory = '/tmp'",
        ] {
            sql(&mut report, &db, statement, &[]);
        }
        // The pragma is accepted; defensive mode keeps the schema read-only.
        let _ = db.execute("PRAGMA writable_schema = ON", &[]);
        sql(
            &mut report,
            &db,
            "INSERT INTO sqlite_schema VALUES ('table', 't2', 't2', 0, 'CREATE TABLE t2(x)')",
            &[],
        );
        report
    }

    fn sqlite_memory() -> Report {
        let mut report = Report::default();
        let Ok(db) = Connection::open_default() else {
            return report;
        };
        for statement in [
            "SELECT zeroblob(999000000)",
            "SELECT length(zeroblob(999000000))",
            "SELECT length(randomblob(999000000))",
            "SELECT length(replace(hex(zeroblob(100000000)), '0', '00'))",
            "WITH RECURSIVE c(x, s) AS (SELECT 1, hex(zeroblob(1000000)) UNION ALL \
             SELECT x + 1, s FROM c WHERE x < 80) SELECT length(group_concat(s)) FROM c",
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 150) \
             SELECT length(group_concat(b)) FROM (SELECT zeroblob(1000000) AS b FROM c \
             ORDER BY random())",
        ] {
            sql(&mut report, &db, statement, &[]);
        }
        report
    }

    fn sqlite_runaway() -> Report {
        let mut report = Report::default();
        let Ok(db) = Connection::open_default() else {
            return report;
        };
        let statement = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) \
                         SELECT count(*) FROM c";
        sql(&mut report, &db, statement, &[]);
        report
    }

    fn files() -> Report {
        let mut report = Report::default();
        for path in [
            "/etc/passwd",
            "/../etc/passwd",
            "/assets/../../etc/passwd",
            "../../../../etc/passwd",
            "/proc/self/environ",
        ] {
            report.record(
                &format!("read {path}"),
                &std::fs::read(path).map(|b| b.len()),
            );
        }
        let listing = std::fs::read_dir("/").map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| name != "assets")
                .collect::<Vec<_>>()
        });
        // Escaped only if the root holds more than the mount.
        let more = listing.map_err(|e| e.to_string()).and_then(|names| {
            if names.is_empty() {
                Err("nothing but the mount".to_string())
            } else {
                Ok(names)
            }
        });
        report.record("list / beyond the mount", &more);
        report.record("write", &std::fs::write("/assets/new.txt", b"x"));
        report.record("create a directory", &std::fs::create_dir("/made"));
        report.record("remove", &std::fs::remove_file("/assets/a.txt"));
        report.record("rename", &std::fs::rename("/assets/a.txt", "/assets/b.txt"));
        report.record(
            "hard link",
            &std::fs::hard_link("/assets/a.txt", "/assets/hard.txt"),
        );
        // Through the preopened directory itself, as WASI spells it.
        for (dir, name) in wasip2::filesystem::preopens::get_directories() {
            for (target, link) in [("/etc/passwd", "assets/out"), ("../../..", "assets/up")] {
                report.record(
                    &format!("symbolic link {link} -> {target} in {name}"),
                    &dir.symlink_at(target, link),
                );
            }
            report.record(
                &format!("hard link in {name}"),
                &dir.link_at(
                    wasip2::filesystem::types::PathFlags::empty(),
                    "assets/a.txt",
                    &dir,
                    "assets/hard2.txt",
                ),
            );
        }
        report
    }

    async fn http(granted: &str, forbidden: &str) -> Report {
        let mut report = Report::default();
        let urls = [
            format!("http://127.0.0.1:{forbidden}/"),
            format!("http://localhost:{granted}/"),
            format!("http://[::1]:{granted}/"),
            format!("http://[::ffff:127.0.0.1]:{forbidden}/"),
            format!("http://[::ffff:7f00:1]:{forbidden}/"),
            format!("http://2130706433:{forbidden}/"),
            format!("http://0x7f.1:{forbidden}/"),
            format!("http://127.1:{forbidden}/"),
            format!("http://127.0.0.1.:{forbidden}/"),
            format!("https://127.0.0.1:{granted}/"),
            format!("http://127.0.0.1:{granted}@127.0.0.1:{forbidden}/"),
            format!("http://127.0.0.1:{forbidden}#@127.0.0.1:{granted}/"),
            format!("http://self.alt:{forbidden}/"),
            "/relative".to_string(),
        ];
        for url in &urls {
            let sent = spin_sdk::http::send::<_, Response>(Request::new(Method::Get, url)).await;
            report.record(&format!("GET {url}"), &sent.map(|r| *r.status()));
        }
        // Another scheme to the granted address, through wasi:http itself (the
        // SDK would send any scheme but https as http).
        report.record(
            &format!("GET ftp://127.0.0.1:{granted}/"),
            &other_scheme(granted),
        );
        // The Host header names the granted address; the URL, the forbidden one.
        let forged = Request::builder()
            .method(Method::Get)
            .uri(format!("http://127.0.0.1:{forbidden}/"))
            .header("host", format!("127.0.0.1:{granted}"))
            .build();
        let sent = spin_sdk::http::send::<_, Response>(forged).await;
        report.record(
            "GET forbidden with a granted Host",
            &sent.map(|r| *r.status()),
        );
        // The granted server redirects to the forbidden one: the host follows
        // nothing, and the guest's own follow-up is checked again.
        let redirected = spin_sdk::http::send::<_, Response>(Request::new(
            Method::Get,
            format!("http://127.0.0.1:{granted}/"),
        ))
        .await;
        let location = redirected.ok().and_then(|r| {
            r.header("location")
                .and_then(|v| v.as_str().map(str::to_string))
        });
        if let Some(location) = location {
            let sent =
                spin_sdk::http::send::<_, Response>(Request::new(Method::Get, &location)).await;
            report.record(&format!("follow to {location}"), &sent.map(|r| *r.status()));
        }
        report
    }

    /// A GET of `ftp://127.0.0.1:<granted>/` as a raw `wasi:http` request.
    fn other_scheme(granted: &str) -> Result<u16, String> {
        use wasip2::http::outgoing_handler::handle;
        use wasip2::http::types::{Fields, OutgoingRequest, Scheme};
        let request = OutgoingRequest::new(Fields::new());
        request
            .set_scheme(Some(&Scheme::Other("ftp".to_string())))
            .map_err(|()| "the scheme was refused".to_string())?;
        request
            .set_authority(Some(&format!("127.0.0.1:{granted}")))
            .map_err(|()| "the authority was refused".to_string())?;
        let response = handle(request, None).map_err(|e| format!("{e:?}"))?;
        response.subscribe().block();
        match response.get() {
            Some(Ok(Ok(response))) => Ok(response.status()),
            Some(Ok(Err(error))) => Err(format!("{error:?}")),
            other => Err(format!("{other:?}")),
        }
    }

    fn sockets(query: &Query) -> Report {
        use std::net::{TcpListener, TcpStream, UdpSocket};
        let mut report = Report::default();
        let (forbidden, udp) = (query.get("forbidden"), query.get("udp"));
        for address in [
            format!("127.0.0.1:{forbidden}"),
            format!("[::1]:{forbidden}"),
            format!("[::ffff:127.0.0.1]:{forbidden}"),
            format!("0.0.0.0:{forbidden}"),
        ] {
            report.record(
                &format!("connect {address}"),
                &TcpStream::connect(&address).map(drop),
            );
        }
        report.record(
            "listen 127.0.0.1:0",
            &TcpListener::bind("127.0.0.1:0").map(drop),
        );
        report.record(
            "listen 0.0.0.0:0",
            &TcpListener::bind("0.0.0.0:0").map(drop),
        );
        report.record(
            &format!("bind udp 127.0.0.1:{udp}"),
            &UdpSocket::bind(format!("127.0.0.1:{udp}")).map(drop),
        );
        for address in [
            format!("127.0.0.1:{udp}"),
            format!("[::ffff:127.0.0.1]:{udp}"),
        ] {
            let any = if address.starts_with('[') {
                "[::]:0"
            } else {
                "0.0.0.0:0"
            };
            let sent = UdpSocket::bind(any).and_then(|socket| socket.send_to(b"escape", &address));
            report.record(&format!("send to {address}"), &sent);
        }
        report.record(
            "look up localhost",
            &std::net::ToSocketAddrs::to_socket_addrs("localhost:80").map(Iterator::count),
        );
        report
    }

    fn stores(query: &Query) -> Report {
        let mut report = Report::default();
        let (granted, forbidden) = (query.get("granted"), query.get("forbidden"));
        let socket = query.get("socket");
        for address in [
            format!("redis://127.0.0.1:{forbidden}"),
            format!("redis://localhost:{granted}"),
            format!("redis+unix://{socket}"),
            format!("unix://{socket}"),
            format!("redis://127.0.0.1:{granted}@127.0.0.1:{forbidden}"),
        ] {
            let opened = spin_sdk::redis::Connection::open(&address).and_then(|c| c.get("k"));
            report.record(&format!("redis {address}"), &opened);
        }
        for address in [
            format!("mqtt://127.0.0.1:{forbidden}"),
            format!("mqtt://[::ffff:127.0.0.1]:{forbidden}"),
        ] {
            let opened = spin_sdk::mqtt::Connection::open(&address, "u", "p", 5).map(drop);
            report.record(&format!("mqtt {address}"), &opened);
        }
        for address in [
            format!("host=127.0.0.1 port={forbidden} user=x dbname=x"),
            format!("postgres://x@127.0.0.1:{granted},127.0.0.1:{forbidden}/x"),
            format!("host=127.0.0.1,127.0.0.1 port={granted},{forbidden} user=x"),
            format!("host=localhost hostaddr=127.0.0.1 port={forbidden} user=x"),
            format!("host={} port={granted} user=x", parent(&socket)),
            format!(
                "postgres://x@{}:{granted}/x",
                parent(&socket).replace('/', "%2F")
            ),
        ] {
            let opened = spin_sdk::pg::Connection::open(&address).map(drop);
            report.record(&format!("postgres {address}"), &opened);
        }
        for address in [
            format!("mysql://x@127.0.0.1:{forbidden}/x"),
            format!("mysql://x@127.0.0.1:{granted}/x?socket={socket}"),
            format!("mysql://x@127.0.0.1:{granted}/x?socket={socket}&prefer_socket=true"),
        ] {
            let opened = spin_sdk::mysql::Connection::open(&address).map(drop);
            report.record(&format!("mysql {address}"), &opened);
        }
        report
    }

    /// The directory holding `path`.
    fn parent(path: &str) -> String {
        path.rsplit_once('/')
            .map_or("/", |(dir, _)| dir)
            .to_string()
    }

    fn key_value() -> Report {
        use spin_sdk::key_value::Store;
        let mut report = Report::default();
        for label in ["other", "", "DEFAULT", "default ", "default/../other", "*"] {
            report.record(
                &format!("open store {label:?}"),
                &Store::open(label).map(drop),
            );
        }
        // A value past SQLite's length limit, if this instance can hold one.
        let mut value = Vec::new();
        if value.try_reserve_exact((128 << 20) + 1).is_ok() {
            value.resize((128 << 20) + 1, b'v');
            let set = Store::open_default().and_then(|store| store.set("big", &value));
            report.record("set a value past the limit", &set);
        }
        report
    }

    fn variables() -> Report {
        let mut report = Report::default();
        for name in [
            "secret",
            "SECRET",
            "unmapped",
            "granted ",
            "spin_variable",
            "../granted",
        ] {
            report.record(
                &format!("variable {name:?}"),
                &spin_sdk::variables::get(name),
            );
        }
        report
    }

    /// The environment as the component sees it (the test compares it with
    /// the manifest's `environment`).
    fn environment() -> Response {
        let env: serde_json::Map<String, Json> = std::env::vars()
            .map(|(key, value)| (key, Json::String(value)))
            .collect();
        Response::new(200, Json::Object(env).to_string())
    }

    /// Writes `mib` MiB to stdout and to stderr, a MiB at a time.
    fn flood(mib: usize) -> Response {
        use std::io::Write;
        let block = vec![b'o'; 1 << 20];
        for _ in 0..mib {
            let _ = std::io::stdout().write_all(&block);
            let _ = std::io::stderr().write_all(&block);
        }
        Response::new(200, format!("wrote {mib} MiB to each"))
    }
}
