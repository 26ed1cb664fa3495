//! Values to and from MySQL as Spin 4.0.2 converts them (spinframework/spin
//! `crates/factor-outbound-mysql/src/client.rs`): each parameter becomes the
//! mysql_async value of its Rust type; a column's type is picked from its
//! MySQL type and its `UNSIGNED` and `BINARY` flags alone, and each value is
//! read as that type with mysql_common's `from_value_opt`. So `DECIMAL`,
//! `DATE`, `TIME`, `DATETIME`, `TIMESTAMP`, `YEAR`, `BIT`, `JSON`, `ENUM` and
//! `SET` columns are `other`, and a non-null value in one is
//! `value-conversion-failed`; `BOOLEAN` (`TINYINT(1)`) is `int8`; text with a
//! binary collation, and blob types other than `BLOB`/`TEXT`, are `binary`.

use super::{Column, DbValue, Error, ParameterValue};
use crate::capabilities::postgres::older::v2::DbDataType;
use mysql_async::Value;
use mysql_async::consts::{ColumnFlags, ColumnType};
use mysql_async::prelude::FromValue;

/// A parameter as mysql_async sends it: booleans as integers, strings and
/// binaries as bytes.
pub fn parameter(value: ParameterValue) -> Value {
    match value {
        ParameterValue::Boolean(v) => Value::from(v),
        ParameterValue::Int8(v) => Value::from(v),
        ParameterValue::Int16(v) => Value::from(v),
        ParameterValue::Int32(v) => Value::from(v),
        ParameterValue::Int64(v) => Value::from(v),
        ParameterValue::Uint8(v) => Value::from(v),
        ParameterValue::Uint16(v) => Value::from(v),
        ParameterValue::Uint32(v) => Value::from(v),
        ParameterValue::Uint64(v) => Value::from(v),
        ParameterValue::Floating32(v) => Value::from(v),
        ParameterValue::Floating64(v) => Value::from(v),
        ParameterValue::Str(v) => Value::from(v),
        ParameterValue::Binary(v) => Value::from(v),
        ParameterValue::DbNull => Value::NULL,
    }
}

/// The columns of a result; none for a statement without a result set.
pub fn columns(columns: &[mysql_async::Column]) -> Vec<Column> {
    columns
        .iter()
        .map(|column| Column {
            name: column.name_str().into_owned(),
            data_type: data_type(column),
        })
        .collect()
}

pub fn data_type(column: &mysql_async::Column) -> DbDataType {
    let kind = column.column_type();
    if kind.is_numeric_type() {
        numeric_type(kind, !column.flags().contains(ColumnFlags::UNSIGNED_FLAG))
    } else if kind.is_character_type() {
        character_type(kind, column.flags().contains(ColumnFlags::BINARY_FLAG))
    } else {
        DbDataType::Other
    }
}

fn numeric_type(kind: ColumnType, signed: bool) -> DbDataType {
    use ColumnType as C;
    match (kind, signed) {
        (C::MYSQL_TYPE_DOUBLE, _) => DbDataType::Floating64,
        (C::MYSQL_TYPE_FLOAT, _) => DbDataType::Floating32,
        (C::MYSQL_TYPE_INT24 | C::MYSQL_TYPE_LONG, true) => DbDataType::Int32,
        (C::MYSQL_TYPE_INT24 | C::MYSQL_TYPE_LONG, false) => DbDataType::Uint32,
        (C::MYSQL_TYPE_LONGLONG, true) => DbDataType::Int64,
        (C::MYSQL_TYPE_LONGLONG, false) => DbDataType::Uint64,
        (C::MYSQL_TYPE_SHORT, true) => DbDataType::Int16,
        (C::MYSQL_TYPE_SHORT, false) => DbDataType::Uint16,
        (C::MYSQL_TYPE_TINY, true) => DbDataType::Int8,
        (C::MYSQL_TYPE_TINY, false) => DbDataType::Uint8,
        // DECIMAL, NEWDECIMAL and YEAR are numeric too, but have no case.
        _ => DbDataType::Other,
    }
}

fn character_type(kind: ColumnType, binary: bool) -> DbDataType {
    use ColumnType as C;
    match (kind, binary) {
        // TEXT is a BLOB without the binary flag, BINARY and VARBINARY are
        // CHAR and VARCHAR (STRING and VAR_STRING) with it.
        (C::MYSQL_TYPE_BLOB | C::MYSQL_TYPE_STRING | C::MYSQL_TYPE_VAR_STRING, true) => {
            DbDataType::Binary
        }
        (C::MYSQL_TYPE_BLOB | C::MYSQL_TYPE_STRING | C::MYSQL_TYPE_VAR_STRING, false) => {
            DbDataType::Str
        }
        // VARCHAR is a character type that servers do not send in results.
        _ => DbDataType::Other,
    }
}

/// One row's values, by its columns' types.
pub fn row(mut row: mysql_async::Row, columns: &[Column]) -> Result<Vec<DbValue>, Error> {
    (0..row.len())
        .map(|index| entry(row.take(index), index, columns))
        .collect()
}

/// The value at `index`: no value or NULL is `db-null`.
pub fn entry(value: Option<Value>, index: usize, columns: &[Column]) -> Result<DbValue, Error> {
    match (value, columns.get(index)) {
        (None, _) => Ok(DbValue::DbNull),
        (_, None) => Err(Error::Other(format!("Can't get column at index {index}"))),
        (Some(Value::NULL), _) => Ok(DbValue::DbNull),
        (Some(value), Some(column)) => self::value(value, column),
    }
}

fn value(value: Value, column: &Column) -> Result<DbValue, Error> {
    Ok(match column.data_type {
        DbDataType::Binary => DbValue::Binary(to(value)?),
        DbDataType::Boolean => DbValue::Boolean(to(value)?),
        DbDataType::Floating32 => DbValue::Floating32(to(value)?),
        DbDataType::Floating64 => DbValue::Floating64(to(value)?),
        DbDataType::Int8 => DbValue::Int8(to(value)?),
        DbDataType::Int16 => DbValue::Int16(to(value)?),
        DbDataType::Int32 => DbValue::Int32(to(value)?),
        DbDataType::Int64 => DbValue::Int64(to(value)?),
        DbDataType::Str => DbValue::Str(to(value)?),
        DbDataType::Uint8 => DbValue::Uint8(to(value)?),
        DbDataType::Uint16 => DbValue::Uint16(to(value)?),
        DbDataType::Uint32 => DbValue::Uint32(to(value)?),
        DbDataType::Uint64 => DbValue::Uint64(to(value)?),
        // Spin formats the type with its bindings' `Debug`: `DbDataType::Other`.
        DbDataType::Other => {
            return Err(Error::ValueConversionFailed(format!(
                "Cannot convert value {value:?} in column {} data type DbDataType::Other",
                column.name
            )));
        }
    })
}

fn to<T: FromValue>(value: Value) -> Result<T, Error> {
    mysql_async::from_value_opt::<T>(value)
        .map_err(|e| Error::ValueConversionFailed(format!("{e}")))
}

/// A value's share of a result's size, as Spin counts it (`memory_size`).
pub fn size(value: &DbValue) -> usize {
    size_of::<DbValue>()
        + match value {
            DbValue::Str(s) => s.len(),
            DbValue::Binary(b) => b.len(),
            _ => 0,
        }
}
