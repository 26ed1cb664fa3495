//! The address check against both readers (the allow-list's, over each host
//! tokio-postgres reads, and tokio-postgres's own) and the pinned
//! resolution, without a server (tests/tests/postgres.rs and sandbox.rs run
//! them against real listeners).

use super::address::{Checked, check_address, with_hosts};
use super::types::Error;
use crate::capabilities::dial::Destination;
use crate::capabilities::hostile_addresses;
use crate::capabilities::outbound_hosts::AllowedHosts;
use std::net::IpAddr;
use std::time::Duration;
use tokio_postgres::Config;
use url::Host;

/// Spellings of a PostgreSQL address, in both forms, granted or not.
const SPELLINGS: &[&str] = &[
    "postgres://127.0.0.1:7002#@127.0.0.1:7001/db",
    "postgres://u@127.0.0.1:7002@127.0.0.1:7001/db",
    "postgres://127.0.0.1:7001@127.0.0.1:7002/db",
    "postgres://evil.example%23%40127.0.0.1:7001/db",
    "postgres://127.0.0.1%2F:7001/db",
    "postgres://127.0.0.1:7001/db?host=127.0.0.1&port=7002",
    "postgres://127.0.0.1:7001/db?host=127.0.0.1:7002",
    "postgres://127.0.0.1:7001,127.0.0.1:7002/db",
    "postgres://127.0.0.1:7001/db?hostaddr=127.0.0.2",
    "postgres://%2Ftmp%2Fforbidden.sock:7001/db",
    "postgres:///db?host=/tmp&port=7001",
    "postgres://[::ffff:127.0.0.1]:7001/db",
    "postgres://[::1]:7001/db",
    "postgres://127.0.0.1:07001/db",
    "postgres://127.0.0.1:65536/db",
    "postgres://127.0.0.1:+7001/db",
    "postgres://0x7f.1:7001/db",
    "postgres://2130706433:7001/db",
    "POSTGRESQL://127.0.0.1:7001/db",
    "postgres://127.0.0.1:7001/db?sslmode=disable#@127.0.0.1:7002",
    "host=evil.example#@127.0.0.1 port=7001",
    "host='evil.example#@127.0.0.1' port=7001",
    "host=127.0.0.1@127.0.0.2 port=7001",
    "host=127.0.0.1# port=7001",
    "host=127.0.0.1/x port=7001",
    "host=127.0.0.1:7002 port=7001",
    "host=127.0.0.1 port=7001 host=127.0.0.1 port=7002",
    "host=127.0.0.1,127.0.0.1 port=7001,7002",
    "host=127.0.0.1 hostaddr=127.0.0.2 port=7001",
    "host=localhost hostaddr=127.0.0.1 port=7001",
    "hostaddr=127.0.0.1 port=7001",
    "host=/tmp port=7001",
    "host=127.0.0.1. port=7001",
    "host=LOCALHOST port=7001",
    "host=127.1 port=7001",
    "host=127.0.0.1\u{0} port=7001",
    "host='127.0.0.1 ' port=7001",
    "  host=127.0.0.1   port=07001  ",
    "host=127.0.0.1 port=7001 load_balance_hosts=random",
];

#[test]
fn every_hostile_spelling_is_refused_or_reaches_only_the_granted_host() {
    for entries in hostile_addresses::allow_lists("postgres") {
        let allowed = AllowedHosts::parse(&entries, &[]).unwrap();
        for address in SPELLINGS {
            let context = format!(
                "{address:?} under {entries:?}: tokio-postgres reads {:?}",
                address
                    .parse::<Config>()
                    .map(|c| (c.get_hosts().to_vec(), c.get_ports().to_vec()))
            );
            match check_address(&allowed, address) {
                Ok(checked) => {
                    assert!(
                        !checked.hosts.is_empty() || !checked.config.get_hostaddrs().is_empty()
                    );
                    for host in &checked.hosts {
                        assert!(hostile_addresses::is_granted(host), "{context}: {host}");
                    }
                    for ip in checked.config.get_hostaddrs() {
                        assert_eq!(ip.to_string(), "127.0.0.1", "{context}");
                    }
                }
                Err(Error::ConnectionFailed(_)) => {}
                Err(other) => panic!("{context}: {other:?}"),
            }
        }
    }
}

