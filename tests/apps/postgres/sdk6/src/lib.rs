//! PostgreSQL through spin-sdk 6: `spin:postgres/postgres@4.2.0`'s async
//! functions against the database of the component's `address` variable. Each
//! route answers `200` with one line per step, `<step>: <what came back>`.
//!
//! - `/async/query`: `open-async`, DDL and a parameterised insert with
//!   `execute-async`, the rows back through `query-async`'s stream, and a
//!   query that fails part-way (its error arrives on the future);
//! - `/async/builder`: the connection builder (`set-ca-root`, `build-async`);
//! - `/async/error`: PostgreSQL's structured error for a missing table;
//! - `/async/denied`: `open-async` of an address the manifest does not allow.

use spin_sdk::http::{IntoResponse, Request, Response};
use spin_sdk::http_service;
use spin_sdk::pg::{Connection, OpenOptions, ParameterValue as P, PgError};
use spin_sdk::variables;

#[http_service]
async fn handle_postgres(req: Request) -> anyhow::Result<impl IntoResponse> {
    let mut report = Vec::new();
    let outcome = match req.uri().path() {
        "/async/query" => streamed(&mut report).await,
        "/async/builder" => builder(&mut report).await,
        "/async/error" => structured_error(&mut report).await,
        "/async/denied" => {
            let opened = Connection::open("postgres://postgres@10.9.8.7:5432/x").await;
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

async fn streamed(report: &mut Vec<String>) -> Result<(), String> {
    let db = open().await?;
    db.execute("DROP TABLE IF EXISTS v4_async", NONE)
        .await
        .map_err(failed)?;
    db.execute(
        "CREATE TABLE v4_async (n int8 PRIMARY KEY, label text, amount numeric)",
        [],
    )
    .await
    .map_err(failed)?;
    let mut total = 0;
    for n in 1..=5i64 {
        total += db
            .execute(
                "INSERT INTO v4_async VALUES ($1, $2, $3)",
                [
                    P::Int64(n),
                    P::Str(format!("row {n}")),
                    P::Decimal(format!("{n}.5")),
                ],
            )
            .await
            .map_err(failed)?;
    }
    report.push(format!("inserted: {total}"));
    let mut result = db
        .query(
            "SELECT n, label, amount FROM v4_async WHERE n > $1 ORDER BY n",
            [P::Int64(2)],
        )
        .await
        .map_err(failed)?;
    let columns: Vec<String> = result
        .columns()
        .iter()
        .map(|c| format!("{}={:?}", c.name, c.data_type))
        .collect();
    report.push(format!("columns: {}", columns.join(" ")));
    while let Some(row) = result.rows().next().await {
        report.push(format!("row: {row:?}"));
    }
    report.push(format!("result: {:?}", result.result().await));
    let empty = db
        .query("SELECT n FROM v4_async WHERE n < 0", NONE)
        .await
        .map_err(failed)?;
    report.push(format!("empty columns: {}", empty.columns().len()));
    report.push(format!(
        "empty rows: {}",
        empty.collect().await.map_err(failed)?.len()
    ));
    // Fails at its third row (10 / 0): the rows before, then the error.
    let mut partial = db
        .query("SELECT 10 / (3 - n) FROM generate_series(1, 5) AS n", NONE)
        .await;
    match &mut partial {
        Ok(result) => {
            let mut rows = 0;
            while result.rows().next().await.is_some() {
                rows += 1;
            }
            report.push(format!("partial rows: {rows}"));
        }
        Err(error) => report.push(format!("partial: {error:?}")),
    }
    if let Ok(result) = partial {
        let outcome = result.result().await;
        report.push(format!("partial result: {}", outcome.is_err()));
    }
    Ok(())
}

async fn builder(report: &mut Vec<String>) -> Result<(), String> {
    let address = variables::get("address").await.map_err(failed)?;
    let with_root = Connection::open_with_options(
        &address,
        OpenOptions {
            ca_root: Some(spin_sdk::pg::Certificate::Text(
                "-----BEGIN CERTIFICATE-----".into(),
            )),
        },
    )
    .await;
    report.push(format!("with root: {:?}", with_root.map(drop)));
    let db = Connection::open_with_options(&address, OpenOptions::default())
        .await
        .map_err(failed)?;
    let mut result = db
        .query("SELECT 40 + 2 AS answer", NONE)
        .await
        .map_err(failed)?;
    let row = result.rows().next().await;
    report.push(format!("built: {row:?}"));
    Ok(())
}

async fn structured_error(report: &mut Vec<String>) -> Result<(), String> {
    let db = open().await?;
    match db.execute("DELETE FROM no_such_table", NONE).await {
        Err(spin_sdk::pg::Error::PgError(PgError::QueryFailed(
            spin_sdk::pg::QueryError::DbError(error),
        ))) => {
            report.push(format!("code: {}", error.code));
            report.push(format!("severity: {}", error.severity));
            report.push(format!("message: {}", error.message));
        }
        other => report.push(format!("unexpected: {other:?}")),
    }
    Ok(())
}
