//! The address check against both parsers (the allow-list's and the `redis`
//! crate's), the pinned resolution, and the reply conversions, without a
//! server (tests/tests/outbound.rs and sandbox.rs run them against real ones).

use super::*;
use crate::capabilities::hostile_addresses;
use std::time::Duration;
use url::Host;

/// What the `redis` crate reads `address` as, on its own.
fn redis_reads(address: &str) -> String {
    address.into_connection_info().map_or_else(
        |e| format!("an error ({e})"),
        |info| info.addr().to_string(),
    )
}

fn refusal(result: Result<Checked, RedisError>) -> String {
    match result {
        Err(RedisError::Other(reason)) => reason,
        other => panic!("expected a refusal with a reason, got {other:?}"),
    }
}

#[test]
fn every_hostile_spelling_is_refused_or_reaches_only_the_granted_host() {
    for entries in hostile_addresses::allow_lists("redis") {
        let allowed = AllowedHosts::parse(&entries, &[]).unwrap();
        for address in hostile_addresses::spellings("redis", "") {
            let context = format!(
                "{address:?} under {entries:?}: the allow-list reads {:?}, redis {}",
                GuestAddress::parse(&address, "redis"),
                redis_reads(&address)
            );
            match check(&allowed, &address) {
                Ok(checked) => {
                    assert!(
                        hostile_addresses::is_granted(&checked.destination),
                        "{context}"
                    );
                    // The client is handed the checked destination, not the text.
                    let handed = ConnectionAddr::Tcp(
                        checked.destination.host_text(),
                        checked.destination.port,
                    );
                    assert_eq!(checked.info.addr().to_string(), handed.to_string());
                }
                Err(RedisError::InvalidAddress | RedisError::Other(_)) => {}
                Err(other) => panic!("{context}: {other:?}"),
            }
        }
    }
}

#[test]
fn an_address_the_two_parsers_read_apart_is_refused_with_both_readings() {
    let allowed = AllowedHosts::of(&["redis://127.0.0.1:7001"]);
    for address in [
        "redis://127.0.0.1:7002#@127.0.0.1:7001",
        "redis://127.0.0.1:7002?@127.0.0.1:7001",
        "redis://127.0.0.1:7002\t#@127.0.0.1:7001",
    ] {
        // The allow-list alone lets it through; the redis crate dials 7002.
        assert!(allowed.allows_url(address, "redis"), "{address}");
        assert_eq!(redis_reads(address), "127.0.0.1:7002", "{address}");
        let reason = refusal(check(&allowed, address));
        assert!(
            reason
                .contains("the allow-list reads it as 127.0.0.1:7001 and redis as 127.0.0.1:7002"),
            "{address}: {reason}"
        );
    }
}

#[test]
fn a_unix_socket_is_refused_whatever_the_list_grants() {
    let allowed = AllowedHosts::of(&["*://localhost:7001"]);
    for address in [
        "unix://localhost:7001/tmp/x.sock",
        "redis+unix://localhost:7001/tmp/x.sock",
    ] {
        assert!(allowed.allows_url(address, "redis"), "{address}");
        assert_eq!(redis_reads(address), "/tmp/x.sock", "{address}");
        let reason = refusal(check(&allowed, address));
        assert!(reason.contains("Unix socket"), "{address}: {reason}");
    }
}

#[test]
fn other_spellings_of_the_granted_host_are_dialled_as_that_host() {
    let allowed = AllowedHosts::of(&["redis://127.0.0.1:7001"]);
    for address in [
        "redis://0x7f.1:7001",
        "redis://127.0.0.1.:7001",
        "redis://%31%32%37.0.0.1:7001",
        "REDIS://127.0.0.1:07001",
    ] {
        let checked = check(&allowed, address).unwrap();
        assert_eq!(
            checked.info.addr().to_string(),
            "127.0.0.1:7001",
            "{address}"
        );
    }
}

#[test]
fn an_address_not_allowed_or_unreadable_is_an_invalid_address() {
    let allowed = AllowedHosts::of(&["redis://127.0.0.1:7001"]);
    for address in [
        "redis://127.0.0.1:1",
        "not a url",
        "redis://127.0.0.1:7001x",
    ] {
        assert_eq!(
            check(&allowed, address).err(),
            Some(RedisError::InvalidAddress),
            "{address}"
        );
    }
}

#[tokio::test]
async fn the_client_dials_the_addresses_the_check_resolved_and_no_other() {
    // `localhost` resolves to 127.0.0.1 (and ::1); the check resolved the
    // destination to 127.0.0.2: the client must dial that, not look up the
    // name it was given again.
    let (port, decoys, pinned) = hostile_addresses::decoys_and_pinned().await;
    let checked = Checked {
        info: ("localhost", port).into_connection_info().unwrap(),
        destination: Destination {
            host: Host::Ipv4("127.0.0.2".parse().unwrap()),
            port,
        },
    };
    let opened = tokio::time::timeout(Duration::from_secs(10), open(Ok(checked))).await;
    assert!(matches!(opened, Ok(Err(_))), "the listener speaks no Redis");
    assert!(hostile_addresses::arrived(&[pinned]) >= 1);
    assert_eq!(hostile_addresses::arrived(&decoys), 0);
}

#[test]
fn replies_are_flattened_as_spin_flattens_them() {
    let mut results = Vec::new();
    flatten(
        &mut results,
        Value::Array(vec![
            Value::Okay,
            Value::Int(3),
            Value::Nil,
            Value::Array(vec![Value::BulkString(b"x".to_vec()), Value::Boolean(true)]),
        ]),
    )
    .unwrap();
    assert_eq!(
        results,
        [
            RedisResult::Status("OK".into()),
            RedisResult::Int64(3),
            RedisResult::Nil,
            RedisResult::Binary(b"x".to_vec()),
            RedisResult::Int64(1),
        ]
    );
    assert!(flatten(&mut results, Value::Map(vec![])).is_err());
}
