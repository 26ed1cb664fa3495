//! Outbound MySQL as `spin up` serves it, against a real MySQL server this test
//! starts on 127.0.0.1 (MariaDB: a fresh data directory in a temporary
//! directory, user `spin` with a password): tests/apps/mysql calls both
//! interface versions, `fermyon:spin/mysql@2.0.0` (spin-sdk 5, sync) and
//! `spin:mysql/mysql@3.0.0` (spin-sdk 7, async, rows as a stream), with DDL,
//! parameters of every case, values of every column type Spin converts, NULLs,
//! a fresh session on each connection the pool hands out,
//! types it does not convert, errors, and addresses the manifest does not
//! allow. Skipped with a message when MariaDB's `mariadbd` and
//! `mariadb-install-db` (or MySQL's `mysqld` and `mysql_install_db`) are not
//! installed.

use e2e::Server;
use e2e::database::{assert_has, is_root, report, serve_app, step};
use e2e::service::{Recipe, Service};
use std::path::{Path, PathBuf};
use std::process::Command;

const APP: &str = "tests/apps/mysql";
const WASM: [&str; 2] = [
    "target/wasm32-wasip2/release/mysql_sdk5.wasm",
    "target/wasm32-wasip2/release/mysql_sdk7.wasm",
];

/// The program that makes a data directory (on `PATH`) and the server (on
/// `PATH`, or in /usr/sbin, where Debian puts it, off a user's `PATH`):
/// MariaDB's names, or MySQL's, which Debian's MariaDB also installs.
fn mysql_programs() -> Option<(PathBuf, PathBuf)> {
    let install = ["mariadb-install-db", "mysql_install_db"]
        .into_iter()
        .find_map(e2e::on_path)?;
    let server = ["mariadbd", "mysqld"].into_iter().find_map(|name| {
        e2e::on_path(name).or_else(|| {
            let sbin = Path::new("/usr/sbin").join(name);
            sbin.is_file().then_some(sbin)
        })
    })?;
    Some((server, install))
}

/// A MariaDB server on 127.0.0.1:`port`, database `spin`, user and password
/// `spin` (`e2e::service`: its own directory and port, stopped when dropped).
struct Mysql {
    service: Service,
    port: u16,
}

impl Mysql {
    fn start() -> Option<Mysql> {
        let Some((server, install)) = mysql_programs() else {
            eprintln!("skipped: MySQL not installed (Debian: apt-get install mariadb-server)");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        // MariaDB refuses to run as root unless told to.
        let user = is_root().then_some("--user=root");
        // Its temporary files in its own directory too: the default, /tmp, is
        // every MariaDB's (a parallel test's, a crashed run's leftovers).
        std::fs::create_dir(dir.path().join("tmp")).unwrap();
        let output = Command::new(&install)
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", dir.path().join("tmp").display()))
            .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
            .args(user)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}: {}{}",
            install.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        // Run once as the server starts, before it takes connections.
        std::fs::write(
            dir.path().join("init.sql"),
            "CREATE DATABASE spin;\n\
             CREATE USER 'spin'@'%' IDENTIFIED BY 'spin';\n\
             GRANT ALL ON spin.* TO 'spin'@'%';\n",
        )
        .unwrap();
        let command = |port: u16, dir: &Path| {
            let mut command = Command::new(&server);
            command
                .arg("--no-defaults")
                .arg(format!("--datadir={}", dir.join("data").display()))
                .arg(format!("--socket={}", dir.join("sock").display()))
                .arg(format!("--pid-file={}", dir.join("pid").display()))
                .arg(format!("--tmpdir={}", dir.join("tmp").display()))
                .arg(format!("--init-file={}", dir.join("init.sql").display()))
                .arg(format!("--port={port}"))
                .args(["--bind-address=127.0.0.1", "--skip-networking=0"])
                .args(["--skip-log-bin", "--innodb-buffer-pool-size=16M"])
                .args(user);
            command
        };
        let recipe = Recipe {
            name: "mariadb",
            command: &command,
            ready: &|port, _| greets(port),
        };
        let service = Service::start(&recipe, dir);
        let port = service.port;
        Some(Mysql { service, port })
    }
}

/// Whether a MySQL server on `port` greets a client: the protocol's first
/// packet, its handshake (protocol version 10), which it sends only once it
/// takes connections (its init file run).
fn greets(port: u16) -> bool {
    let Some(mut stream) = e2e::service::dial(port) else {
        return false;
    };
    let mut header = [0; 5];
    std::io::Read::read_exact(&mut stream, &mut header).is_ok() && header[4] == 10
}

fn rows(report: &[String]) -> Vec<&String> {
    report.iter().filter(|l| l.starts_with("row:")).collect()
}

