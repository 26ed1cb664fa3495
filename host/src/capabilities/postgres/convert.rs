//! Values between PostgreSQL (tokio-postgres's `ToSql`/`FromSql`) and 4.2.0's
//! `parameter-value` and `db-value`, mapped as Spin 4 maps them
//! (spinframework/spin `crates/factor-outbound-pg/src/types.rs`): a column's
//! PostgreSQL type picks the case (`int4` is `int32`, `numeric` is `decimal`
//! as a base-10 string, `timestamp` is `datetime` in UTC, `int4range` is
//! `range-int32`, `text[]` is `array-str`, ...); a type no case holds is
//! `unsupported` with PostgreSQL's binary encoding. Parameters are typed: a
//! parameter whose case does not fit the statement's placeholder type is an
//! error from tokio-postgres, as in Spin.
//!
//! Where this differs from Spin, it is to answer rather than fail: a
//! `timestamptz` column reads as `datetime` in UTC (Spin's conversion fails on
//! it), and a range bound at its type's maximum is a `bad-parameter` (the
//! range crate would panic normalising it).

use super::types::{
    Column, DbDataType, DbValue, Interval, ParameterValue, Range as WitRange, RangeBoundKind,
};
use anyhow::{Context, Result, anyhow};
use bytes::{Buf, BufMut, BytesMut};
use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use postgres_range::{BoundSided, BoundType, Normalizable, Range, RangeBound};
use rust_decimal::Decimal;
use std::error::Error as StdError;
use tokio_postgres::Row;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};

type BoxError = Box<dyn StdError + Sync + Send>;

/// The `data-type` of a column of PostgreSQL type `ty`.
pub fn data_type(ty: &Type) -> DbDataType {
    match *ty {
        Type::BOOL => DbDataType::Boolean,
        Type::BYTEA => DbDataType::Binary,
        Type::FLOAT4 => DbDataType::Floating32,
        Type::FLOAT8 => DbDataType::Floating64,
        Type::INT2 => DbDataType::Int16,
        Type::INT4 => DbDataType::Int32,
        Type::INT8 => DbDataType::Int64,
        Type::TEXT | Type::VARCHAR | Type::BPCHAR => DbDataType::Str,
        Type::TIMESTAMP | Type::TIMESTAMPTZ => DbDataType::Datetime,
        Type::DATE => DbDataType::Date,
        Type::TIME => DbDataType::Time,
        Type::UUID => DbDataType::Uuid,
        Type::JSONB => DbDataType::Jsonb,
        Type::NUMERIC => DbDataType::Decimal,
        Type::INT4_RANGE => DbDataType::RangeInt32,
        Type::INT8_RANGE => DbDataType::RangeInt64,
        Type::NUM_RANGE => DbDataType::RangeDecimal,
        Type::INT4_ARRAY => DbDataType::ArrayInt32,
        Type::INT8_ARRAY => DbDataType::ArrayInt64,
        Type::NUMERIC_ARRAY => DbDataType::ArrayDecimal,
        Type::TEXT_ARRAY | Type::VARCHAR_ARRAY | Type::BPCHAR_ARRAY => DbDataType::ArrayStr,
        Type::INTERVAL => DbDataType::Interval,
        _ => DbDataType::Other(ty.name().to_string()),
    }
}

pub fn columns(columns: &[tokio_postgres::Column]) -> Vec<Column> {
    columns
        .iter()
        .map(|column| Column {
            name: column.name().to_string(),
            data_type: data_type(column.type_()),
        })
        .collect()
}

/// One row's values, by each column's type.
pub fn row(row: &Row) -> Result<Vec<DbValue>> {
    (0..row.len()).map(|index| value(row, index)).collect()
}

/// The value of column `index`, `db-null` for NULL.
fn get<'a, T: FromSql<'a>>(
    row: &'a Row,
    index: usize,
    case: impl FnOnce(T) -> Result<DbValue>,
) -> Result<DbValue> {
    match row.try_get::<_, Option<T>>(index)? {
        Some(value) => case(value),
        None => Ok(DbValue::DbNull),
    }
}

