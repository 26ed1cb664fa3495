//! The types of the versions before 4, converted to and from 4.2.0's as Spin
//! converts them (spinframework/spin `crates/world/src/conversions.rs`):
//! `spin:postgres/postgres@3.0.0`, and `fermyon:spin/postgres@2.0.0`, whose
//! types are `fermyon:spin/rdbms-types@2.0.0`: [`v2`] and [`Error`] are also
//! MySQL's, in both its versions (`super::super::mysql`).
//! A value or column type an older version has no case for is `unsupported`
//! or `other`; an unsigned parameter (2.0.0 only) is refused.

use super::types as v4;
use wasmtime::component::{ComponentType, Lift, Lower};

/// The `error` of 2.0.0 and 3.0.0 (the same cases): `query-failed` is a string.
#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq, Eq)]
#[component(variant)]
pub enum Error {
    #[component(name = "connection-failed")]
    ConnectionFailed(String),
    #[component(name = "bad-parameter")]
    BadParameter(String),
    #[component(name = "query-failed")]
    QueryFailed(String),
    #[component(name = "value-conversion-failed")]
    ValueConversionFailed(String),
    #[component(name = "other")]
    Other(String),
}

impl From<v4::Error> for Error {
    fn from(error: v4::Error) -> Self {
        match error {
            v4::Error::ConnectionFailed(e) => Error::ConnectionFailed(e),
            v4::Error::BadParameter(e) => Error::BadParameter(e),
            v4::Error::QueryFailed(e) => Error::QueryFailed(e.into_text()),
            v4::Error::ValueConversionFailed(e) => Error::ValueConversionFailed(e),
            v4::Error::Other(e) => Error::Other(e),
        }
    }
}

