//! `POST /<database>?<name>`: records a visit by `name` and answers
//! `visit <n> by <name>, row <rowid>, changes <c>` (n: that name's visits so
//! far); `GET /<database>`: every visit, `<rowid> <name> <real> <blob length>`
//! one a line. A database error is a 500 whose body is the error.

use spin_sdk::http::{IntoResponse, Method, Request, Response};
use spin_sdk::http_service;
use spin_sdk::sqlite::{Connection, Error, Value};

#[http_service]
async fn handle_sqlite(req: Request) -> anyhow::Result<impl IntoResponse> {
    let label = req.uri().path().trim_start_matches('/').to_string();
    let name = req.uri().query().unwrap_or("anonymous").to_string();
    let (status, body) = match answer(req.method(), &label, name).await {
        Ok(answer) => answer,
        Err(error) => (500, format!("{error:?}")),
    };
    Ok(Response::builder()
        .status(status)
        .header("content-type", "text/plain")
        .body(body))
}

async fn answer(method: &Method, label: &str, name: String) -> Result<(u16, String), Error> {
    let db = Connection::open(label).await?;
    db.execute(
        "CREATE TABLE IF NOT EXISTS visits(id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL, tag BLOB)",
        [],
    )
    .await?
    .collect()
    .await?;
    match *method {
        Method::POST => {
            db.execute(
                "INSERT INTO visits(name, score, tag) VALUES (?, ?, ?)",
                [
                    Value::Text(name.clone()),
                    Value::Real(0.5),
                    Value::Blob(name.as_bytes().to_vec()),
                ],
            )
            .await?
            .collect()
            .await?;
            let rowid = db.last_insert_rowid().await;
            let changes = db.changes().await;
            let rows = db
                .execute(
                    "SELECT COUNT(*) FROM visits WHERE name = ?",
                    [Value::Text(name.clone())],
                )
                .await?
                .collect()
                .await?;
            let count = rows.first().and_then(|row| row.get::<i64>(0)).unwrap_or(-1);
            Ok((
                200,
                format!("visit {count} by {name}, row {rowid}, changes {changes}"),
            ))
        }
        Method::GET => {
            let result = db
                .execute("SELECT id, name, score, tag FROM visits ORDER BY id", [])
                .await?;
            let columns = result.columns().join(",");
            let lines: Vec<String> = result
                .collect()
                .await?
                .iter()
                .map(|row| {
                    let values: Vec<String> = row.values.iter().map(show).collect();
                    values.join(" ")
                })
                .collect();
            Ok((200, format!("{columns}\n{}", lines.join("\n"))))
        }
        _ => Ok((405, "GET or POST /<database>".to_string())),
    }
}

fn show(value: &Value) -> String {
    match value {
        Value::Integer(i) => i.to_string(),
        Value::Real(r) => r.to_string(),
        Value::Text(t) => t.clone(),
        Value::Blob(b) => format!("blob:{}", b.len()),
        Value::Null => "null".to_string(),
    }
}