#[test]
fn a_host_the_two_readers_read_apart_is_refused_with_both_readings() {
    let allowed = AllowedHosts::of(&["postgres://127.0.0.1:7001"]);
    for (address, host) in [
        (
            "host=evil.example#@127.0.0.1 port=7001",
            "evil.example#@127.0.0.1",
        ),
        (
            "postgres://evil.example%23%40127.0.0.1:7001/db",
            "evil.example#@127.0.0.1",
        ),
        ("host=127.0.0.1@127.0.0.1 port=7001", "127.0.0.1@127.0.0.1"),
    ] {
        // Spin's check alone lets the host through; tokio-postgres would look
        // up the whole text.
        assert!(
            allowed.allows_url(&format!("{host}:7001"), "postgres"),
            "{address}"
        );
        let reason = match check_address(&allowed, address) {
            Err(Error::ConnectionFailed(reason)) => reason,
            other => panic!("{address}: {other:?}"),
        };
        assert!(
            reason.contains(&format!("tokio-postgres reads its host as {host:?}")),
            "{address}: {reason}"
        );
    }
}

#[tokio::test]
async fn hosts_are_pinned_to_their_addresses_and_settings_kept() {
    let allowed = AllowedHosts::of(&["postgres://127.0.0.1:7001", "postgres://localhost:7001"]);
    for address in [
        "postgres://u@0x7f.1:7001/db",
        "host=127.0.0.1. port=7001 user=u dbname=db",
        "host=LOCALHOST port=7001 user=u dbname=db",
    ] {
        let config = check_address(&allowed, address)
            .unwrap()
            .pinned()
            .await
            .unwrap();
        assert!(!config.get_hostaddrs().is_empty(), "{address}");
        for ip in config.get_hostaddrs() {
            assert!(ip.is_loopback(), "{address}: {ip}");
        }
        assert!(config.get_ports().iter().all(|port| *port == 7001));
        assert_eq!(config.get_user(), Some("u"));
        assert_eq!(config.get_dbname(), Some("db"));
    }
    // Every setting survives the pinning.
    let parsed: Config = "host=h port=5 user=u password=p dbname=d options=o \
        application_name=a sslmode=disable sslnegotiation=direct connect_timeout=3 \
        tcp_user_timeout=4 keepalives=0 keepalives_idle=7 keepalives_interval=8 \
        keepalives_retries=9 target_session_attrs=read-write channel_binding=disable \
        load_balance_hosts=random"
        .parse()
        .unwrap();
    let ip: IpAddr = "10.0.0.1".parse().unwrap();
    let mut expected = parsed.clone();
    expected.hostaddr(ip);
    assert_eq!(with_hosts(&parsed, &[("h".into(), ip, 5)]), expected);
}

#[tokio::test]
async fn the_client_dials_the_addresses_the_check_resolved_and_no_other() {
    // tokio-postgres is given `localhost`; the check resolved it to
    // 127.0.0.2. A lookup of the name inside tokio-postgres reaches a decoy.
    let (port, decoys, pinned) = hostile_addresses::decoys_and_pinned().await;
    let checked = Checked {
        config: format!("host=localhost port={port} user=u")
            .parse()
            .unwrap(),
        hosts: vec![Destination {
            host: Host::Ipv4("127.0.0.2".parse().unwrap()),
            port,
        }],
    };
    let config = checked.pinned().await.unwrap();
    let connected = tokio::time::timeout(
        Duration::from_secs(10),
        config.connect(tokio_postgres::NoTls),
    )
    .await;
    assert!(
        matches!(connected, Ok(Err(_))),
        "the listener speaks no PostgreSQL"
    );
    assert!(hostile_addresses::arrived(&[pinned]) >= 1);
    assert_eq!(hostile_addresses::arrived(&decoys), 0);
}