/// Declares an older version's `db-data-type` enum, `db-value` and
/// `parameter-value` variants and its `column` and `row-set` records: the
/// cases both versions share first, then the version's own, in WIT order.
macro_rules! older_types {
    (
        $module:ident,
        types { $($type:ident = $type_name:literal),* },
        values { $($value:ident($payload:ty) = $value_name:literal),* }
    ) => {
        pub mod $module {
            use wasmtime::component::{ComponentType, Lift, Lower};

            #[derive(ComponentType, Lift, Lower, Debug, Clone, Copy, PartialEq, Eq)]
            #[component(enum)]
            #[repr(u8)]
            #[allow(
                dead_code,
                reason = "every WIT case is declared for the type to match the interface; \
                          a PostgreSQL column is never 2.0.0's unsigned types (MySQL's are)"
            )]
            pub enum DbDataType {
                #[component(name = "boolean")] Boolean,
                #[component(name = "int8")] Int8,
                #[component(name = "int16")] Int16,
                #[component(name = "int32")] Int32,
                #[component(name = "int64")] Int64,
                $(#[component(name = $type_name)] $type,)*
                #[component(name = "other")] Other,
            }

            #[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq)]
            #[component(variant)]
            pub enum DbValue {
                #[component(name = "boolean")] Boolean(bool),
                #[component(name = "int8")] Int8(i8),
                #[component(name = "int16")] Int16(i16),
                #[component(name = "int32")] Int32(i32),
                #[component(name = "int64")] Int64(i64),
                $(#[component(name = $value_name)] $value($payload),)*
                #[component(name = "db-null")] DbNull,
                #[component(name = "unsupported")] Unsupported,
            }

            #[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq)]
            #[component(variant)]
            pub enum ParameterValue {
                #[component(name = "boolean")] Boolean(bool),
                #[component(name = "int8")] Int8(i8),
                #[component(name = "int16")] Int16(i16),
                #[component(name = "int32")] Int32(i32),
                #[component(name = "int64")] Int64(i64),
                $(#[component(name = $value_name)] $value($payload),)*
                #[component(name = "db-null")] DbNull,
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

            impl From<super::v4::RowSet> for RowSet {
                fn from(set: super::v4::RowSet) -> Self {
                    RowSet {
                        columns: set
                            .columns
                            .into_iter()
                            .map(|column| Column {
                                name: column.name,
                                data_type: column.data_type.into(),
                            })
                            .collect(),
                        rows: set
                            .rows
                            .into_iter()
                            .map(|row| row.into_iter().map(DbValue::from).collect())
                            .collect(),
                    }
                }
            }
        }
    };
}

older_types!(
    v3,
    types {
        Floating32 = "floating32", Floating64 = "floating64", Str = "str", Binary = "binary",
        Date = "date", Time = "time", Datetime = "datetime", Timestamp = "timestamp"
    },
    values {
        Floating32(f32) = "floating32", Floating64(f64) = "floating64", Str(String) = "str",
        Binary(Vec<u8>) = "binary", Date(super::v4::Date) = "date", Time(super::v4::Time) = "time",
        Datetime(super::v4::Datetime) = "datetime", Timestamp(i64) = "timestamp"
    }
);

older_types!(
    v2,
    types {
        Uint8 = "uint8", Uint16 = "uint16", Uint32 = "uint32", Uint64 = "uint64",
        Floating32 = "floating32", Floating64 = "floating64", Str = "str", Binary = "binary"
    },
    values {
        Uint8(u8) = "uint8", Uint16(u16) = "uint16", Uint32(u32) = "uint32", Uint64(u64) = "uint64",
        Floating32(f32) = "floating32", Floating64(f64) = "floating64", Str(String) = "str",
        Binary(Vec<u8>) = "binary"
    }
);

impl From<v4::DbDataType> for v3::DbDataType {
    fn from(data_type: v4::DbDataType) -> Self {
        use v3::DbDataType as T;
        match data_type {
            v4::DbDataType::Boolean => T::Boolean,
            v4::DbDataType::Int8 => T::Int8,
            v4::DbDataType::Int16 => T::Int16,
            v4::DbDataType::Int32 => T::Int32,
            v4::DbDataType::Int64 => T::Int64,
            v4::DbDataType::Floating32 => T::Floating32,
            v4::DbDataType::Floating64 => T::Floating64,
            v4::DbDataType::Str => T::Str,
            v4::DbDataType::Binary => T::Binary,
            v4::DbDataType::Date => T::Date,
            v4::DbDataType::Time => T::Time,
            v4::DbDataType::Datetime => T::Datetime,
            v4::DbDataType::Timestamp => T::Timestamp,
            _ => T::Other,
        }
    }
}

impl From<v4::DbDataType> for v2::DbDataType {
    fn from(data_type: v4::DbDataType) -> Self {
        use v2::DbDataType as T;
        match data_type {
            v4::DbDataType::Boolean => T::Boolean,
            v4::DbDataType::Int8 => T::Int8,
            v4::DbDataType::Int16 => T::Int16,
            v4::DbDataType::Int32 => T::Int32,
            v4::DbDataType::Int64 => T::Int64,
            v4::DbDataType::Floating32 => T::Floating32,
            v4::DbDataType::Floating64 => T::Floating64,
            v4::DbDataType::Str => T::Str,
            v4::DbDataType::Binary => T::Binary,
            _ => T::Other,
        }
    }
}

impl From<v4::DbValue> for v3::DbValue {
    fn from(value: v4::DbValue) -> Self {
        use v3::DbValue as V;
        match value {
            v4::DbValue::Boolean(v) => V::Boolean(v),
            v4::DbValue::Int8(v) => V::Int8(v),
            v4::DbValue::Int16(v) => V::Int16(v),
            v4::DbValue::Int32(v) => V::Int32(v),
            v4::DbValue::Int64(v) => V::Int64(v),
            v4::DbValue::Floating32(v) => V::Floating32(v),
            v4::DbValue::Floating64(v) => V::Floating64(v),
            v4::DbValue::Str(v) => V::Str(v),
            v4::DbValue::Binary(v) => V::Binary(v),
            v4::DbValue::Date(v) => V::Date(v),
            v4::DbValue::Time(v) => V::Time(v),
            v4::DbValue::Datetime(v) => V::Datetime(v),
            v4::DbValue::Timestamp(v) => V::Timestamp(v),
            v4::DbValue::DbNull => V::DbNull,
            _ => V::Unsupported,
        }
    }
}

impl From<v4::DbValue> for v2::DbValue {
    fn from(value: v4::DbValue) -> Self {
        use v2::DbValue as V;
        match value {
            v4::DbValue::Boolean(v) => V::Boolean(v),
            v4::DbValue::Int8(v) => V::Int8(v),
            v4::DbValue::Int16(v) => V::Int16(v),
            v4::DbValue::Int32(v) => V::Int32(v),
            v4::DbValue::Int64(v) => V::Int64(v),
            v4::DbValue::Floating32(v) => V::Floating32(v),
            v4::DbValue::Floating64(v) => V::Floating64(v),
            v4::DbValue::Str(v) => V::Str(v),
            v4::DbValue::Binary(v) => V::Binary(v),
            v4::DbValue::DbNull => V::DbNull,
            _ => V::Unsupported,
        }
    }
}

impl From<v3::ParameterValue> for v4::ParameterValue {
    fn from(value: v3::ParameterValue) -> Self {
        use v3::ParameterValue as P;
        match value {
            P::Boolean(v) => Self::Boolean(v),
            P::Int8(v) => Self::Int8(v),
            P::Int16(v) => Self::Int16(v),
            P::Int32(v) => Self::Int32(v),
            P::Int64(v) => Self::Int64(v),
            P::Floating32(v) => Self::Floating32(v),
            P::Floating64(v) => Self::Floating64(v),
            P::Str(v) => Self::Str(v),
            P::Binary(v) => Self::Binary(v),
            P::Date(v) => Self::Date(v),
            P::Time(v) => Self::Time(v),
            P::Datetime(v) => Self::Datetime(v),
            P::Timestamp(v) => Self::Timestamp(v),
            P::DbNull => Self::DbNull,
        }
    }
}

impl TryFrom<v2::ParameterValue> for v4::ParameterValue {
    type Error = Error;

    fn try_from(value: v2::ParameterValue) -> Result<Self, Error> {
        use v2::ParameterValue as P;
        Ok(match value {
            P::Boolean(v) => Self::Boolean(v),
            P::Int8(v) => Self::Int8(v),
            P::Int16(v) => Self::Int16(v),
            P::Int32(v) => Self::Int32(v),
            P::Int64(v) => Self::Int64(v),
            P::Uint8(_) | P::Uint16(_) | P::Uint32(_) | P::Uint64(_) => {
                return Err(Error::ValueConversionFailed(
                    "Postgres does not support unsigned integers".to_string(),
                ));
            }
            P::Floating32(v) => Self::Floating32(v),
            P::Floating64(v) => Self::Floating64(v),
            P::Str(v) => Self::Str(v),
            P::Binary(v) => Self::Binary(v),
            P::DbNull => Self::DbNull,
        })
    }
}
