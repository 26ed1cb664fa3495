//! The types of `spin:postgres/postgres@4.2.0`, the richest version: the one
//! every call is served in. Older versions' types ([`super::older`]) convert to
//! and from these. Case order and names follow the WIT (spinframework/spin
//! `wit/deps/spin-postgres@4.2.0/postgres.wit`); wasmtime checks them against
//! the component's imports when the component is linked.

use wasmtime::component::{ComponentType, Lift, Lower};

#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq)]
#[component(variant)]
pub enum Error {
    #[component(name = "connection-failed")]
    ConnectionFailed(String),
    #[component(name = "bad-parameter")]
    BadParameter(String),
    #[component(name = "query-failed")]
    QueryFailed(QueryError),
    #[component(name = "value-conversion-failed")]
    ValueConversionFailed(String),
    #[component(name = "other")]
    Other(String),
}

#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq)]
#[component(variant)]
pub enum QueryError {
    #[component(name = "text")]
    Text(String),
    #[component(name = "db-error")]
    DbError(DbError),
}

impl QueryError {
    /// What the versions before 4 carry for it: one string.
    pub fn into_text(self) -> String {
        match self {
            QueryError::Text(text) => text,
            QueryError::DbError(error) => error.as_text,
        }
    }
}

#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq)]
#[component(record)]
pub struct DbError {
    #[component(name = "as-text")]
    pub as_text: String,
    pub severity: String,
    pub code: String,
    pub message: String,
    pub detail: Option<String>,
    pub extras: Vec<(String, String)>,
}

#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq, Eq)]
#[component(variant)]
pub enum DbDataType {
    #[component(name = "boolean")]
    Boolean,
    #[component(name = "int8")]
    Int8,
    #[component(name = "int16")]
    Int16,
    #[component(name = "int32")]
    Int32,
    #[component(name = "int64")]
    Int64,
    #[component(name = "floating32")]
    Floating32,
    #[component(name = "floating64")]
    Floating64,
    #[component(name = "str")]
    Str,
    #[component(name = "binary")]
    Binary,
    #[component(name = "date")]
    Date,
    #[component(name = "time")]
    Time,
    #[component(name = "datetime")]
    Datetime,
    #[component(name = "timestamp")]
    Timestamp,
    #[component(name = "uuid")]
    Uuid,
    #[component(name = "jsonb")]
    Jsonb,
    #[component(name = "decimal")]
    Decimal,
    #[component(name = "range-int32")]
    RangeInt32,
    #[component(name = "range-int64")]
    RangeInt64,
    #[component(name = "range-decimal")]
    RangeDecimal,
    #[component(name = "array-int32")]
    ArrayInt32,
    #[component(name = "array-int64")]
    ArrayInt64,
    #[component(name = "array-decimal")]
    ArrayDecimal,
    #[component(name = "array-str")]
    ArrayStr,
    #[component(name = "interval")]
    Interval,
    #[component(name = "other")]
    Other(String),
}

/// Whether a range bound includes its value.
#[derive(ComponentType, Lift, Lower, Debug, Clone, Copy, PartialEq, Eq)]
#[component(enum)]
#[repr(u8)]
pub enum RangeBoundKind {
    #[component(name = "inclusive")]
    Inclusive,
    #[component(name = "exclusive")]
    Exclusive,
}

/// A range's lower and upper bounds; `None` is unbounded.
pub type Range<T> = (Option<(T, RangeBoundKind)>, Option<(T, RangeBoundKind)>);
pub type Date = (i32, u8, u8);
/// Hour, minute, second, nanosecond.
pub type Time = (u8, u8, u8, u32);
/// Year, month, day, hour, minute, second, nanosecond, in UTC.
pub type Datetime = (i32, u8, u8, u8, u8, u8, u32);

#[derive(ComponentType, Lift, Lower, Debug, Clone, Copy, PartialEq, Eq)]
#[component(record)]
pub struct Interval {
    pub micros: i64,
    pub days: i32,
    pub months: i32,
}