fn value(row: &Row, index: usize) -> Result<DbValue> {
    let ty = row.columns()[index].type_();
    match *ty {
        Type::BOOL => get(row, index, |v| Ok(DbValue::Boolean(v))),
        Type::BYTEA => get(row, index, |v| Ok(DbValue::Binary(v))),
        Type::FLOAT4 => get(row, index, |v| Ok(DbValue::Floating32(v))),
        Type::FLOAT8 => get(row, index, |v| Ok(DbValue::Floating64(v))),
        Type::INT2 => get(row, index, |v| Ok(DbValue::Int16(v))),
        Type::INT4 => get(row, index, |v| Ok(DbValue::Int32(v))),
        Type::INT8 => get(row, index, |v| Ok(DbValue::Int64(v))),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR => get(row, index, |v| Ok(DbValue::Str(v))),
        Type::TIMESTAMP => get(row, index, |v: NaiveDateTime| {
            Ok(DbValue::Datetime(datetime_to_wit(v)))
        }),
        Type::TIMESTAMPTZ => get(row, index, |v: chrono::DateTime<chrono::Utc>| {
            Ok(DbValue::Datetime(datetime_to_wit(v.naive_utc())))
        }),
        Type::DATE => get(row, index, |v: NaiveDate| {
            Ok(DbValue::Date((
                v.year(),
                narrow(v.month()),
                narrow(v.day()),
            )))
        }),
        Type::TIME => get(row, index, |v: NaiveTime| Ok(DbValue::Time(time_to_wit(v)))),
        Type::UUID => get(row, index, |v: uuid::Uuid| Ok(DbValue::Uuid(v.to_string()))),
        Type::JSONB => get(row, index, |v: serde_json::Value| {
            Ok(DbValue::Jsonb(serde_json::to_vec(&v)?))
        }),
        Type::NUMERIC => get(row, index, |v: Decimal| Ok(DbValue::Decimal(v.to_string()))),
        Type::INT4_RANGE => get(row, index, |v: Range<i32>| {
            Ok(DbValue::RangeInt32(range_to_wit(&v, |x| *x)))
        }),
        Type::INT8_RANGE => get(row, index, |v: Range<i64>| {
            Ok(DbValue::RangeInt64(range_to_wit(&v, |x| *x)))
        }),
        Type::NUM_RANGE => get(row, index, |v: Range<Numeric>| {
            Ok(DbValue::RangeDecimal(range_to_wit(&v, |x| x.0.to_string())))
        }),
        Type::INT4_ARRAY => get(row, index, |v| Ok(DbValue::ArrayInt32(v))),
        Type::INT8_ARRAY => get(row, index, |v| Ok(DbValue::ArrayInt64(v))),
        Type::NUMERIC_ARRAY => get(row, index, |v: Vec<Option<Decimal>>| {
            Ok(DbValue::ArrayDecimal(
                v.into_iter().map(|d| d.map(|d| d.to_string())).collect(),
            ))
        }),
        Type::TEXT_ARRAY | Type::VARCHAR_ARRAY | Type::BPCHAR_ARRAY => {
            get(row, index, |v| Ok(DbValue::ArrayStr(v)))
        }
        Type::INTERVAL => get(row, index, |v: PgInterval| Ok(DbValue::Interval(v.0))),
        _ => get(row, index, |v: Raw| Ok(DbValue::Unsupported(v.0))),
    }
}

/// chrono's month, day, hour, ... always fit a `u8`.
fn narrow(value: u32) -> u8 {
    u8::try_from(value).unwrap_or(u8::MAX)
}

fn datetime_to_wit(v: NaiveDateTime) -> super::types::Datetime {
    let (date, time) = (v.date(), v.time());
    let (hour, minute, second, nano) = time_to_wit(time);
    (
        date.year(),
        narrow(date.month()),
        narrow(date.day()),
        hour,
        minute,
        second,
        nano,
    )
}

fn time_to_wit(v: NaiveTime) -> super::types::Time {
    (
        narrow(v.hour()),
        narrow(v.minute()),
        narrow(v.second()),
        v.nanosecond(),
    )
}

fn kind_to_wit(kind: BoundType) -> RangeBoundKind {
    match kind {
        BoundType::Inclusive => RangeBoundKind::Inclusive,
        BoundType::Exclusive => RangeBoundKind::Exclusive,
    }
}

