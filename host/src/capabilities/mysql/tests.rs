//! The conversions and address checks, without a server (tests/tests/mysql.rs
//! runs them against a real one).

use super::convert::{self, entry, parameter};
use super::{Column, DbValue, Error, ParameterValue, build_opts, check_address};
use crate::capabilities::outbound_hosts::AllowedHosts;
use crate::capabilities::postgres::older::v2::DbDataType;
use mysql_async::Value;
use mysql_async::consts::{ColumnFlags, ColumnType};

fn connection_failed<T: std::fmt::Debug>(result: Result<T, Error>) -> String {
    match result {
        Err(Error::ConnectionFailed(message)) => message,
        other => panic!("expected connection-failed, got {other:?}"),
    }
}

#[test]
fn an_address_not_allowed_is_refused_with_spin_s_message() {
    let none = AllowedHosts::default();
    assert_eq!(
        connection_failed(check_address(&none, "mysql://root@127.0.0.1/app")),
        "address mysql://root@127.0.0.1/app is not permitted"
    );
    // The default port is MySQL's: another port is another address.
    let allowed = AllowedHosts::of(&["mysql://db.local"]);
    assert!(check_address(&allowed, "mysql://root@db.local/app").is_ok());
    assert!(check_address(&allowed, "mysql://root@db.local:3306/app").is_ok());
    assert_eq!(
        connection_failed(check_address(&allowed, "mysql://root@db.local:3307/app")),
        "address mysql://root@db.local:3307/app is not permitted"
    );
}

#[test]
fn addresses_are_parsed_as_spin_parses_them() {
    let opts = build_opts("mysql://me:pw@127.0.0.1:3310/db").unwrap();
    assert_eq!(opts.ip_or_hostname(), "127.0.0.1");
    assert_eq!(opts.tcp_port(), 3310);
    assert_eq!(opts.user(), Some("me"));
    assert_eq!(opts.pass(), Some("pw"));
    assert_eq!(opts.db_name(), Some("db"));
    assert!(opts.ssl_opts().is_none());
    // `ssl-mode` is Spin's; disabled, it is taken out and the rest kept.
    let opts = build_opts("mysql://me@127.0.0.1/db?SsL-MoDe=DISABLED&pool_max=10").unwrap();
    assert_eq!(opts.pool_opts().constraints().max(), 10);
    // Spin overrides mysql_async's own `require_ssl` (TLS only through `ssl-mode`).
    let opts = build_opts("mysql://me@127.0.0.1/db?require_ssl=true").unwrap();
    assert!(opts.ssl_opts().is_none());
}

#[test]
fn addresses_mysql_async_rejects_fail_to_connect_instead_of_panicking() {
    // Spin's conversion to mysql_async's options panics on each of these.
    let scheme = connection_failed(build_opts("postgres://127.0.0.1/db"));
    assert!(
        scheme.contains("Unsupported connection URL scheme"),
        "{scheme}"
    );
    let unknown = connection_failed(build_opts("mysql://127.0.0.1/db?colour=blue"));
    assert!(
        unknown.contains("Unknown connection URL parameter"),
        "{unknown}"
    );
    let pool = connection_failed(build_opts("mysql://127.0.0.1/db?pool_min=5&pool_max=1"));
    assert!(pool.contains("pool_min"), "{pool}");
    // As Spin words it (anyhow's debug form of mysql_async's error), and no
    // host backtrace in it even with RUST_BACKTRACE set.
    assert_eq!(
        connection_failed(build_opts("not a url")),
        "URL error: `URL parse error: relative URL without a base'\n\nCaused by:\n    \
         0: URL parse error: relative URL without a base\n    \
         1: relative URL without a base"
    );
}

#[test]
fn connection_errors_read_as_anyhow_formats_them() {
    for address in [
        "not a url",
        "postgres://127.0.0.1/db",
        "mysql://127.0.0.1/db?x=y",
    ] {
        let error = || mysql_async::Error::from(mysql_async::Opts::from_url(address).unwrap_err());
        let anyhow = format!("{:?}", anyhow::Error::from(error()));
        let without_backtrace = anyhow.split("\n\nStack backtrace:").next().unwrap();
        assert_eq!(
            super::anyhow_debug(&error()),
            without_backtrace,
            "{address}"
        );
    }
}