#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq)]
#[component(variant)]
pub enum DbValue {
    #[component(name = "boolean")]
    Boolean(bool),
    #[component(name = "int8")]
    Int8(i8),
    #[component(name = "int16")]
    Int16(i16),
    #[component(name = "int32")]
    Int32(i32),
    #[component(name = "int64")]
    Int64(i64),
    #[component(name = "floating32")]
    Floating32(f32),
    #[component(name = "floating64")]
    Floating64(f64),
    #[component(name = "str")]
    Str(String),
    #[component(name = "binary")]
    Binary(Vec<u8>),
    #[component(name = "date")]
    Date(Date),
    #[component(name = "time")]
    Time(Time),
    #[component(name = "datetime")]
    Datetime(Datetime),
    #[component(name = "timestamp")]
    Timestamp(i64),
    #[component(name = "uuid")]
    Uuid(String),
    #[component(name = "jsonb")]
    Jsonb(Vec<u8>),
    #[component(name = "decimal")]
    Decimal(String),
    #[component(name = "range-int32")]
    RangeInt32(Range<i32>),
    #[component(name = "range-int64")]
    RangeInt64(Range<i64>),
    #[component(name = "range-decimal")]
    RangeDecimal(Range<String>),
    #[component(name = "array-int32")]
    ArrayInt32(Vec<Option<i32>>),
    #[component(name = "array-int64")]
    ArrayInt64(Vec<Option<i64>>),
    #[component(name = "array-decimal")]
    ArrayDecimal(Vec<Option<String>>),
    #[component(name = "array-str")]
    ArrayStr(Vec<Option<String>>),
    #[component(name = "interval")]
    Interval(Interval),
    #[component(name = "db-null")]
    DbNull,
    /// A value of a type no other case holds, in PostgreSQL's binary format.
    #[component(name = "unsupported")]
    Unsupported(Vec<u8>),
}

#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq)]
#[component(variant)]
pub enum ParameterValue {
    #[component(name = "boolean")]
    Boolean(bool),
    #[component(name = "int8")]
    Int8(i8),
    #[component(name = "int16")]
    Int16(i16),
    #[component(name = "int32")]
    Int32(i32),
    #[component(name = "int64")]
    Int64(i64),
    #[component(name = "floating32")]
    Floating32(f32),
    #[component(name = "floating64")]
    Floating64(f64),
    #[component(name = "str")]
    Str(String),
    #[component(name = "binary")]
    Binary(Vec<u8>),
    #[component(name = "date")]
    Date(Date),
    #[component(name = "time")]
    Time(Time),
    #[component(name = "datetime")]
    Datetime(Datetime),
    #[component(name = "timestamp")]
    Timestamp(i64),
    #[component(name = "uuid")]
    Uuid(String),
    #[component(name = "jsonb")]
    Jsonb(Vec<u8>),
    #[component(name = "decimal")]
    Decimal(String),
    #[component(name = "range-int32")]
    RangeInt32(Range<i32>),
    #[component(name = "range-int64")]
    RangeInt64(Range<i64>),
    #[component(name = "range-decimal")]
    RangeDecimal(Range<String>),
    #[component(name = "array-int32")]
    ArrayInt32(Vec<Option<i32>>),
    #[component(name = "array-int64")]
    ArrayInt64(Vec<Option<i64>>),
    #[component(name = "array-decimal")]
    ArrayDecimal(Vec<Option<String>>),
    #[component(name = "array-str")]
    ArrayStr(Vec<Option<String>>),
    #[component(name = "interval")]
    Interval(Interval),
    #[component(name = "db-null")]
    DbNull,
}

#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq)]
#[component(record)]
pub struct Column {
    pub name: String,
    #[component(name = "data-type")]
    pub data_type: DbDataType,
}

#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq)]
#[component(record)]
pub struct RowSet {
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<DbValue>>,
}