fn kind_from_wit(kind: RangeBoundKind) -> BoundType {
    match kind {
        RangeBoundKind::Inclusive => BoundType::Inclusive,
        RangeBoundKind::Exclusive => BoundType::Exclusive,
    }
}

/// An empty range has no bounds, which reads as unbounded, as in Spin.
fn range_to_wit<T: PartialOrd + Normalizable, W>(
    range: &Range<T>,
    map: impl Fn(&T) -> W,
) -> WitRange<W> {
    let bound = |value: &T, kind| (map(value), kind_to_wit(kind));
    (
        range.lower().map(|b| bound(&b.value, b.type_)),
        range.upper().map(|b| bound(&b.value, b.type_)),
    )
}

fn range_from_wit<T, W>(
    (lower, upper): WitRange<W>,
    map: impl Fn(W) -> Result<T>,
) -> Result<Range<T>>
where
    T: PartialOrd + Normalizable,
{
    fn bound<S: BoundSided, T: PartialOrd, W>(
        bound: Option<(W, RangeBoundKind)>,
        map: &impl Fn(W) -> Result<T>,
    ) -> Result<Option<RangeBound<S, T>>> {
        bound
            .map(|(value, kind)| Ok(RangeBound::new(map(value)?, kind_from_wit(kind))))
            .transpose()
    }
    Ok(Range::new(bound(lower, &map)?, bound(upper, &map)?))
}

/// An integer bound postgres_range can normalise: it adds one to an
/// exclusive lower or inclusive upper bound, and panics at the maximum.
fn normalisable<T: PartialEq + std::fmt::Display>(max: T) -> impl Fn(T) -> Result<T> {
    move |value| {
        if value == max {
            Err(anyhow!("range bound {value} is out of range"))
        } else {
            Ok(value)
        }
    }
}

fn decimal(text: &str) -> Result<Decimal> {
    Decimal::from_str_exact(text).with_context(|| format!("invalid decimal {text}"))
}

fn date((year, month, day): (i32, u8, u8)) -> Result<NaiveDate> {
    NaiveDate::from_ymd_opt(year, month.into(), day.into())
        .ok_or_else(|| anyhow!("invalid date y={year}, m={month}, d={day}"))
}

fn time((hour, minute, second, nano): (u8, u8, u8, u32)) -> Result<NaiveTime> {
    NaiveTime::from_hms_nano_opt(hour.into(), minute.into(), second.into(), nano)
        .ok_or_else(|| anyhow!("invalid time {hour}:{minute}:{second}:{nano}"))
}

/// One parameter, ready for tokio-postgres.
pub type Parameter = Box<dyn ToSql + Send + Sync>;

/// A parameter as PostgreSQL takes it; an error names what is wrong with it.
pub fn parameter(value: ParameterValue) -> Result<Parameter> {
    Ok(match value {
        ParameterValue::Boolean(v) => Box::new(v),
        ParameterValue::Int8(v) => Box::new(v),
        ParameterValue::Int16(v) => Box::new(v),
        ParameterValue::Int32(v) => Box::new(v),
        ParameterValue::Int64(v) => Box::new(v),
        ParameterValue::Floating32(v) => Box::new(v),
        ParameterValue::Floating64(v) => Box::new(v),
        ParameterValue::Str(v) => Box::new(v),
        ParameterValue::Binary(v) => Box::new(v),
        ParameterValue::Date(v) => Box::new(date(v)?),
        ParameterValue::Time(v) => Box::new(time(v)?),
        ParameterValue::Datetime((year, month, day, hour, minute, second, nano)) => {
            Box::new(NaiveDateTime::new(
                date((year, month, day))?,
                time((hour, minute, second, nano))?,
            ))
        }
        // Seconds since the epoch, as Spin reads them.
        ParameterValue::Timestamp(v) => Box::new(
            chrono::DateTime::<chrono::Utc>::from_timestamp(v, 0)
                .ok_or_else(|| anyhow!("invalid epoch timestamp {v}"))?,
        ),
        ParameterValue::Uuid(v) => {
            Box::new(uuid::Uuid::parse_str(&v).with_context(|| format!("invalid UUID {v}"))?)
        }
        ParameterValue::Jsonb(v) => Box::new(
            serde_json::from_slice::<serde_json::Value>(&v)
                .with_context(|| format!("invalid JSON {}", String::from_utf8_lossy(&v)))?,
        ),
        ParameterValue::Decimal(v) => Box::new(decimal(&v)?),
        ParameterValue::RangeInt32(v) => Box::new(range_from_wit(v, normalisable(i32::MAX))?),
        ParameterValue::RangeInt64(v) => Box::new(range_from_wit(v, normalisable(i64::MAX))?),
        ParameterValue::RangeDecimal(v) => Box::new(range_from_wit(v, |text: String| {
            Ok(Numeric(decimal(&text)?))
        })?),
        ParameterValue::ArrayInt32(v) => Box::new(v),
        ParameterValue::ArrayInt64(v) => Box::new(v),
        ParameterValue::ArrayDecimal(v) => Box::new(
            v.iter()
                .map(|d| d.as_deref().map(decimal).transpose())
                .collect::<Result<Vec<_>>>()?,
        ),
        ParameterValue::ArrayStr(v) => Box::new(v),
        ParameterValue::Interval(v) => Box::new(PgInterval(v)),
        ParameterValue::DbNull => Box::new(Null),
    })
}

