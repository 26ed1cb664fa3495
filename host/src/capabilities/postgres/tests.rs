//! What can be checked without a server: addresses against the allow-list,
//! parameters refused before they reach PostgreSQL, and the older versions'
//! views of 4.2.0's values. tests/tests/postgres.rs covers the rest against a
//! real PostgreSQL.

use super::older::{self, v2, v3};
use super::types::{DbDataType, DbValue, Error, ParameterValue, RangeBoundKind, RowSet};
use super::{check_address, convert};
use crate::capabilities::outbound_hosts::AllowedHosts;

fn refused(allowed: &AllowedHosts, address: &str) -> String {
    match check_address(allowed, address) {
        Err(Error::ConnectionFailed(message)) => message,
        other => panic!("{address}: {other:?}"),
    }
}

#[test]
fn both_address_forms_are_checked_as_spin_checks_them() {
    let allowed = AllowedHosts::of(&["postgres://db.local:5433", "*://localhost:6000"]);
    for address in [
        "postgres://user:pw@db.local:5433/app",
        "host=db.local port=5433 user=app dbname=app",
        "host=localhost port=6000 user=postgres password=postgres dbname=spin_dev",
        "postgresql://localhost:6000/spin_dev?sslmode=disable",
    ] {
        assert!(check_address(&allowed, address).is_ok(), "{address}");
    }
    // Spin names the host and port it checked; a URL without a port is parsed
    // with 5432, a key-value string without one names no port.
    assert_eq!(
        refused(&allowed, "postgres://user:pw@db.local:5432/app"),
        "address postgres://db.local:5432 is not permitted"
    );
    assert_eq!(
        refused(&allowed, "postgres://other.local/app"),
        "address postgres://other.local:5432 is not permitted"
    );
    assert_eq!(
        refused(&allowed, "host=other.local dbname=app"),
        "address postgres://other.local is not permitted"
    );
    assert_eq!(
        refused(&allowed, "host=127.0.0.1 port=6000 dbname=x"),
        "address postgres://127.0.0.1:6000 is not permitted"
    );
    // Every host of a multi-host address, each with its own port.
    assert_eq!(
        refused(&allowed, "host=db.local,other.local port=5433,5433"),
        "address postgres://other.local:5433 is not permitted"
    );
    // The address tokio-postgres would dial is checked too.
    assert_eq!(
        refused(&allowed, "host=db.local hostaddr=10.0.0.1 port=5433"),
        "address postgres://10.0.0.1:5433 is not permitted"
    );
    assert_eq!(
        refused(&allowed, "host=/var/run/postgresql dbname=x"),
        "Unix sockets are not supported on WebAssembly"
    );
    assert!(refused(&allowed, "host='unterminated").contains("invalid"));
}

#[test]
fn parameters_that_cannot_be_values_are_refused_before_the_server() {
    for bad in [
        ParameterValue::Date((2024, 2, 30)),
        ParameterValue::Time((24, 0, 0, 0)),
        ParameterValue::Uuid("not-a-uuid".into()),
        ParameterValue::Jsonb(b"{".to_vec()),
        ParameterValue::Decimal("1.2.3".into()),
        ParameterValue::ArrayDecimal(vec![Some("x".into())]),
        // postgres_range would panic normalising these; they are errors here.
        ParameterValue::RangeInt32((None, Some((i32::MAX, RangeBoundKind::Inclusive)))),
        ParameterValue::RangeInt64((Some((i64::MAX, RangeBoundKind::Exclusive)), None)),
    ] {
        assert!(convert::parameter(bad.clone()).is_err(), "{bad:?}");
    }
    for good in [
        ParameterValue::Datetime((1989, 11, 24, 1, 2, 3, 0)),
        ParameterValue::Timestamp(-86_400),
        ParameterValue::RangeInt32((Some((1, RangeBoundKind::Exclusive)), None)),
        ParameterValue::RangeDecimal((None, Some(("100".into(), RangeBoundKind::Exclusive)))),
        ParameterValue::DbNull,
    ] {
        assert!(convert::parameter(good.clone()).is_ok(), "{good:?}");
    }
}

#[test]
fn older_versions_see_what_they_have_cases_for() {
    let set = RowSet {
        columns: vec![super::types::Column {
            name: "id".into(),
            data_type: DbDataType::Uuid,
        }],
        rows: vec![vec![
            DbValue::Int32(7),
            DbValue::Date((2525, 12, 25)),
            DbValue::Uuid("x".into()),
            DbValue::DbNull,
        ]],
    };
    let three = v3::RowSet::from(set.clone());
    assert_eq!(three.columns[0].data_type, v3::DbDataType::Other);
    assert_eq!(
        three.rows[0],
        [
            v3::DbValue::Int32(7),
            v3::DbValue::Date((2525, 12, 25)),
            v3::DbValue::Unsupported,
            v3::DbValue::DbNull
        ]
    );
    let two = v2::RowSet::from(set);
    assert_eq!(two.rows[0][1], v2::DbValue::Unsupported);
    assert_eq!(
        ParameterValue::try_from(v2::ParameterValue::Uint8(1)),
        Err(older::Error::ValueConversionFailed(
            "Postgres does not support unsigned integers".into()
        ))
    );
    let failed = Error::QueryFailed(super::types::QueryError::DbError(super::types::DbError {
        as_text: "db said no".into(),
        severity: "ERROR".into(),
        code: "42P01".into(),
        message: "no".into(),
        detail: None,
        extras: vec![],
    }));
    assert_eq!(
        older::Error::from(failed),
        older::Error::QueryFailed("db said no".into())
    );
}
