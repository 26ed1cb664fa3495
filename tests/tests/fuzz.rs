//! Property tests ("fuzzing") of every function's request parsing, against the
//! functions' library code directly: for any input, parsing never panics and
//! gives either a value or a 4xx `ApiError`. Modest case counts keep the whole
//! set to a few seconds in CI; `PROPTEST_CASES=100000` runs longer locally.

use glue::{ApiError, Head, Query};
use proptest::prelude::*;
use proptest::test_runner::Config;

fn config(cases: u32) -> Config {
    Config {
        // The environment variable (PROPTEST_CASES) still wins for longer runs.
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(cases),
        failure_persistence: None,
        ..Config::default()
    }
}

fn is_client_error(error: &ApiError) -> bool {
    (400..500).contains(&error.status) && !error.message.is_empty()
}

fn head(query: &str) -> Head {
    Head {
        method: "GET".into(),
        query: query.to_string(),
        ..Head::default()
    }
}

/// Query strings: arbitrary text, and `name=value` pairs with percent escapes,
/// `+`, repeated names, empty parts and odd separators.
fn query_string() -> impl Strategy<Value = String> {
    let name = prop_oneof![
        Just("ms".to_string()),
        Just("lat".to_string()),
        Just("lon".to_string()),
        Just("date".to_string()),
        Just("tz".to_string()),
        "[a-zA-Z%+=&;]{0,6}",
    ];
    let value = prop_oneof![
        "-?[0-9]{0,25}",
        "-?[0-9]{0,4}\\.[0-9]{0,12}(e-?[0-9]{1,4})?",
        "(NaN|nan|inf|-inf|Infinity|0x1F|1_000| 5|5 |\\+5)",
        "%[0-9A-Fa-f]{2}(%[0-9A-Fa-f]{2}){0,5}",
        "[0-9]{1,5}-[0-9]{1,2}-[0-9]{1,2}",
        "[A-Za-z_/+-]{0,30}",
        "\\PC{0,20}",
        any::<String>(),
    ];
    let pairs = prop::collection::vec((name, value), 0..5).prop_map(|pairs| {
        pairs
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&")
    });
    prop_oneof![pairs, any::<String>()]
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn glue_query_lookups_never_panic(raw in query_string(), name in "[a-z]{1,4}") {
        let query = Query::parse(&raw);
        for result in [
            query.get(&name).map(|_| ()),
            query.required(&name).map(|_| ()),
            query.integer(&name, 0u64, 0..=1000).map(|_| ()),
            query.integer(&name, 0i32, -5..=5).map(|_| ()),
            query.decimal(&name, -90.0..=90.0).map(|_| ()),
        ] {
            if let Err(error) = result {
                prop_assert!(is_client_error(&error), "{error}");
            }
        }
        if let Ok(value) = query.decimal(&name, -90.0..=90.0) {
            prop_assert!(value.is_finite() && (-90.0..=90.0).contains(&value));
        }
    }

    #[test]
    fn io_ms_parses_or_is_a_400(raw in query_string()) {
        match io::io(&head(&raw)) {
            Ok((wait, _)) => prop_assert!(wait.as_millis() <= u128::from(io::MAX_MS)),
            Err(error) => prop_assert_eq!(error.status, 400),
        }
    }

    /// cpu reads `ms` exactly like this; the handler itself runs only for
    /// short waits, so the property stays fast.
    #[test]
    fn cpu_ms_parses_or_is_a_400(raw in query_string()) {
        match Query::parse(&raw).integer("ms", cpu::DEFAULT_MS, 0..=cpu::MAX_MS) {
            Ok(ms) if ms <= 2 => prop_assert!(cpu::cpu(&head(&raw)).is_ok()),
            Ok(ms) => prop_assert!(ms <= cpu::MAX_MS),
            Err(error) => {
                prop_assert_eq!(error.status, 400);
                prop_assert_eq!(cpu::cpu(&head(&raw)).unwrap_err(), error);
            }
        }
    }

    #[test]
    fn echo_parses_any_bytes_or_is_a_400(body in prop::collection::vec(any::<u8>(), 0..300)) {
        if let Err(error) = echo::echo(&Head::default(), &body) {
            prop_assert_eq!(error.status, 400);
        }
    }

    /// JSON-shaped bodies, so the field checks (not only the JSON parser) are reached.
    #[test]
    fn echo_parses_json_objects_or_is_a_400(
        fields in prop::collection::vec(
            (
                prop_oneof![
                    Just("FirstName"), Just("firstname"), Just("LASTNAME"),
                    Just("LastName"), Just("Age"), Just("age"), Just("other"),
                ],
                prop_oneof![
                    "\"\\PC{0,12}\"",
                    any::<i64>().prop_map(|n| n.to_string()),
                    any::<f64>().prop_map(|n| format!("{n:?}")),
                    "-?[0-9]{1,30}(\\.[0-9]{1,5})?(e[0-9]{1,4})?",
                    Just("null".to_string()), Just("true".to_string()),
                    Just("[1]".to_string()), Just("{}".to_string()),
                ],
            ),
            0..6,
        ),
        content_type in prop_oneof![
            Just(None), Just(Some("application/json")), Just(Some("text/plain")),
            Just(Some("application/problem+json")), Just(Some("")),
        ],
    ) {
        let body = format!(
            "{{{}}}",
            fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect::<Vec<_>>().join(",")
        );
        let head = Head { content_type: content_type.map(str::to_string), ..Head::default() };
        match echo::echo(&head, body.as_bytes()) {
            Ok(reply) => prop_assert_eq!(reply.status, 200),
            Err(error) => prop_assert!([400, 415].contains(&error.status), "{error}"),
        }
    }

    /// Any request line the endpoints see: the method and a declared length
    /// are admitted or refused with a 405 or 413.
    #[test]
    fn endpoints_admit_or_refuse_with_4xx(
        method in "[A-Z]{1,8}",
        content_length in prop::option::of(any::<u64>()),
    ) {
        for endpoint in [&echo::ENDPOINT, &cpu::ENDPOINT, &io::ENDPOINT, &suntimes::ENDPOINT, &sha1_blocks::ENDPOINT] {
            let head = Head { method: method.clone(), content_length, ..Head::default() };
            if let Err(error) = endpoint.admit(&head) {
                prop_assert!([405, 413].contains(&error.status), "{error}");
            }
        }
    }
}