#[test]
fn tls_and_unix_sockets_are_refused_before_connecting() {
    for address in [
        "mysql://127.0.0.1/db?ssl-mode=REQUIRED",
        "mysql://127.0.0.1/db?sslMode=VERIFY_CA",
    ] {
        let message = connection_failed(build_opts(address));
        assert!(message.contains("without TLS"), "{address}: {message}");
    }
    let message = connection_failed(build_opts("mysql://127.0.0.1/db?socket=/tmp/x.sock"));
    assert!(message.contains("Unix socket"), "{message}");
    // Nor does a server get to name one: no reconnecting through `@@socket`.
    for address in [
        "mysql://127.0.0.1/db",
        "mysql://127.0.0.1/db?prefer_socket=true",
    ] {
        assert!(!build_opts(address).unwrap().prefer_socket(), "{address}");
    }
}

#[test]
fn parameters_become_mysql_values_as_spin_makes_them() {
    use ParameterValue as P;
    let cases = [
        (P::Boolean(true), Value::Int(1)),
        (P::Boolean(false), Value::Int(0)),
        (P::Int8(-8), Value::Int(-8)),
        (P::Int16(-16), Value::Int(-16)),
        (P::Int32(-32), Value::Int(-32)),
        (P::Int64(i64::MIN), Value::Int(i64::MIN)),
        (P::Uint8(8), Value::UInt(8)),
        (P::Uint16(16), Value::UInt(16)),
        (P::Uint32(32), Value::UInt(32)),
        (P::Uint64(u64::MAX), Value::UInt(u64::MAX)),
        (P::Floating32(1.5), Value::Float(1.5)),
        (P::Floating64(-0.25), Value::Double(-0.25)),
        (P::Str("ada".into()), Value::Bytes(b"ada".to_vec())),
        (P::Binary(vec![0, 255]), Value::Bytes(vec![0, 255])),
        (P::DbNull, Value::NULL),
    ];
    for (param, expected) in cases {
        assert_eq!(parameter(param.clone()), expected, "{param:?}");
    }
}

fn column(kind: ColumnType, flags: ColumnFlags) -> mysql_async::Column {
    mysql_async::Column::new(kind).with_flags(flags)
}

#[test]
fn column_types_are_picked_as_spin_picks_them() {
    use ColumnType as C;
    let none = ColumnFlags::empty();
    let unsigned = ColumnFlags::UNSIGNED_FLAG;
    let binary = ColumnFlags::BINARY_FLAG;
    let cases = [
        (C::MYSQL_TYPE_TINY, none, DbDataType::Int8),
        (C::MYSQL_TYPE_TINY, unsigned, DbDataType::Uint8),
        (C::MYSQL_TYPE_SHORT, none, DbDataType::Int16),
        (C::MYSQL_TYPE_SHORT, unsigned, DbDataType::Uint16),
        (C::MYSQL_TYPE_INT24, none, DbDataType::Int32),
        (C::MYSQL_TYPE_INT24, unsigned, DbDataType::Uint32),
        (C::MYSQL_TYPE_LONG, none, DbDataType::Int32),
        (C::MYSQL_TYPE_LONG, unsigned, DbDataType::Uint32),
        (C::MYSQL_TYPE_LONGLONG, none, DbDataType::Int64),
        (C::MYSQL_TYPE_LONGLONG, unsigned, DbDataType::Uint64),
        (C::MYSQL_TYPE_FLOAT, unsigned, DbDataType::Floating32),
        (C::MYSQL_TYPE_DOUBLE, none, DbDataType::Floating64),
        (C::MYSQL_TYPE_NEWDECIMAL, none, DbDataType::Other),
        (C::MYSQL_TYPE_YEAR, unsigned, DbDataType::Other),
        (C::MYSQL_TYPE_BLOB, none, DbDataType::Str),
        (C::MYSQL_TYPE_BLOB, binary, DbDataType::Binary),
        (C::MYSQL_TYPE_MEDIUM_BLOB, none, DbDataType::Other),
        (C::MYSQL_TYPE_STRING, none, DbDataType::Str),
        (C::MYSQL_TYPE_STRING, binary, DbDataType::Binary),
        (C::MYSQL_TYPE_VAR_STRING, none, DbDataType::Str),
        (C::MYSQL_TYPE_VAR_STRING, binary, DbDataType::Binary),
        (C::MYSQL_TYPE_DATE, none, DbDataType::Other),
        (C::MYSQL_TYPE_DATETIME, binary, DbDataType::Other),
        (C::MYSQL_TYPE_JSON, none, DbDataType::Other),
        (C::MYSQL_TYPE_BIT, unsigned, DbDataType::Other),
    ];
    for (kind, flags, expected) in cases {
        assert_eq!(
            convert::data_type(&column(kind, flags)),
            expected,
            "{kind:?} {flags:?}"
        );
    }
    let named = mysql_async::Column::new(C::MYSQL_TYPE_LONG).with_name(b"id");
    let columns = convert::columns(&[named]);
    assert_eq!(columns[0].name, "id");
    assert_eq!(columns[0].data_type, DbDataType::Int32);
    assert!(convert::columns(&[]).is_empty());
}

