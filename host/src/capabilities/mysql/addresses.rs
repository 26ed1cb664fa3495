//! The address check against both parsers (the allow-list's and
//! mysql_async's) and the pinned resolution, without a server
//! (tests/tests/mysql.rs and sandbox.rs run them against real listeners).

use super::{Checked, Error, build_opts, check_address, connect};
use crate::capabilities::dial::Destination;
use crate::capabilities::hostile_addresses;
use crate::capabilities::outbound_hosts::{AllowedHosts, GuestAddress};
use std::time::Duration;
use url::Host;

/// What mysql_async reads `address` as, on its own.
fn mysql_async_reads(address: &str) -> String {
    mysql_async::Opts::from_url(address).map_or_else(
        |e| format!("an error ({e})"),
        |opts| format!("{}:{}", opts.ip_or_hostname(), opts.tcp_port()),
    )
}

fn connection_failed(result: Result<Checked, Error>) -> String {
    match result {
        Err(Error::ConnectionFailed(message)) => message,
        other => panic!("expected connection-failed, got {other:?}"),
    }
}

#[test]
fn every_hostile_spelling_is_refused_or_reaches_only_the_granted_host() {
    for entries in hostile_addresses::allow_lists("mysql") {
        let allowed = AllowedHosts::parse(&entries, &[]).unwrap();
        for address in hostile_addresses::spellings("mysql", "") {
            let context = format!(
                "{address:?} under {entries:?}: the allow-list reads {:?}, mysql_async {}",
                GuestAddress::parse(&address, "mysql"),
                mysql_async_reads(&address)
            );
            match check_address(&allowed, &address) {
                Ok(checked) => {
                    assert!(
                        hostile_addresses::is_granted(&checked.destination),
                        "{context}"
                    );
                    assert!(checked.opts.socket().is_none(), "{context}");
                    assert!(!checked.opts.prefer_socket(), "{context}");
                }
                Err(Error::ConnectionFailed(_)) => {}
                Err(other) => panic!("{context}: {other:?}"),
            }
        }
    }
}

#[test]
fn an_address_the_two_parsers_read_apart_is_refused_with_both_readings() {
    let allowed = AllowedHosts::of(&["mysql://127.0.0.1:7001"]);
    for address in [
        "mysql://127.0.0.1:7002#@127.0.0.1:7001",
        "mysql://127.0.0.1:7002\t#@127.0.0.1:7001",
    ] {
        // The allow-list alone lets it through; mysql_async dials 7002.
        assert!(allowed.allows_url(address, "mysql"), "{address}");
        assert_eq!(mysql_async_reads(address), "127.0.0.1:7002", "{address}");
        let reason = connection_failed(check_address(&allowed, address));
        assert!(
            reason.contains(
                "the allow-list reads it as 127.0.0.1:7001 and mysql_async as 127.0.0.1:7002"
            ),
            "{address}: {reason}"
        );
    }
}

#[tokio::test]
async fn other_spellings_of_the_granted_host_are_dialled_as_that_host() {
    let allowed = AllowedHosts::of(&["mysql://127.0.0.1:7001"]);
    for address in [
        "mysql://u@0x7f.1:7001/db",
        "mysql://u@127.0.0.1.:07001/db",
        "MYSQL://u@%31%32%37.0.0.1:7001/db",
    ] {
        let opts = check_address(&allowed, address)
            .unwrap()
            .pinned()
            .await
            .unwrap();
        assert_eq!(opts.ip_or_hostname(), "127.0.0.1", "{address}");
        assert_eq!(opts.tcp_port(), 7001, "{address}");
        let ips = opts.resolved_ips().clone().unwrap();
        assert_eq!(ips, ["127.0.0.1".parse::<std::net::IpAddr>().unwrap()]);
    }
}

#[tokio::test]
async fn the_client_dials_the_addresses_the_check_resolved_and_no_other() {
    // mysql_async is given `localhost`; the check resolved the destination to
    // 127.0.0.2. A lookup of the name inside mysql_async reaches a decoy.
    let (port, decoys, pinned) = hostile_addresses::decoys_and_pinned().await;
    let checked = Checked {
        opts: build_opts(&format!("mysql://u@localhost:{port}/db")).unwrap(),
        destination: Destination {
            host: Host::Ipv4("127.0.0.2".parse().unwrap()),
            port,
        },
    };
    let pool = mysql_async::Pool::new(checked.pinned().await.unwrap());
    let opened = tokio::time::timeout(Duration::from_secs(10), connect(&pool)).await;
    assert!(matches!(opened, Ok(Err(_))), "the listener speaks no MySQL");
    assert!(hostile_addresses::arrived(&[pinned]) >= 1);
    assert_eq!(hostile_addresses::arrived(&decoys), 0);
}