#[test]
fn both_interface_versions_read_and_write_a_real_database() {
    let Some(mysql) = Mysql::start() else {
        return;
    };
    let state = tempfile::tempdir().unwrap();
    let server = serve_app(
        APP,
        &WASM,
        "SPIN_VARIABLE_MYSQL_PORT",
        mysql.port,
        state.path(),
    );
    version_2_0_types(&server);
    version_2_0_other_types(&server);
    version_2_0_errors(&server);
    // Twice: the second time, the pool has connections to hand out again.
    for _ in 0..2 {
        let session = report(&server, "/v2/session");
        assert_eq!(step(&session, "set"), "set: [[DbValue::Int64(42)]]");
        assert_eq!(step(&session, "next"), "next: [[DbValue::DbNull]]");
    }
    // The app was granted TCP, and its connections stay on TCP: none went
    // over the Unix socket the server names (`@@socket`, which mysql_async's
    // `prefer_socket` would reconnect through).
    if let Some(hosts) = connection_hosts(&mysql, "spin") {
        assert!(!hosts.is_empty(), "the pool keeps its connections");
        let over_tcp = |host: &String| {
            host.rsplit_once(':')
                .is_some_and(|(_, port)| port.parse::<u16>().is_ok())
        };
        assert!(hosts.iter().all(over_tcp), "{hosts:?}");
    }
    version_3_0_async(&server);
}

/// Where `user`'s connections to MariaDB come from (`localhost` for its Unix
/// socket; `<client host>:<port>` for TCP, the host `127.0.0.1` or the name
/// MariaDB looked it up as, `localhost`), asked through the socket with the
/// `mariadb` client; `None` without one.
fn connection_hosts(mysql: &Mysql, user: &str) -> Option<Vec<String>> {
    let Some(client) = ["mariadb", "mysql"].into_iter().find_map(e2e::on_path) else {
        eprintln!("not checked: no `mariadb` client to list connections with");
        return None;
    };
    let output = Command::new(client)
        .arg(format!(
            "--socket={}",
            mysql.service.dir().join("sock").display()
        ))
        .args(["--user=root", "--batch", "--skip-column-names", "--execute"])
        .arg(format!(
            "SELECT host FROM information_schema.processlist WHERE user = '{user}'"
        ))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect(),
    )
}

/// fermyon:spin/mysql@2.0.0: every parameter case in, every column type out.
fn version_2_0_types(server: &Server) {
    let v2 = report(server, "/v2");
    assert_eq!(step(&v2, "inserted"), "inserted: 2");
    assert_eq!(
        step(&v2, "columns"),
        "columns: id=DbDataType::Int32 flag=DbDataType::Int8 tiny=DbDataType::Int8 \
         small=DbDataType::Int16 medium=DbDataType::Int32 big=DbDataType::Int64 \
         utiny=DbDataType::Uint8 usmall=DbDataType::Uint16 uint=DbDataType::Uint32 \
         ubig=DbDataType::Uint64 share=DbDataType::Floating32 ratio=DbDataType::Floating64 \
         name=DbDataType::Str note=DbDataType::Str code=DbDataType::Str \
         data=DbDataType::Binary bytes=DbDataType::Binary"
    );
    let rows = rows(&v2);
    assert_eq!(rows.len(), 2, "{v2:#?}");
    assert_has(
        rows[0],
        &[
            "Int32(1)",
            // BOOLEAN is TINYINT(1): an int8, as in Spin.
            "Int8(1)",
            "Int8(-8)",
            "Int16(-300)",
            "Int32(-70000)",
            "Int64(1099511627776)",
            "Uint8(255)",
            "Uint16(65535)",
            "Uint32(4000000000)",
            "Uint64(18446744073709551615)",
            "Floating32(1.5)",
            "Floating64(0.25)",
            "Str(\"ada\")",
            "Str(\"hé\\nthere\")",
            "Str(\"ab\")",
            "Binary([0, 1, 255])",
            "Binary([7, 7, 7])",
        ],
    );
    assert_eq!(rows[1].matches("DbNull").count(), 16, "{}", rows[1]);
    assert_has(step(&v2, "by parameter"), &["Int32(1)"]);
}

/// Column types no 2.0.0 case holds: `other`; a NULL in one reads, a value fails.
fn version_2_0_other_types(server: &Server) {
    let other = report(server, "/v2/other");
    assert_has(
        step(&other, "columns"),
        &[
            "id=DbDataType::Int32",
            "amount=DbDataType::Other",
            "day=DbDataType::Other",
            "at=DbDataType::Other",
        ],
    );
    assert_eq!(rows(&other).len(), 1, "{other:#?}");
    assert_eq!(rows(&other)[0].matches("DbNull").count(), 4);
    assert_has(
        step(&other, "decimal"),
        &[
            "ValueConversionFailed",
            // The report's debug form escapes the quotes of Spin's message.
            r#"Cannot convert value Bytes(\"12.50\") in column amount data type DbDataType::Other"#,
        ],
    );
    assert_has(
        step(&other, "date"),
        &[
            "ValueConversionFailed",
            r#"Cannot convert value Date(\"'2024-02-29'\") in column day data type DbDataType::Other"#,
        ],
    );
}

