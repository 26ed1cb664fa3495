//! The endpoint end to end: status, JSON shape, offsets on DST days, and the
//! null-with-a-reason answers at high latitude.

use glue::Head;
use serde_json::Value;

fn get(query: &str) -> (u16, Value) {
    let head = Head {
        method: "GET".into(),
        path: "/suntimes".into(),
        query: query.into(),
        ..Head::default()
    };
    let reply = match suntimes::suntimes(&head) {
        Ok(reply) => reply,
        Err(error) => error.to_reply(),
    };
    assert_eq!(reply.content_type, "application/json");
    (reply.status, serde_json::from_slice(&reply.body).unwrap())
}

fn ok(query: &str) -> Value {
    let (status, body) = get(query);
    assert_eq!(status, 200, "{query}: {body}");
    body
}

#[test]
fn endpoint_is_get_suntimes() {
    assert_eq!(suntimes::ENDPOINT.route, "/suntimes");
    assert_eq!(suntimes::ENDPOINT.methods, &["GET"]);
}

#[test]
fn london_midsummer_shape() {
    let body = ok("lat=51.5074&lon=-0.1278&date=2024-06-21&tz=Europe/London");
    assert_eq!(
        body["location"],
        serde_json::json!({"lat": 51.5074, "lon": -0.1278})
    );
    assert_eq!(
        (body["date"].as_str(), body["tz"].as_str()),
        (Some("2024-06-21"), Some("Europe/London"))
    );
    let sun = &body["sun"];
    assert!(
        sun["rise"].as_str().unwrap().starts_with("2024-06-21T04:4"),
        "{sun}"
    );
    assert!(sun["rise"].as_str().unwrap().ends_with("+01:00"));
    assert_eq!(sun["rise_absent"], Value::Null);
    assert!(
        sun["set"].as_str().unwrap().starts_with("2024-06-21T21:2"),
        "{sun}"
    );
    assert!(
        sun["noon"].as_str().unwrap().starts_with("2024-06-21T13:0"),
        "{sun}"
    );
    let day = sun["day_length"].as_i64().unwrap();
    assert!(
        (16 * 3600 + 30 * 60..16 * 3600 + 45 * 60).contains(&day),
        "{day}"
    );
    let astro = &sun["twilight"]["astronomical"];
    assert_eq!(
        (astro["begin"].clone(), astro["begin_absent"].as_str()),
        (Value::Null, Some("white_night"))
    );
    assert_eq!(astro["end_absent"].as_str(), Some("white_night"));
    assert!(sun["twilight"]["civil"]["begin"].is_string());
    let moon = &body["moon"];
    for key in [
        "rise",
        "rise_absent",
        "set",
        "set_absent",
        "phase",
        "illuminated_fraction",
        "age_days",
    ] {
        assert!(moon.get(key).is_some(), "moon.{key} missing: {moon}");
    }
}

#[test]
fn offsets_follow_the_dst_change_within_the_day() {
    // London springs forward at 01:00 UTC on 2024-03-31: the day is 23 hours.
    let body = ok("lat=51.5074&lon=-0.1278&date=2024-03-31&tz=Europe/London");
    assert!(
        body["sun"]["rise"].as_str().unwrap().ends_with("+01:00"),
        "{body}"
    );
    // New York falls back at 06:00 UTC on 2024-11-03: sunrise is already EST.
    let body = ok("lat=40.7128&lon=-74.006&date=2024-11-03&tz=America/New_York");
    assert!(
        body["sun"]["rise"]
            .as_str()
            .unwrap()
            .starts_with("2024-11-03T06:"),
        "{body}"
    );
    assert!(
        body["sun"]["rise"].as_str().unwrap().ends_with("-05:00"),
        "{body}"
    );
    // On the 25-hour day an event between 00:00 and 01:00 EDT keeps -04:00.
    for key in ["rise", "set"] {
        if let Some(t) = body["moon"][key].as_str() {
            let hour: u32 = t[11..13].parse().unwrap();
            assert!(
                t.ends_with(if hour < 1 { "-04:00" } else { "-05:00" }) || hour == 1,
                "{t}"
            );
        }
    }
}

