//! Outbound PostgreSQL as `spin up` serves it, against a real PostgreSQL this
//! test starts on 127.0.0.1 (a fresh cluster in a temporary directory, password
//! authentication): tests/apps/postgres calls every interface version,
//! `fermyon:spin/postgres@2.0.0` and `spin:postgres/postgres@3.0.0` and `@4.0.0`
//! (spin-sdk 5, sync) and `@4.2.0`'s async functions (spin-sdk 6), with DDL,
//! parameters of each type family, values PostgreSQL wrote, NULLs, errors, and
//! addresses the manifest does not allow. Skipped with a message when
//! PostgreSQL's `initdb`, `postgres` and `pg_isready` are not installed.

use e2e::Server;
use e2e::database::{assert_has, is_root, report, serve_app, step};
use e2e::service::{Recipe, Service, system_user};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const APP: &str = "tests/apps/postgres";
const WASM: [&str; 2] = [
    "target/wasm32-wasip2/release/postgres_sdk5.wasm",
    "target/wasm32-wasip2/release/postgres_sdk6.wasm",
];

/// Where `initdb`, `postgres` and `pg_isready` are: on `PATH`, or Debian's versioned directory.
fn postgres_bin() -> Option<PathBuf> {
    if let Some(initdb) = e2e::on_path("initdb") {
        let dir = std::fs::canonicalize(initdb).ok()?.parent()?.to_path_buf();
        if dir.join("postgres").is_file() && dir.join("pg_isready").is_file() {
            return Some(dir);
        }
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| {
            ["initdb", "postgres", "pg_isready"]
                .iter()
                .all(|p| bin.join(p).is_file())
        })
        .collect();
    versions.sort();
    versions.pop()
}

/// A PostgreSQL cluster on 127.0.0.1:`port`, user and password `postgres`
/// (`e2e::service`: its own directory and port, stopped when dropped).
struct Postgres {
    _service: Service,
    port: u16,
}

impl Postgres {
    fn start() -> Option<Postgres> {
        let Some(bin) = postgres_bin() else {
            eprintln!("skipped: PostgreSQL not installed (Debian: apt-get install postgresql)");
            return None;
        };
        // PostgreSQL refuses to run as root: as root, the cluster is the `postgres` user's.
        let user = if is_root() {
            Some(system_user("postgres").expect("Debian's PostgreSQL has a postgres user"))
        } else {
            None
        };
        let dir = tempfile::tempdir().unwrap();
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
        }
        let as_user = |program: &str| {
            let mut command = Command::new(bin.join(program));
            if let Some((uid, gid)) = user {
                command.uid(uid).gid(gid);
            }
            command
        };
        let password = dir.path().join("password");
        std::fs::write(&password, "postgres\n").unwrap();
        let data = dir.path().join("data");
        let initdb = as_user("initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=md5", "--pwfile"])
            .arg(&password)
            .output()
            .unwrap();
        assert!(
            initdb.status.success(),
            "initdb: {}{}",
            String::from_utf8_lossy(&initdb.stdout),
            String::from_utf8_lossy(&initdb.stderr)
        );
        // The server in the foreground (not pg_ctl's daemon), so that it is
        // this test's child and stops with it.
        let command = |port: u16, dir: &Path| {
            let mut command = as_user("postgres");
            command
                .arg("-D")
                .arg(dir.join("data"))
                .args(["-p", &port.to_string(), "-h", "127.0.0.1", "-k"])
                .arg(dir);
            command
        };
        // Ready when it takes connections, in PostgreSQL's own words.
        let ready = |port: u16, _: &Path| {
            Command::new(bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string(), "-t", "2"])
                .status()
                .is_ok_and(|status| status.success())
        };
        let recipe = Recipe {
            name: "postgres",
            command: &command,
            ready: &ready,
        };
        let service = Service::start(&recipe, dir);
        let port = service.port;
        Some(Postgres {
            _service: service,
            port,
        })
    }
}

#[test]
fn every_interface_version_reads_and_writes_a_real_database() {
    let Some(postgres) = Postgres::start() else {
        return;
    };
    let state = tempfile::tempdir().unwrap();
    let server = serve_app(
        APP,
        &WASM,
        "SPIN_VARIABLE_PG_PORT",
        postgres.port,
        state.path(),
    );
    version_2_0(&server);
    version_3_0(&server);
    version_4_0(&server);
    version_4_2_async(&server);
}

