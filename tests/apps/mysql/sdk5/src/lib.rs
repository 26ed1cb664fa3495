//! MySQL through spin-sdk 5's `fermyon:spin/mysql@2.0.0`, each route a small
//! script against the database of the component's `address` variable. Each
//! answers `200` with a report, one line per step: `<step>: <what came back>`
//! (values in the SDK's debug form), so the test can assert every value; a
//! failed step reports its error and stops.
//!
//! - `/v2`: DDL, a parameterised insert of every parameter case, NULLs, and
//!   the rows read back with their column types;
//! - `/v2/other`: columns of types no case holds (DECIMAL, DATE, ...): NULL in
//!   them reads, a value is a conversion failure (as in Spin);
//! - `/v2/errors`: a missing table, bad SQL, a value out of its column's
//!   range, a parameter count mismatch (which closes the connection);
//! - `/v2/session`: a session variable set on one connection, then read on
//!   the next one opened (from the pool: a fresh session, as in Spin);
//! - `/v2/denied`: an address the manifest does not allow, a wrong password,
//!   and an allowed address asking for TLS.

use spin_sdk::http::{Request, Response};
use spin_sdk::mysql::{Connection, ParameterValue as P};
use spin_sdk::{http_component, variables};

#[http_component]
fn handle(req: Request) -> Response {
    let mut report = Vec::new();
    let outcome = match req.path() {
        "/v2" => types(&mut report),
        "/v2/other" => other(&mut report),
        "/v2/errors" => errors(&mut report),
        "/v2/denied" => denied(&mut report),
        "/v2/session" => session(&mut report),
        _ => return Response::new(404, "no such route"),
    };
    if let Err(error) = outcome {
        report.push(format!("failed: {error}"));
    }
    Response::new(200, report.join("\n"))
}

type Step = Result<(), String>;

fn variable(name: &str) -> Result<String, String> {
    variables::get(name).map_err(|e| format!("variable {name}: {e:?}"))
}

fn failed(error: impl std::fmt::Debug) -> String {
    format!("{error:?}")
}

fn open() -> Result<Connection, String> {
    Connection::open(&variable("address")?).map_err(failed)
}

/// Runs `statement` and reports its columns (`name=type`) and rows.
fn select(report: &mut Vec<String>, db: &Connection, statement: &str) -> Step {
    let set = db.query(statement, &[]).map_err(failed)?;
    let columns: Vec<String> = set
        .columns
        .iter()
        .map(|c| format!("{}={:?}", c.name, c.data_type))
        .collect();
    report.push(format!("columns: {}", columns.join(" ")));
    for row in &set.rows {
        report.push(format!("row: {row:?}"));
    }
    Ok(())
}

fn types(report: &mut Vec<String>) -> Step {
    let db = open()?;
    db.execute("DROP TABLE IF EXISTS v2_items", &[])
        .map_err(failed)?;
    db.execute(
        "CREATE TABLE v2_items (id INT PRIMARY KEY, flag BOOLEAN, tiny TINYINT, \
         small SMALLINT, medium MEDIUMINT, big BIGINT, utiny TINYINT UNSIGNED, \
         usmall SMALLINT UNSIGNED, uint INT UNSIGNED, ubig BIGINT UNSIGNED, \
         share FLOAT, ratio DOUBLE, name VARCHAR(32), note TEXT, code CHAR(4), \
         data VARBINARY(16), bytes BLOB)",
        &[],
    )
    .map_err(failed)?;
    db.execute(
        "INSERT INTO v2_items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        &[
            P::Int32(1),
            P::Boolean(true),
            P::Int8(-8),
            P::Int16(-300),
            P::Int32(-70000),
            P::Int64(1 << 40),
            P::Uint8(255),
            P::Uint16(65535),
            P::Uint32(4_000_000_000),
            P::Uint64(u64::MAX),
            P::Floating32(1.5),
            P::Floating64(0.25),
            P::Str("ada".into()),
            P::Str("hé\nthere".into()),
            P::Str("ab".into()),
            P::Binary(vec![0, 1, 255]),
            P::Binary(vec![7; 3]),
        ],
    )
    .map_err(failed)?;
    db.execute(
        "INSERT INTO v2_items (id, name) VALUES (?, ?)",
        &[P::Int64(2), P::DbNull],
    )
    .map_err(failed)?;
    report.push("inserted: 2".to_string());
    select(report, &db, "SELECT * FROM v2_items ORDER BY id")?;
    let set = db
        .query(
            "SELECT id FROM v2_items WHERE name = ? OR flag = ?",
            &[P::Str("nobody".into()), P::Boolean(true)],
        )
        .map_err(failed)?;
    report.push(format!("by parameter: {:?}", set.rows));
    Ok(())
}

