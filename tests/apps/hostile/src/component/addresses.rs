//! `/addresses?granted=G&forbidden=F`: Redis, MQTT, MySQL, PostgreSQL and
//! HTTP addresses the manifest's grant (`<scheme>://127.0.0.1:G`) reads as
//! granted, or as another spelling of the granted host, while the client
//! crate would read another destination: 127.0.0.1:F or 127.0.0.2:G (or a
//! PostgreSQL host that is no host name). Each is refused, or reaches the
//! granted listener only (which speaks none of these protocols, so the call
//! fails there). The test listens at both forbidden places.
//!
//! TCP (`wasi:sockets`) takes no text: the guest hands the host a socket
//! address, and wasmtime-wasi checks that very address before it connects.
//! The spellings here are the guest's own (IPv4-mapped, scope ids, names and
//! numeric forms std would have to look up): each is refused.

use super::{Query, Report};
use spin_sdk::http::{Method, Request, Response};

pub async fn addresses(query: &Query) -> Report {
    let (g, f) = (query.get("granted"), query.get("forbidden"));
    let mut report = Report::default();
    for address in [
        format!("redis://127.0.0.1:{f}#@127.0.0.1:{g}"),
        format!("redis://127.0.0.1:{f}?@127.0.0.1:{g}"),
        format!("redis://127.0.0.1:{f}\t#@127.0.0.1:{g}"),
        format!("redis://127.0.0.2:{g}#@127.0.0.1:{g}"),
        format!("redis://0x7f.1:{g}"),
        format!("redis://127.0.0.1.:{f}"),
    ] {
        let opened = spin_sdk::redis::Connection::open(&address).and_then(|c| c.get("k"));
        report.record(&format!("redis {address}"), &opened);
    }
    for address in [
        format!("mqtt://127.0.0.1:{f}?client_id=t#@127.0.0.1:{g}"),
        format!("mqtt://127.0.0.1:{f}?client_id=@127.0.0.1:{g}"),
        format!("mqtt://127.0.0.1:{g}?client_id=t&inflight_num=0"),
        format!("mqtt://127.0.0.1:{g}?client_id=&clean_session=false"),
    ] {
        // rumqttc connects on the first publish.
        let published = spin_sdk::mqtt::Connection::open(&address, "u", "p", 5)
            .and_then(|c| c.publish("t", b"escape", spin_sdk::mqtt::Qos::AtMostOnce));
        report.record(&format!("mqtt {address}"), &published);
    }
    for address in [
        format!("mysql://127.0.0.1:{f}#@127.0.0.1:{g}"),
        format!("mysql://127.0.0.1:{f}\t#@127.0.0.1:{g}"),
        format!("mysql://127.0.0.2:{g}#@127.0.0.1:{g}"),
        format!("mysql://x@0x7f.1:{g}/x?prefer_socket=true"),
    ] {
        let opened = spin_sdk::mysql::Connection::open(&address).map(drop);
        report.record(&format!("mysql {address}"), &opened);
    }
    for address in [
        format!("host='127.0.0.2 @127.0.0.1' port={g} user=x"),
        format!("postgres://x@127.0.0.2%20%40127.0.0.1:{g}/x"),
        format!("host=127.0.0.1#@127.0.0.1 port={g} user=x"),
        format!("postgres://x@0x7f.1:{g}/x"),
    ] {
        let opened = spin_sdk::pg::Connection::open(&address).map(drop);
        report.record(&format!("postgres {address}"), &opened);
    }
    for url in [
        format!("http://x@127.0.0.1:{g}/"),
        format!("http://127.0.0.1:{g}@127.0.0.1:{f}/"),
        format!("http://127.0.0.2:{g}/"),
    ] {
        let sent = spin_sdk::http::send::<_, Response>(Request::new(Method::Get, &url)).await;
        report.record(&format!("GET {url}"), &sent.map(|r| *r.status()));
    }
    tcp(&mut report, &g, &f);
    report
}

/// TCP connections to what the grant (`tcp://127.0.0.1:G`) does not name,
/// however the guest spells it; a name or a numeric form std does not parse
/// as a socket address is a lookup, which the host does not offer.
fn tcp(report: &mut Report, g: &str, f: &str) {
    for address in [
        format!("127.0.0.2:{g}"),
        format!("[::ffff:127.0.0.2]:{g}"),
        format!("[::ffff:7f00:1]:{f}"),
        format!("[::1%1]:{f}"),
        format!("[::ffff:127.0.0.1%1]:{f}"),
        format!("localhost:{g}"),
        format!("0x7f.1:{g}"),
        format!("127.1:{g}"),
    ] {
        let connected = std::net::TcpStream::connect(&address).map(drop);
        report.record(&format!("tcp {address}"), &connected);
    }
}