/// fermyon:spin/postgres@2.0.0.
fn version_2_0(server: &Server) {
    let v2 = report(server, "/v2");
    assert_eq!(step(&v2, "inserted"), "inserted: 2");
    assert_has(
        step(&v2, "unsigned"),
        &[
            "ValueConversionFailed",
            "Postgres does not support unsigned integers",
        ],
    );
    assert_has(
        step(&v2, "columns"),
        &[
            "id=", "Int32", "flag=", "Boolean", "big=", "Int64", "data=", "Binary", "code=",
        ],
    );
    let rows: Vec<&String> = v2.iter().filter(|l| l.starts_with("row:")).collect();
    assert_eq!(rows.len(), 2, "{v2:#?}");
    assert_has(
        rows[0],
        &[
            "Int32(1)",
            "Boolean(true)",
            "Int16(-3)",
            "Int64(1099511627776)",
            "Floating64(0.25)",
            "Floating32(1.5)",
            "Str(\"ada\")",
            "Binary([0, 1, 255])",
            "DbNull",
        ],
    );
    assert_eq!(rows[1].matches("DbNull").count(), 8, "{}", rows[1]);
    assert_has(
        step(&v2, "missing table"),
        &["QueryFailed", "no_such_table", "does not exist"],
    );
}

/// spin:postgres/postgres@3.0.0, opened with a URL.
fn version_3_0(server: &Server) {
    let v3 = report(server, "/v3");
    assert_eq!(step(&v3, "inserted"), "inserted: 2");
    assert_has(
        step(&v3, "columns"),
        &[
            "day=", "Date", "at=", "Time", "local=", "Datetime", "tag=", "Other",
        ],
    );
    let rows: Vec<&String> = v3.iter().filter(|l| l.starts_with("row:")).collect();
    assert_has(
        rows[0],
        &[
            "Date((2024, 2, 29))",
            "Time((23, 59, 58, 5000))",
            "Datetime((1999, 12, 31, 23, 59, 59, 0))",
            // `timestamp(86400)` is seconds since the epoch, in UTC.
            "Datetime((1970, 1, 2, 0, 0, 0, 0))",
            "DbNull",
        ],
    );
    assert_has(
        rows[1],
        &[
            "Date((2525, 12, 25))",
            "Time((4, 5, 6, 789000000))",
            "Datetime((1989, 11, 24, 1, 2, 3, 0))",
            "Datetime((1999, 12, 31, 22, 0, 0, 0))",
            // uuid has no case in 3.0.0.
            "Unsupported",
        ],
    );
}

