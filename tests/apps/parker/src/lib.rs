//! A WASIp3 component that parks in the host what it should not, each route
//! answering `200` with `{"tries": [{"try", "escaped", "outcome"}]}` as
//! tests/apps/hostile does (`escaped`: the host took that one too):
//!
//! - `/park/results?queries=N&kib=K`: `N` queries of `K` KiB of rows each,
//!   one after the other, whose rows it never reads (the host holds them);
//! - `/park/arguments?queries=N&kib=K&steps=S`: `N` statements with a
//!   parameter of `K` KiB each, all sent at once, each counting to `S` (so
//!   that they queue: the host holds each until one of its SQLite threads
//!   takes it);
//! - `/ok`: answers `200`.

// `#[http_service]` expands to the component's exported ABI (wit-bindgen's
// `export_name`, unsafe blocks); the handler's signature returns a `Result`.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code, clippy::unnecessary_wraps)]
mod component {
    use spin_sdk::http::{IntoResponse, Request, Response};
    use spin_sdk::http_service;
    use spin_sdk::sqlite::{Connection, Value};

    #[http_service]
    async fn handle(req: Request) -> anyhow::Result<impl IntoResponse> {
        let query = req.uri().query().unwrap_or_default().to_string();
        let number = |name: &str| {
            query
                .split('&')
                .filter_map(|pair| pair.split_once('='))
                .find(|(key, _)| *key == name)
                .and_then(|(_, value)| value.parse::<usize>().ok())
                .unwrap_or(0)
        };
        let tries = match req.uri().path() {
            "/ok" => return Ok(answer(200, "still serving".into())),
            "/park/results" => results(number("queries"), number("kib")).await,
            "/park/arguments" => arguments(number("queries"), number("kib"), number("steps")).await,
            _ => return Ok(answer(404, "no such attack".into())),
        };
        Ok(answer(200, format!("{{\"tries\": [{}]}}", tries.join(","))))
    }

    fn answer(status: u16, body: String) -> impl IntoResponse {
        Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(body)
    }

    /// One try as JSON (outcomes are ASCII without quotes: the SDK's Debug
    /// output is escaped to be sure).
    fn record<T, E: std::fmt::Debug>(attempt: &str, outcome: &Result<T, E>) -> String {
        let text = match outcome {
            Ok(_) => "ok".to_string(),
            Err(error) => format!("refused: {error:?}"),
        };
        let text: String = text
            .chars()
            .filter(|c| c.is_ascii() && *c != '"' && *c != '\\')
            .take(300)
            .collect();
        format!(
            "{{\"try\": \"{attempt}\", \"escaped\": {}, \"outcome\": \"{text}\"}}",
            outcome.is_ok()
        )
    }

    /// `kib` rows of 1 KiB each.
    fn rows_of(kib: usize) -> String {
        format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {kib}) \
             SELECT randomblob(1024) FROM n"
        )
    }

    async fn results(queries: usize, kib: usize) -> Vec<String> {
        let db = match Connection::open_default().await {
            Ok(db) => db,
            Err(error) => return vec![record::<(), _>("open", &Err(error))],
        };
        let mut parked = Vec::new();
        let mut tries = Vec::new();
        for index in 0..queries {
            // A failed statement is an empty stream whose future carries the
            // error: the rows are kept unread, the future awaited.
            let outcome = match db.execute(rows_of(kib), []).await {
                Ok(result) => {
                    let (_, rows, done) = result.into_inner();
                    parked.push(rows);
                    done.await
                }
                Err(error) => Err(error),
            };
            tries.push(record(
                &format!("park {kib} KiB of rows ({index})"),
                &outcome,
            ));
        }
        tries
    }

    async fn arguments(queries: usize, kib: usize, steps: usize) -> Vec<String> {
        let db = match Connection::open_default().await {
            Ok(db) => db,
            Err(error) => return vec![record::<(), _>("open", &Err(error))],
        };
        let statement = format!(
            "SELECT length(?1), (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n \
             WHERE i < {steps}) SELECT count(*) FROM n)"
        );
        let statements =
            (0..queries).map(|_| db.execute(&statement, [Value::Blob(vec![b'a'; kib << 10])]));
        let outcomes =
            futures_join_all(statements.map(|statement| async { statement.await?.result().await }))
                .await;
        outcomes
            .iter()
            .enumerate()
            .map(|(index, outcome)| record(&format!("send {kib} KiB at once ({index})"), outcome))
            .collect()
    }

    /// Every future polled together until all are done (the statements are
    /// in flight at once).
    async fn futures_join_all<F: std::future::Future>(
        futures: impl Iterator<Item = F>,
    ) -> Vec<F::Output> {
        let mut pending: Vec<_> = futures.map(|f| Some(Box::pin(f))).collect();
        let mut outputs: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
        std::future::poll_fn(|cx| {
            let mut done = true;
            for (slot, output) in pending.iter_mut().zip(outputs.iter_mut()) {
                if let Some(future) = slot {
                    match future.as_mut().poll(cx) {
                        std::task::Poll::Ready(value) => {
                            *output = Some(value);
                            *slot = None;
                        }
                        std::task::Poll::Pending => done = false,
                    }
                }
            }
            if done {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
        .await;
        outputs.into_iter().map(Option::unwrap).collect()
    }
}