fn typed(data_type: DbDataType) -> Vec<Column> {
    vec![Column {
        name: "c".to_string(),
        data_type,
    }]
}

fn read(value: Value, data_type: DbDataType) -> Result<DbValue, Error> {
    entry(Some(value), 0, &typed(data_type))
}

fn conversion_failed(result: Result<DbValue, Error>) -> String {
    match result {
        Err(Error::ValueConversionFailed(message)) => message,
        other => panic!("expected value-conversion-failed, got {other:?}"),
    }
}

#[test]
fn values_are_read_as_their_column_s_type() {
    use DbDataType as T;
    assert_eq!(read(Value::Int(-1), T::Int8), Ok(DbValue::Int8(-1)));
    assert_eq!(read(Value::Int(-300), T::Int16), Ok(DbValue::Int16(-300)));
    assert_eq!(
        read(Value::Int(1 << 20), T::Int32),
        Ok(DbValue::Int32(1 << 20))
    );
    assert_eq!(
        read(Value::Int(1 << 40), T::Int64),
        Ok(DbValue::Int64(1 << 40))
    );
    assert_eq!(read(Value::Int(255), T::Uint8), Ok(DbValue::Uint8(255)));
    assert_eq!(
        read(Value::Int(65535), T::Uint16),
        Ok(DbValue::Uint16(65535))
    );
    assert_eq!(
        read(Value::Int(1 << 31), T::Uint32),
        Ok(DbValue::Uint32(1 << 31))
    );
    assert_eq!(
        read(Value::UInt(u64::MAX), T::Uint64),
        Ok(DbValue::Uint64(u64::MAX))
    );
    assert_eq!(
        read(Value::Float(1.5), T::Floating32),
        Ok(DbValue::Floating32(1.5))
    );
    assert_eq!(
        read(Value::Double(0.1), T::Floating64),
        Ok(DbValue::Floating64(0.1))
    );
    assert_eq!(
        read(Value::Bytes(b"h\xc3\xa9".to_vec()), T::Str),
        Ok(DbValue::Str("hé".to_string()))
    );
    assert_eq!(
        read(Value::Bytes(vec![0, 159, 255]), T::Binary),
        Ok(DbValue::Binary(vec![0, 159, 255]))
    );
    // 2.0.0's `boolean` is never a MySQL column's type; read as one, 0 and 1 are.
    assert_eq!(read(Value::Int(1), T::Boolean), Ok(DbValue::Boolean(true)));
}

#[test]
fn values_that_do_not_fit_are_conversion_failures() {
    use DbDataType as T;
    let message = conversion_failed(read(Value::Int(300), T::Int8));
    assert!(message.contains("Int(300)"), "{message}");
    conversion_failed(read(Value::Int(-1), T::Uint32));
    conversion_failed(read(Value::Bytes(vec![0xff, 0xfe]), T::Str));
    // A column of a type with no case: Spin's message, whatever the value.
    assert_eq!(
        conversion_failed(read(Value::Date(2024, 1, 2, 0, 0, 0, 0), T::Other)),
        "Cannot convert value Date(\"'2024-01-02'\") in column c data type DbDataType::Other"
    );
    conversion_failed(read(Value::Bytes(b"1.50".to_vec()), T::Other));
}

#[test]
fn nulls_and_missing_columns() {
    assert_eq!(
        entry(Some(Value::NULL), 0, &typed(DbDataType::Other)),
        Ok(DbValue::DbNull)
    );
    assert_eq!(entry(None, 0, &[]), Ok(DbValue::DbNull));
    assert_eq!(
        entry(Some(Value::Int(1)), 1, &typed(DbDataType::Int8)),
        Err(Error::Other("Can't get column at index 1".to_string()))
    );
}

#[test]
fn sizes_count_as_spin_counts_them() {
    let base = size_of::<DbValue>();
    assert_eq!(convert::size(&DbValue::Int64(1)), base);
    assert_eq!(convert::size(&DbValue::Str("abc".into())), base + 3);
    assert_eq!(convert::size(&DbValue::Binary(vec![0; 10])), base + 10);
    assert_eq!(convert::size(&DbValue::DbNull), base);
}