#[test]
fn a_day_whose_midnight_is_skipped_starts_after_the_gap() {
    // Santiago springs forward at local midnight: 2024-09-08 starts at 01:00 -03:00.
    let body = ok("lat=-33.4489&lon=-70.6693&date=2024-09-08&tz=America/Santiago");
    assert!(
        body["sun"]["rise"]
            .as_str()
            .unwrap()
            .starts_with("2024-09-08T07:"),
        "{body}"
    );
    assert!(
        body["sun"]["rise"].as_str().unwrap().ends_with("-03:00"),
        "{body}"
    );
}

#[test]
fn polar_day_and_polar_night_say_which() {
    let june = ok("lat=69.6492&lon=18.9553&date=2024-06-21&tz=Europe/Oslo");
    let sun = &june["sun"];
    assert_eq!(
        (sun["rise"].clone(), sun["rise_absent"].as_str()),
        (Value::Null, Some("polar_day"))
    );
    assert_eq!(sun["set_absent"].as_str(), Some("polar_day"));
    assert_eq!(sun["day_length"], 86400);
    assert_eq!(
        sun["twilight"]["civil"]["begin_absent"].as_str(),
        Some("polar_day")
    );
    assert!(sun["noon"].is_string());

    let december = ok("lat=69.6492&lon=18.9553&date=2024-12-21&tz=Europe/Oslo");
    let sun = &december["sun"];
    assert_eq!(sun["rise_absent"].as_str(), Some("polar_night"));
    assert_eq!(sun["set_absent"].as_str(), Some("polar_night"));
    assert_eq!(sun["day_length"], 0);
    assert!(
        sun["twilight"]["civil"]["begin"].is_string(),
        "Tromsø has civil twilight at midwinter"
    );

    let svalbard = ok("lat=78.2232&lon=15.6267&date=2024-12-21&tz=Arctic/Longyearbyen");
    assert_eq!(
        svalbard["sun"]["twilight"]["civil"]["begin_absent"].as_str(),
        Some("polar_night")
    );
    assert!(svalbard["sun"]["twilight"]["astronomical"]["begin"].is_string());
}

#[test]
fn moon_events_on_other_dates_and_circumpolar_moon() {
    let body = ok("lat=51.5074&lon=-0.1278&date=2024-01-03&tz=Europe/London");
    assert_eq!(
        body["moon"]["rise_absent"].as_str(),
        Some("other_date"),
        "{body}"
    );
    assert!(body["moon"]["set"].is_string());
    let body = ok("lat=69.6492&lon=18.9553&date=2024-12-15&tz=Europe/Oslo");
    assert_eq!(
        body["moon"]["rise_absent"].as_str(),
        Some("always_up"),
        "{body}"
    );
    let body = ok("lat=69.6492&lon=18.9553&date=2024-12-01&tz=Europe/Oslo");
    assert_eq!(
        body["moon"]["set_absent"].as_str(),
        Some("always_down"),
        "{body}"
    );
}

#[test]
fn default_date_is_today_in_the_zone() {
    let body = ok("lat=0&lon=0&tz=Pacific/Kiritimati");
    let today = jiff::Timestamp::now()
        .to_zoned_datetime(jiff::tz::TimeZone::get("Pacific/Kiritimati").unwrap())
        .date();
    let date = body["date"].as_str().unwrap();
    // The call and `today` can straddle midnight; allow the day after.
    assert!(
        date == today.to_string() || date == today.tomorrow().unwrap().to_string(),
        "{date}"
    );
    assert_eq!(ok("lat=0&lon=0&date=2024-01-01")["tz"], "UTC");
}

#[test]
fn bad_requests_are_400_json_naming_the_parameter() {
    for (query, name) in [
        ("lat=NaN&lon=0", "lat"),
        ("lat=inf&lon=0", "lat"),
        ("lat=91&lon=0", "lat"),
        ("lat=0&lon=-181", "lon"),
        ("lon=0", "lat"),
        ("lat=0&lon=0&date=1899-12-31", "date"),
        ("lat=0&lon=0&date=2101-01-01", "date"),
        ("lat=0&lon=0&date=2024-02-30", "date"),
        ("lat=0&lon=0&tz=Not/AZone", "tz"),
        ("lat=0&lon=0&tz=%2B25:00", "tz"),
    ] {
        let (status, body) = get(query);
        assert_eq!(status, 400, "{query}");
        let message = body["error"].as_str().unwrap();
        assert!(
            message.contains(&format!("parameter {name}")),
            "{query}: {message}"
        );
    }
}
