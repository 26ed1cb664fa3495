//! Attacks on the host's memory and descriptors rather than on the grants:
//! each route holds as much of one resource as the host lets it, and
//! reports each try (`escaped`: the host let it have that one too). The
//! test (tests/tests/hoarding.rs) knows the operator's limits and checks
//! that the tries past them were refused, and that the host's memory stayed
//! bounded.
//!
//! - `/hoard/sqlite?dbs=N&mib=M`: `N` connections to `default` (in memory
//!   when the host has no state directory: a database each), each filled
//!   with `M` MiB, all held to the end of the request;
//! - `/hoard/sockets?count=N`: `N` TCP sockets, all held;
//! - `/hoard/keys?keys=N&len=L`: `N` keys of `L` bytes set in `default`,
//!   then listed at once.

use super::{Query, Report};
use spin_sdk::sqlite::Connection;

pub fn route(path: &str, query: &Query) -> Option<Report> {
    let number = |name: &str| query.get(name).parse::<usize>().unwrap_or(0);
    Some(match path {
        "/hoard/sqlite" => sqlite(number("dbs"), number("mib")),
        "/hoard/sockets" => sockets(number("count")),
        "/hoard/keys" => keys(number("keys"), number("len")),
        _ => return None,
    })
}

fn sqlite(dbs: usize, mib: usize) -> Report {
    let mut report = Report::default();
    let mut held = Vec::new();
    for index in 0..dbs {
        let db = match Connection::open_default() {
            Ok(db) => db,
            Err(error) => {
                report.record::<(), _>(&format!("open database {index}"), &Err(error));
                continue;
            }
        };
        let filled = db.execute("CREATE TABLE t(b)", &[]).and_then(|_| {
            db.execute(
                &format!(
                    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {mib}) \
                     INSERT INTO t SELECT randomblob(1048576) FROM n"
                ),
                &[],
            )
        });
        report.record(
            &format!("fill database {index} with {mib} MiB"),
            &filled.map(drop),
        );
        // Held, filled or not, to the end of the request.
        held.push(db);
    }
    report
}

fn sockets(count: usize) -> Report {
    use wasip2::sockets::network::IpAddressFamily;
    use wasip2::sockets::tcp_create_socket::create_tcp_socket;
    let mut report = Report::default();
    let mut held = Vec::new();
    for index in 0..count {
        let created = create_tcp_socket(IpAddressFamily::Ipv4);
        report.record(&format!("socket {index}"), &created.as_ref().map(drop));
        held.extend(created.ok());
    }
    report
}

fn keys(keys: usize, len: usize) -> Report {
    use spin_sdk::key_value::Store;
    let mut report = Report::default();
    let store = match Store::open_default() {
        Ok(store) => store,
        Err(error) => {
            report.record::<(), _>("open default", &Err(error));
            return report;
        }
    };
    for index in 0..keys {
        let key = format!("{index:08}{}", "k".repeat(len.saturating_sub(8)));
        if let Err(error) = store.set(&key, b"v") {
            report.record::<(), _>(&format!("set key {index}"), &Err(error));
            return report;
        }
    }
    let listed = store.get_keys().map(|keys| keys.len());
    report.record(&format!("list {keys} keys of {len} bytes"), &listed);
    report
}
