//! PostgreSQL through spin-sdk 5's three interfaces, each route a small
//! script against the database of the component's `address` (key=value form)
//! or `url` (URL form) variable. Each answers `200` with a report, one line per
//! step: `<step>: <what came back>` (values in the SDK's debug form), so the
//! test can assert every value; a failed step reports its error and stops.
//!
//! - `/v2`: `fermyon:spin/postgres@2.0.0` (rdbms-types): DDL, a parameterised
//!   insert of each type it has, NULLs, an unsigned parameter (refused), a select;
//! - `/v3`: `spin:postgres/postgres@3.0.0` over the URL form: dates, times,
//!   timestamps, and a type it has no case for;
//! - `/v4`: `spin:postgres/postgres@4.0.0` (sync): every type family of 4.x
//!   inserted through parameters and read back, and values PostgreSQL wrote;
//! - `/denied`: opens an address the manifest does not allow.

use spin_sdk::http::{Request, Response};
use spin_sdk::{http_component, variables};

#[http_component]
fn handle(req: Request) -> Response {
    let mut report = Vec::new();
    let outcome = match req.path() {
        "/v2" => v2(&mut report),
        "/v3" => v3(&mut report),
        "/v4" => v4(&mut report),
        "/denied" => denied(&mut report),
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

fn v2(report: &mut Vec<String>) -> Step {
    use spin_sdk::pg::{Connection, ParameterValue as P};
    let db = Connection::open(&variable("address")?).map_err(failed)?;
    db.execute("DROP TABLE IF EXISTS v2_items", &[])
        .map_err(failed)?;
    db.execute(
        "CREATE TABLE v2_items (id int4 PRIMARY KEY, flag bool, small int2, big int8, \
         ratio float8, share float4, name text, data bytea, code varchar(8))",
        &[],
    )
    .map_err(failed)?;
    let inserted = db
        .execute(
            "INSERT INTO v2_items VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9), \
             (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
            &[
                P::Int32(1),
                P::Boolean(true),
                P::Int16(-3),
                P::Int64(1 << 40),
                P::Floating64(0.25),
                P::Floating32(1.5),
                P::Str("ada".into()),
                P::Binary(vec![0, 1, 255]),
                P::DbNull,
            ],
        )
        .map_err(failed)?;
    report.push(format!("inserted: {inserted}"));
    let unsigned = db.execute("INSERT INTO v2_items (id) VALUES ($1)", &[P::Uint32(3)]);
    report.push(format!("unsigned: {unsigned:?}"));
    let set = db
        .query(
            "SELECT * FROM v2_items WHERE id >= $1 ORDER BY id",
            &[P::Int32(1)],
        )
        .map_err(failed)?;
    let columns: Vec<String> = set
        .columns
        .iter()
        .map(|c| format!("{}={:?}", c.name, c.data_type))
        .collect();
    report.push(format!("columns: {}", columns.join(" ")));
    for row in &set.rows {
        report.push(format!("row: {row:?}"));
    }
    let missing = db.query("SELECT * FROM no_such_table", &[]);
    report.push(format!("missing table: {missing:?}"));
    Ok(())
}

fn v3(report: &mut Vec<String>) -> Step {
    use spin_sdk::pg3::{Connection, ParameterValue as P};
    let db = Connection::open(&variable("url")?).map_err(failed)?;
    db.execute("DROP TABLE IF EXISTS v3_times", &[])
        .map_err(failed)?;
    db.execute(
        "CREATE TABLE v3_times (day date, at time, local timestamp, instant timestamptz, tag uuid)",
        &[],
    )
    .map_err(failed)?;
    let inserted = db
        .execute(
            "INSERT INTO v3_times VALUES ($1, $2, $3, $4, NULL), \
             ('2525-12-25', '04:05:06.789', '1989-11-24 01:02:03', '2000-01-01 00:00:00+02', \
              'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')",
            &[
                P::Date((2024, 2, 29)),
                P::Time((23, 59, 58, 5000)),
                P::Datetime((1999, 12, 31, 23, 59, 59, 0)),
                P::Timestamp(86_400),
            ],
        )
        .map_err(failed)?;
    report.push(format!("inserted: {inserted}"));
    let set = db
        .query("SELECT * FROM v3_times ORDER BY day", &[])
        .map_err(failed)?;
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

fn v4(report: &mut Vec<String>) -> Step {
    use spin_sdk::pg4::{Connection, Interval, ParameterValue as P, RangeBoundKind as K};
    let db = Connection::open(&variable("address")?).map_err(failed)?;
    db.execute("DROP TABLE IF EXISTS v4_kinds", &[])
        .map_err(failed)?;
    db.execute(
        "CREATE TABLE v4_kinds (id serial PRIMARY KEY, tag uuid, doc jsonb, amount numeric, \
         r4 int4range, r8 int8range, rn numrange, a4 int4[], a8 int8[], an numeric[], \
         astr text[], span interval, addr inet)",
        &[],
    )
    .map_err(failed)?;
    let inserted = db
        .execute(
            "INSERT INTO v4_kinds (tag, doc, amount, r4, r8, rn, a4, a8, an, astr, span) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            &[
                P::Uuid("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11".into()),
                P::Jsonb(br#"{"b": [1, 2], "a": null}"#.to_vec()),
                P::Decimal("123456789.123456789".into()),
                P::RangeInt32((Some((1, K::Exclusive)), Some((40, K::Inclusive)))),
                P::RangeInt64((None, Some((1 << 40, K::Exclusive)))),
                P::RangeDecimal((Some(("0.5".into(), K::Inclusive)), None)),
                P::ArrayInt32(vec![Some(1), None, Some(-3)]),
                P::ArrayInt64(vec![Some(1 << 40)]),
                P::ArrayDecimal(vec![Some("1.25".into()), None]),
                P::ArrayStr(vec![Some("hello".into()), None, Some("mum".into())]),
                P::Interval(Interval {
                    micros: 14_706_700_000,
                    days: 3,
                    months: 14,
                }),
            ],
        )
        .map_err(failed)?;
    report.push(format!("inserted: {inserted}"));
    db.execute(
        "INSERT INTO v4_kinds (doc, amount, r4, rn, a4, astr, span, addr) VALUES \
         ('[true]', 0.001, '[5,5)', numrange(NULL, 100), '{}', '{\"x y\"}', \
          'P1Y2M3DT4H5M6.7S', '10.1.2.3')",
        &[],
    )
    .map_err(failed)?;
    db.execute("INSERT INTO v4_kinds (tag) VALUES ($1)", &[P::DbNull])
        .map_err(failed)?;
    let set = db
        .query("SELECT * FROM v4_kinds ORDER BY id", &[])
        .map_err(failed)?;
    let columns: Vec<String> = set
        .columns
        .iter()
        .map(|c| format!("{}={:?}", c.name, c.data_type))
        .collect();
    report.push(format!("columns: {}", columns.join(" ")));
    for row in &set.rows {
        report.push(format!("row: {row:?}"));
    }
    let bad = db.execute(
        "INSERT INTO v4_kinds (tag) VALUES ($1)",
        &[P::Uuid("nope".into())],
    );
    report.push(format!("bad uuid: {bad:?}"));
    let wrong_type = db.query("SELECT $1::int2", &[P::Int64(1)]);
    report.push(format!("wrong type: {}", wrong_type.is_err()));
    Ok(())
}

fn denied(report: &mut Vec<String>) -> Step {
    let v2 = spin_sdk::pg::Connection::open("postgres://postgres@127.0.0.1:1/postgres");
    report.push(format!("v2: {:?}", v2.map(drop)));
    let v4 = spin_sdk::pg4::Connection::open("host=localhost port=1 user=postgres");
    report.push(format!("v4: {:?}", v4.map(drop)));
    Ok(())
}