/// `numeric`, as a range's element (postgres_range needs `Normalizable`, a
/// no-op for a continuous type).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
struct Numeric(Decimal);

impl Normalizable for Numeric {
    fn normalize<S: BoundSided>(bound: RangeBound<S, Self>) -> RangeBound<S, Self> {
        bound
    }
}

impl<'a> FromSql<'a> for Numeric {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        Decimal::from_sql(ty, raw).map(Numeric)
    }

    fn accepts(ty: &Type) -> bool {
        <Decimal as FromSql>::accepts(ty)
    }
}

impl ToSql for Numeric {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        self.0.to_sql(ty, out)
    }

    fn accepts(ty: &Type) -> bool {
        <Decimal as ToSql>::accepts(ty)
    }

    to_sql_checked!();
}

/// `interval` in PostgreSQL's binary form: microseconds, days, months.
#[derive(Debug)]
struct PgInterval(Interval);

impl<'a> FromSql<'a> for PgInterval {
    fn from_sql(_: &Type, mut raw: &'a [u8]) -> Result<Self, BoxError> {
        if raw.len() != 16 {
            return Err(format!("an interval is 16 bytes, not {}", raw.len()).into());
        }
        Ok(PgInterval(Interval {
            micros: raw.get_i64(),
            days: raw.get_i32(),
            months: raw.get_i32(),
        }))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }
}

impl ToSql for PgInterval {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        out.put_i64(self.0.micros);
        out.put_i32(self.0.days);
        out.put_i32(self.0.months);
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }

    to_sql_checked!();
}

/// `db-null`: NULL for a placeholder of any type (an `Option::None` of a Rust
/// type would be checked against the placeholder's type).
#[derive(Debug)]
struct Null;

impl ToSql for Null {
    fn to_sql(&self, _: &Type, _: &mut BytesMut) -> Result<IsNull, BoxError> {
        Ok(IsNull::Yes)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// Any value, as the bytes PostgreSQL sent (`unsupported`).
struct Raw(Vec<u8>);

impl<'a> FromSql<'a> for Raw {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        Ok(Raw(raw.to_vec()))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// The bytes a value takes in a result, for the host's result size limit.
pub fn size(value: &DbValue) -> usize {
    let strings = |v: &[Option<String>]| v.iter().flatten().map(String::len).sum::<usize>();
    size_of::<DbValue>()
        + match value {
            DbValue::Str(v) | DbValue::Uuid(v) | DbValue::Decimal(v) => v.len(),
            DbValue::Binary(v) | DbValue::Jsonb(v) | DbValue::Unsupported(v) => v.len(),
            DbValue::RangeDecimal((lower, upper)) => {
                lower.as_ref().map_or(0, |b| b.0.len()) + upper.as_ref().map_or(0, |b| b.0.len())
            }
            DbValue::ArrayInt32(v) => v.len() * size_of::<Option<i32>>(),
            DbValue::ArrayInt64(v) => v.len() * size_of::<Option<i64>>(),
            DbValue::ArrayDecimal(v) | DbValue::ArrayStr(v) => {
                v.len() * size_of::<Option<String>>() + strings(v)
            }
            _ => 0,
        }
}