/// Errors the server and the driver report: `query-failed` with mysql_async's
/// debug form of the error, as Spin reports them. The connection survives the
/// server's errors; mysql_async closes it on its own (a parameter count
/// mismatch), and the pool does not hand it out again.
fn version_2_0_errors(server: &Server) {
    let errors = report(server, "/v2/errors");
    assert_has(
        step(&errors, "missing table"),
        &[
            "QueryFailed",
            "Server(ServerError { code: 1146",
            "Table 'spin.no_such_table' doesn't exist",
        ],
    );
    assert_has(
        step(&errors, "bad sql"),
        &[
            "QueryFailed",
            "code: 1064",
            "You have an error in your SQL syntax",
        ],
    );
    assert_has(
        step(&errors, "out of range"),
        &["QueryFailed", "Out of range value for column 'n'"],
    );
    assert_has(step(&errors, "after"), &["Int64(0)"]);
    assert_has(
        step(&errors, "parameter count"),
        &[
            "QueryFailed",
            "Driver(StmtParamsMismatch { required: 1, supplied: 0 })",
        ],
    );
    assert_has(
        step(&errors, "closed"),
        &["QueryFailed", "ConnectionClosed"],
    );
    assert_has(step(&errors, "reopened"), &["Ok(", "Int32(2)"]);
}

/// spin:mysql/mysql@3.0.0's async functions: rows through the stream, errors
/// on the future or, as in Spin 4.0.2, for a statement that fails to run,
/// `other("async error: channel closed")`.
fn version_3_0_async(server: &Server) {
    let streamed = report(server, "/v3/query");
    assert_eq!(step(&streamed, "inserted"), "inserted: 5");
    assert_eq!(
        step(&streamed, "columns"),
        "columns: n=DbDataType::Int64 label=DbDataType::Str ratio=DbDataType::Floating64 \
         flag=DbDataType::Int8 big=DbDataType::Uint64"
    );
    let rows = rows(&streamed);
    assert_eq!(rows.len(), 3, "{streamed:#?}");
    assert_has(
        rows[0],
        &[
            "Int64(3)",
            "Str(\"row 3\")",
            "Floating64(3.5)",
            "Int8(0)",
            "Uint64(18446744073709551612)",
        ],
    );
    assert_has(rows[2], &["Int64(5)", "Str(\"row 5\")", "Floating64(5.5)"]);
    assert_eq!(step(&streamed, "result"), "result: Ok(())");
    assert_eq!(step(&streamed, "empty columns"), "empty columns: 1");
    assert_eq!(step(&streamed, "empty rows"), "empty rows: 0");

    let partial = report(server, "/v3/partial");
    assert_has(step(&partial, "columns"), &["day=DbDataType::Other"]);
    let rows = self::rows(&partial);
    assert_eq!(rows.len(), 1, "{partial:#?}");
    assert_has(rows[0], &["DbNull"]);
    assert_has(
        step(&partial, "result"),
        &["ValueConversionFailed", "Cannot convert value Date("],
    );

    let errors = report(server, "/v3/errors");
    assert_has(
        step(&errors, "query"),
        &["Other", "async error: channel closed"],
    );
    assert_has(
        step(&errors, "execute"),
        &["QueryFailed", "no_such_table", "doesn't exist"],
    );
}

#[test]
fn addresses_the_manifest_does_not_allow_are_refused_as_spin_refuses_them() {
    let Some(mysql) = Mysql::start() else {
        return;
    };
    let state = tempfile::tempdir().unwrap();
    let server = serve_app(
        APP,
        &WASM,
        "SPIN_VARIABLE_MYSQL_PORT",
        mysql.port,
        state.path(),
    );
    let denied = report(&server, "/v2/denied");
    assert_has(
        step(&denied, "unlisted"),
        &[
            "ConnectionFailed",
            "address mysql://spin:spin@127.0.0.1:1/spin is not permitted",
        ],
    );
    let password = step(&denied, "wrong password");
    assert_has(
        password,
        &[
            "ConnectionFailed",
            "Access denied for user 'spin'",
            "Caused by:",
        ],
    );
    // anyhow's form, as Spin's, but never the host's backtrace in it.
    assert!(!password.contains("backtrace"), "{password}");
    assert_has(step(&denied, "tls"), &["ConnectionFailed", "without TLS"]);
    let denied = report(&server, "/v3/denied");
    assert_has(
        step(&denied, "denied"),
        &[
            "ConnectionFailed",
            "address mysql://spin@10.9.8.7/spin is not permitted",
        ],
    );
}