fn other(report: &mut Vec<String>) -> Step {
    let db = open()?;
    db.execute("DROP TABLE IF EXISTS v2_other", &[])
        .map_err(failed)?;
    db.execute(
        "CREATE TABLE v2_other (id INT PRIMARY KEY, amount DECIMAL(10, 2), day DATE, \
         at DATETIME, doc JSON)",
        &[],
    )
    .map_err(failed)?;
    db.execute("INSERT INTO v2_other (id) VALUES (1)", &[])
        .map_err(failed)?;
    select(report, &db, "SELECT * FROM v2_other")?;
    db.execute(
        "INSERT INTO v2_other VALUES (2, 12.5, '2024-02-29', '1999-12-31 23:59:59', '[1]')",
        &[],
    )
    .map_err(failed)?;
    let amount = db.query("SELECT amount FROM v2_other WHERE id = 2", &[]);
    report.push(format!("decimal: {:?}", amount.map(|set| set.rows)));
    let day = db.query("SELECT day FROM v2_other WHERE id = 2", &[]);
    report.push(format!("date: {:?}", day.map(|set| set.rows)));
    Ok(())
}

fn errors(report: &mut Vec<String>) -> Step {
    let db = open()?;
    let missing = db.query("SELECT * FROM no_such_table", &[]);
    report.push(format!("missing table: {:?}", missing.map(|set| set.rows)));
    let bad = db.execute("CREATE TABLE (", &[]);
    report.push(format!("bad sql: {bad:?}"));
    db.execute("DROP TABLE IF EXISTS v2_small", &[])
        .map_err(failed)?;
    db.execute("CREATE TABLE v2_small (n TINYINT)", &[])
        .map_err(failed)?;
    let range = db.execute("INSERT INTO v2_small VALUES (?)", &[P::Int32(300)]);
    report.push(format!("out of range: {range:?}"));
    // The server's errors leave the connection usable.
    let after = db.query("SELECT COUNT(*) FROM v2_small", &[]);
    report.push(format!("after: {:?}", after.map(|set| set.rows)));
    // A driver error (here a parameter count mismatch) makes mysql_async close
    // the connection, in Spin too: the calls after it fail.
    let count = db.query("SELECT ?", &[]);
    report.push(format!("parameter count: {:?}", count.map(|set| set.rows)));
    let closed = db.query("SELECT 1", &[]);
    report.push(format!("closed: {:?}", closed.map(|set| set.rows)));
    drop(db);
    // Its pool does not hand the closed connection out again.
    let reopened = open()?.query("SELECT 2", &[]);
    report.push(format!("reopened: {:?}", reopened.map(|set| set.rows)));
    Ok(())
}

fn session(report: &mut Vec<String>) -> Step {
    let db = open()?;
    db.execute("SET @spin_mark = 42", &[]).map_err(failed)?;
    let set = db.query("SELECT @spin_mark", &[]).map_err(failed)?;
    report.push(format!("set: {:?}", set.rows));
    drop(db);
    let set = open()?.query("SELECT @spin_mark", &[]).map_err(failed)?;
    report.push(format!("next: {:?}", set.rows));
    Ok(())
}

fn denied(report: &mut Vec<String>) -> Step {
    let unlisted = Connection::open("mysql://spin:spin@127.0.0.1:1/spin");
    report.push(format!("unlisted: {:?}", unlisted.map(drop)));
    let password = Connection::open(&variable("wrong_password")?);
    report.push(format!("wrong password: {:?}", password.map(drop)));
    let tls = Connection::open(&variable("with_tls")?);
    report.push(format!("tls: {:?}", tls.map(drop)));
    Ok(())
}