/// spin:postgres/postgres@4.0.0, sync.
fn version_4_0(server: &Server) {
    let v4 = report(server, "/v4");
    assert_eq!(step(&v4, "inserted"), "inserted: 1");
    assert_has(
        step(&v4, "columns"),
        &[
            "tag=",
            "Uuid",
            "doc=",
            "Jsonb",
            "amount=",
            "Decimal",
            "r4=",
            "RangeInt32",
            "r8=",
            "RangeInt64",
            "rn=",
            "RangeDecimal",
            "a4=",
            "ArrayInt32",
            "a8=",
            "ArrayInt64",
            "an=",
            "ArrayDecimal",
            "astr=",
            "ArrayStr",
            "span=",
            "Interval",
            "addr=",
            "Other(\"inet\")",
        ],
    );
    let rows: Vec<&String> = v4.iter().filter(|l| l.starts_with("row:")).collect();
    assert_eq!(rows.len(), 3, "{v4:#?}");
    assert_has(
        rows[0],
        &[
            "Uuid(\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\")",
            // jsonb comes back as PostgreSQL normalised it: keys sorted by length, then bytes.
            &format!("Jsonb({:?})", br#"{"a":null,"b":[1,2]}"#.to_vec()),
            "Decimal(\"123456789.123456789\")",
            // Integer ranges come back normalised to [lower, upper).
            "RangeInt32((Some((2, RangeBoundKind::Inclusive)), Some((41, RangeBoundKind::Exclusive))))",
            "RangeInt64((None, Some((1099511627776, RangeBoundKind::Exclusive))))",
            "RangeDecimal((Some((\"0.5\", RangeBoundKind::Inclusive)), None))",
            "ArrayInt32([Some(1), None, Some(-3)])",
            "ArrayInt64([Some(1099511627776)])",
            "ArrayDecimal([Some(\"1.25\"), None])",
            "ArrayStr([Some(\"hello\"), None, Some(\"mum\")])",
            "Interval { micros: 14706700000, days: 3, months: 14 }",
        ],
    );
    assert_has(
        rows[1],
        &[
            &format!("Jsonb({:?})", b"[true]".to_vec()),
            "Decimal(\"0.001\")",
            // An empty range has no bounds to give.
            "RangeInt32((None, None))",
            "RangeDecimal((None, Some((\"100\", RangeBoundKind::Exclusive))))",
            "ArrayInt32([])",
            "ArrayStr([Some(\"x y\")])",
            "Interval { micros: 14706700000, days: 3, months: 14 }",
            // inet, a type no case holds: PostgreSQL's binary form (family, bits, is_cidr, length, address).
            "Unsupported([2, 32, 0, 4, 10, 1, 2, 3])",
        ],
    );
    assert_eq!(rows[2].matches("DbNull").count(), 12, "{}", rows[2]);
    // `execute` reports a parameter it cannot convert as a conversion failure (Spin's choice).
    assert_has(
        step(&v4, "bad uuid"),
        &["ValueConversionFailed", "invalid UUID nope"],
    );
    assert_eq!(step(&v4, "wrong type"), "wrong type: true");
}

/// spin:postgres/postgres@4.2.0's async functions, its builder and its structured errors.
fn version_4_2_async(server: &Server) {
    let streamed = report(server, "/async/query");
    assert_eq!(step(&streamed, "inserted"), "inserted: 5");
    assert_has(
        step(&streamed, "columns"),
        &["n=", "Int64", "label=", "Str", "amount=", "Decimal"],
    );
    let rows: Vec<&String> = streamed.iter().filter(|l| l.starts_with("row:")).collect();
    assert_eq!(rows.len(), 3, "{streamed:#?}");
    assert_has(rows[0], &["Int64(3)", "Str(\"row 3\")", "Decimal(\"3.5\")"]);
    assert_has(rows[2], &["Int64(5)", "Str(\"row 5\")", "Decimal(\"5.5\")"]);
    assert_eq!(step(&streamed, "result"), "result: Ok(())");
    assert_eq!(step(&streamed, "empty columns"), "empty columns: 1");
    assert_eq!(step(&streamed, "empty rows"), "empty rows: 0");
    assert_eq!(step(&streamed, "partial rows"), "partial rows: 2");
    assert_eq!(step(&streamed, "partial result"), "partial result: true");

    let built = report(server, "/async/builder");
    assert_has(step(&built, "with root"), &["Other", "without TLS"]);
    assert_has(step(&built, "built"), &["Int32(42)"]);

    let structured = report(server, "/async/error");
    assert_eq!(step(&structured, "code"), "code: 42P01");
    assert_eq!(step(&structured, "severity"), "severity: ERROR");
    assert_has(
        step(&structured, "message"),
        &["no_such_table", "does not exist"],
    );
}

#[test]
fn addresses_the_manifest_does_not_allow_are_refused_as_spin_refuses_them() {
    let Some(postgres) = Postgres::start() else {
        return;
    };
    let state = tempfile::tempdir().unwrap();
    let server = serve_app(
        APP,
        &WASM,
        "SPIN_VARIABLE_PG_PORT",
        postgres.port,
        state.path(),
    );
    let denied = report(&server, "/denied");
    assert_has(
        step(&denied, "v2"),
        &[
            "ConnectionFailed",
            "address postgres://127.0.0.1:1 is not permitted",
        ],
    );
    assert_has(
        step(&denied, "v4"),
        &[
            "ConnectionFailed",
            "address postgres://localhost:1 is not permitted",
        ],
    );
    let denied = report(&server, "/async/denied");
    assert_has(
        step(&denied, "denied"),
        &[
            "ConnectionFailed",
            "address postgres://10.9.8.7:5432 is not permitted",
        ],
    );
}
