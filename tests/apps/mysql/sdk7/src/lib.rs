//! MySQL through spin-sdk 7: `spin:mysql/mysql@3.0.0`'s async functions
//! against the database of the component's `address` variable. Each route
//! answers `200` with one line per step, `<step>: <what came back>`.
//!
//! - `/v3/query`: `open`, DDL and parameterised inserts with `execute`, the
//!   rows back through `query`'s stream, and its result;
//! - `/v3/partial`: a query whose second row fails to convert: the first row
//!   streams, then the error arrives on the future;
//! - `/v3/errors`: a query and an execute of a missing table;
//! - `/v3/denied`: `open` of an address the manifest does not allow.

use spin_sdk::http::{IntoResponse, Request, Response};
use spin_sdk::http_service;
use spin_sdk::mysql::{Connection, ParameterValue as P, QueryResult};
use spin_sdk::variables;

#[http_service]
async fn handle_mysql(req: Request) -> anyhow::Result<impl IntoResponse> {
    let mut report = Vec::new();
    let outcome = match req.uri().path() {
        "/v3/query" => streamed(&mut report).await,
        "/v3/partial" => partial(&mut report).await,
        "/v3/errors" => errors(&mut report).await,
        "/v3/denied" => {
            let opened = Connection::open("mysql://spin@10.9.8.7/spin").await;
            report.push(format!("denied: {:?}", opened.map(drop)));
            Ok(())
        }
        _ => Err("no such route".to_string()),
    };
    if let Err(error) = outcome {
        report.push(format!("failed: {error}"));
    }
    Ok(Response::builder()
        .status(200)
        .header("content-type", "text/plain")
        .body(report.join("\n")))
}

/// No parameters (an empty array literal leaves its element type open).
const NONE: [P; 0] = [];

fn failed(error: impl std::fmt::Debug) -> String {
    format!("{error:?}")
}

async fn open() -> Result<Connection, String> {
    let address = variables::get("address").await.map_err(failed)?;
    Connection::open(address).await.map_err(failed)
}

/// Reports `result`'s columns, each row as it streams, then how it ended.
async fn report_rows(report: &mut Vec<String>, result: QueryResult) {
    let (columns, mut rows, outcome) = result.into_inner();
    let columns: Vec<String> = columns
        .iter()
        .map(|c| format!("{}={:?}", c.name, c.data_type))
        .collect();
    report.push(format!("columns: {}", columns.join(" ")));
    while let Some(row) = rows.next().await {
        report.push(format!("row: {row:?}"));
    }
    report.push(format!("result: {:?}", outcome.await));
}

async fn streamed(report: &mut Vec<String>) -> Result<(), String> {
    let db = open().await?;
    db.execute("DROP TABLE IF EXISTS v3_items", NONE)
        .await
        .map_err(failed)?;
    db.execute(
        "CREATE TABLE v3_items (n BIGINT PRIMARY KEY, label VARCHAR(16), \
         ratio DOUBLE, flag BOOLEAN, big BIGINT UNSIGNED)",
        NONE,
    )
    .await
    .map_err(failed)?;
    for n in 1..=5i64 {
        db.execute(
            "INSERT INTO v3_items VALUES (?, ?, ?, ?, ?)",
            [
                P::Int64(n),
                P::Str(format!("row {n}")),
                P::Floating64(n as f64 + 0.5),
                P::Boolean(n % 2 == 0),
                P::Uint64(u64::MAX - n as u64),
            ],
        )
        .await
        .map_err(failed)?;
    }
    report.push("inserted: 5".to_string());
    let result = db
        .query(
            "SELECT n, label, ratio, flag, big FROM v3_items WHERE n > ? ORDER BY n",
            [P::Int8(2)],
        )
        .await
        .map_err(failed)?;
    report_rows(report, result).await;
    let empty = db
        .query("SELECT n FROM v3_items WHERE n < 0", NONE)
        .await
        .map_err(failed)?;
    report.push(format!("empty columns: {}", empty.columns().len()));
    report.push(format!(
        "empty rows: {}",
        empty.collect().await.map_err(failed)?.len()
    ));
    Ok(())
}

async fn partial(report: &mut Vec<String>) -> Result<(), String> {
    let db = open().await?;
    // The first row's day is NULL (it reads); the second's is a DATE, which no
    // case holds.
    let result = db
        .query(
            "SELECT 1 AS n, CAST(NULL AS DATE) AS day UNION ALL SELECT 2, DATE '2024-02-29'",
            NONE,
        )
        .await
        .map_err(failed)?;
    report_rows(report, result).await;
    Ok(())
}

async fn errors(report: &mut Vec<String>) -> Result<(), String> {
    let db = open().await?;
    let query = db.query("SELECT * FROM no_such_table", NONE).await;
    report.push(format!("query: {:?}", query.map(drop)));
    let execute = db.execute("DELETE FROM no_such_table", NONE).await;
    report.push(format!("execute: {execute:?}"));
    Ok(())
}