/// Plausible suntimes queries: numbers, dates and zone names near and past the edges.
fn suntimes_query() -> impl Strategy<Value = String> {
    let number = prop_oneof![
        any::<f64>().prop_map(|n| n.to_string()),
        (-200.0f64..200.0).prop_map(|n| n.to_string()),
        "(NaN|inf|-inf|1e309|-0|\\+1|0x10|)",
    ];
    let date = prop_oneof![
        (1850i32..2150, 0u8..14, 0u8..33).prop_map(|(y, m, d)| format!("{y:04}-{m:02}-{d:02}")),
        "[0-9-]{0,12}",
        "\\PC{0,12}",
    ];
    let tz = prop_oneof![
        Just("Europe/London".to_string()),
        Just("Pacific/Apia".to_string()),
        Just("America/St_Johns".to_string()),
        Just("Asia/Kathmandu".to_string()),
        Just("Antarctica/Troll".to_string()),
        Just("UTC".to_string()),
        (-30i32..30, 0u8..70).prop_map(|(h, m)| format!(
            "{}{:02}:{m:02}",
            if h < 0 { "-" } else { "%2B" },
            h.abs()
        )),
        "[A-Za-z_/+-]{0,25}",
        "\\PC{0,12}",
    ];
    (
        number.clone(),
        number,
        prop::option::of(date),
        prop::option::of(tz),
    )
        .prop_map(|(lat, lon, date, tz)| {
            let mut query = format!("lat={lat}&lon={lon}");
            if let Some(date) = date {
                query += &format!("&date={date}");
            }
            if let Some(tz) = tz {
                query += &format!("&tz={tz}");
            }
            query
        })
}

proptest! {
    #![proptest_config(config(256))]

    /// Parsing never panics; whatever it accepts, the full handler (the
    /// computation included) answers without panicking.
    #[test]
    fn suntimes_parses_or_is_a_400(raw in prop_oneof![suntimes_query(), query_string()]) {
        match suntimes::Request::parse(&raw) {
            Ok(_) => prop_assert_eq!(suntimes::suntimes(&head(&raw)).map(|r| r.status), Ok(200)),
            Err(error) => prop_assert_eq!(error.status, 400, "{}", error),
        }
    }

    /// Block hashes do not depend on how the body is cut into chunks.
    #[test]
    fn sha1_blocks_are_chunking_invariant(
        data in prop::collection::vec(any::<u8>(), 0..20_000),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let mut whole = sha1_blocks::BlockHasher::default();
        whole.update(&data);
        let whole = whole.finish();

        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(data.len() + 1)).collect();
        points.sort_unstable();
        let mut chunked = sha1_blocks::BlockHasher::default();
        let mut from = 0;
        for point in points.into_iter().chain([data.len()]) {
            chunked.update(&data[from..point]);
            from = point;
        }
        let chunked = chunked.finish();

        prop_assert_eq!(chunked.bytes, data.len() as u64);
        prop_assert_eq!(chunked.blocks, data.len().div_ceil(sha1_blocks::BLOCK_SIZE));
        prop_assert_eq!(&chunked.sha1, &whole.sha1);
        prop_assert_eq!(chunked.bytes, whole.bytes);
    }
}
