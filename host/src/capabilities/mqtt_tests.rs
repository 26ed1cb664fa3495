//! The address check against both parsers (the allow-list's and rumqttc's),
//! without a broker (tests/tests/outbound.rs and sandbox.rs use real ones).

use super::*;
use crate::capabilities::hostile_addresses;

/// What rumqttc reads `address` as, on its own.
fn rumqttc_reads(address: &str) -> String {
    MqttOptions::parse_url(address).map_or_else(
        |e| format!("an error ({e})"),
        |options| format!("{:?}", options.broker_address()),
    )
}

fn connection_failed(result: Result<MqttOptions, MqttError>) -> String {
    match result {
        Err(MqttError::ConnectionFailed(reason)) => reason,
        other => panic!(
            "expected connection-failed, got {:?}",
            other.map(|o| o.broker_address())
        ),
    }
}

#[test]
fn every_hostile_spelling_is_refused_or_reaches_only_the_granted_host() {
    for entries in hostile_addresses::allow_lists("mqtt") {
        let allowed = AllowedHosts::parse(&entries, &[]).unwrap();
        for address in hostile_addresses::spellings("mqtt", "client_id=t") {
            let context = format!(
                "{address:?} under {entries:?}: the allow-list reads {:?}, rumqttc {}",
                GuestAddress::parse(&address, "mqtt"),
                rumqttc_reads(&address)
            );
            match options(&allowed, &address) {
                Ok(options) => {
                    let (host, port) = options.broker_address();
                    let granted = ["127.0.0.1", "localhost"].contains(&host.as_str())
                        && port == hostile_addresses::GRANTED_PORT;
                    assert!(granted, "{context}: rumqttc is handed {host}:{port}");
                }
                Err(MqttError::InvalidAddress | MqttError::ConnectionFailed(_)) => {}
                Err(other) => panic!("{context}: {other:?}"),
            }
        }
    }
}

#[test]
fn an_address_the_two_parsers_read_apart_is_refused_with_both_readings() {
    let allowed = AllowedHosts::of(&["mqtt://127.0.0.1:7001"]);
    for address in [
        "mqtt://127.0.0.1:7002?client_id=t#@127.0.0.1:7001",
        "mqtt://127.0.0.1:7002?client_id=@127.0.0.1:7001",
    ] {
        // The allow-list alone lets it through; rumqttc dials 7002.
        assert!(allowed.allows_url(address, "mqtt"), "{address}");
        assert_eq!(rumqttc_reads(address), "(\"127.0.0.1\", 7002)", "{address}");
        let reason = connection_failed(options(&allowed, address));
        assert!(
            reason.contains(
                "the allow-list reads it as 127.0.0.1:7001 and rumqttc as 127.0.0.1:7002"
            ),
            "{address}: {reason}"
        );
    }
}

#[test]
fn other_spellings_of_the_granted_host_are_handed_over_as_that_host() {
    let allowed = AllowedHosts::of(&["mqtt://127.0.0.1:7001", "mqtt://[::1]:7001"]);
    for (address, handed) in [
        ("mqtt://0x7f.1:7001?client_id=t", "127.0.0.1"),
        ("mqtt://127.0.0.1.:07001?client_id=t", "127.0.0.1"),
        ("mqtt://%31%32%37.0.0.1:7001?client_id=t", "127.0.0.1"),
        ("MQTT://[0:0::1]:7001?client_id=t", "[::1]"),
    ] {
        let options = options(&allowed, address).unwrap();
        assert_eq!(
            options.broker_address(),
            (handed.to_string(), 7001),
            "{address}"
        );
    }
}

#[test]
fn an_address_not_allowed_fails_as_spin_s_does() {
    let address = "mqtt://localhost:1883?client_id=spintest";
    assert_eq!(
        connection_failed(options(&AllowedHosts::default(), address)),
        format!("address {address} is not permitted")
    );
    let all = AllowedHosts::of(&["*://*:*"]);
    assert_eq!(
        options(&all, "not a url").err(),
        Some(MqttError::ConnectionFailed(
            "address not a url is not permitted".into()
        ))
    );
    assert_eq!(
        options(&all, "mqtt://127.0.0.1:7001").err(),
        Some(MqttError::InvalidAddress),
        "rumqttc needs a client_id"
    );
}

#[test]
fn options_rumqttc_panics_on_are_refused() {
    let allowed = AllowedHosts::of(&["mqtt://127.0.0.1:7001"]);
    for address in [
        "mqtt://127.0.0.1:7001?client_id=t&inflight_num=0",
        "mqtt://127.0.0.1:7001?client_id=t&inflight_num=00",
        "mqtt://127.0.0.1:7001?client_id=t&inflight_num=5&inflight_num=0",
        "mqtt://127.0.0.1:7001?client_id=&clean_session=false",
    ] {
        assert_eq!(
            options(&allowed, address).err(),
            Some(MqttError::InvalidAddress),
            "{address}"
        );
    }
    assert!(
        options(
            &allowed,
            "mqtt://127.0.0.1:7001?client_id=t&clean_session=false"
        )
        .is_ok()
    );
}
