//! Properties over a deterministic grid of places and dates, 1900–2100:
//! rise < noon < set, the twilight order, and the same instant from different zones.

use jiff::Timestamp;
use suntimes::{Almanac, Event, Request};

fn request(lat: f64, lon: f64, date: &str, tz: &str) -> Request {
    let query = format!(
        "lat={lat}&lon={lon}&date={date}&tz={}",
        tz.replace('+', "%2B")
    );
    Request::parse(&query).unwrap_or_else(|e| panic!("{query}: {e}"))
}

/// An offset near the longitude's mean solar time, so the local day is centred on local noon.
fn solar_offset(lon: f64) -> String {
    let hours = (lon / 15.0).round() as i32;
    format!("{}{:02}:00", if hours < 0 { '-' } else { '+' }, hours.abs())
}

/// (lat, lon, date) over |lat| ≤ 65, every 5°, 1900–2100 in steps of 13 months
/// and 17 days (so every month and season is visited), longitudes spread out.
fn grid() -> impl Iterator<Item = (f64, f64, String)> {
    (0..=26).flat_map(|i| {
        let lat = -65.0 + 5.0 * f64::from(i);
        (0..186).step_by(7).map(move |k| {
            let months = k * 13;
            let year = 1900 + months / 12;
            let month = 1 + months % 12;
            let day = 1 + (k * 17) % 28;
            let lon = -180.0 + f64::from((k * 47 + i * 29) % 361);
            (lat, lon, format!("{year:04}-{month:02}-{day:02}"))
        })
    })
}

fn ok(e: &Event) -> Option<Timestamp> {
    e.as_ref().ok().copied()
}

#[test]
fn rise_before_noon_before_set() {
    let mut checked = 0;
    for (lat, lon, date) in grid() {
        let a = suntimes::compute(&request(lat, lon, &date, &solar_offset(lon)));
        if let (Some(rise), Some(noon), Some(set)) =
            (ok(&a.sun.rise), ok(&a.sun.noon), ok(&a.sun.set))
        {
            if lat.abs() <= 60.0 || rise < set {
                assert!(
                    rise < noon && noon < set,
                    "{lat} {lon} {date}: {rise} {noon} {set}"
                );
                checked += 1;
            }
        } else {
            assert!(lat.abs() > 60.0, "{lat} {lon} {date}: {:?}", a.sun);
        }
    }
    assert!(checked > 700, "{checked}");
}

#[test]
fn twilights_in_order() {
    for (lat, lon, date) in grid() {
        let a: Almanac = suntimes::compute(&request(lat, lon, &date, &solar_offset(lon)));
        let s = &a.sun;
        let noon = ok(&s.noon).expect("noon exists near local solar time");
        let morning = [
            &s.astronomical.begin,
            &s.nautical.begin,
            &s.civil.begin,
            &s.rise,
        ];
        let evening = [&s.set, &s.civil.end, &s.nautical.end, &s.astronomical.end];
        let before: Vec<Timestamp> = morning
            .iter()
            .filter_map(|e| ok(e))
            .filter(|&t| t < noon)
            .collect();
        let after: Vec<Timestamp> = evening
            .iter()
            .filter_map(|e| ok(e))
            .filter(|&t| t > noon)
            .collect();
        assert!(
            before.windows(2).all(|w| w[0] < w[1]),
            "{lat} {lon} {date}: {before:?}"
        );
        assert!(
            after.windows(2).all(|w| w[0] < w[1]),
            "{lat} {lon} {date}: {after:?}"
        );
        if lat.abs() <= 45.0 {
            // No white nights below 48.5°: every event exists, on its side of noon.
            assert_eq!(
                (before.len(), after.len()),
                (4, 4),
                "{lat} {lon} {date}: {s:?}"
            );
        }
    }
}

/// A local date's (start, end, noon), Unix seconds.
type Window = (i64, i64, i64);

/// All the day's events with their kind, as Unix seconds.
fn instants(a: &Almanac) -> Vec<(&'static str, i64)> {
    let s = &a.sun;
    [
        ("rise", &s.rise),
        ("set", &s.set),
        ("noon", &s.noon),
        ("civil_begin", &s.civil.begin),
        ("civil_end", &s.civil.end),
        ("nautical_begin", &s.nautical.begin),
        ("nautical_end", &s.nautical.end),
        ("astronomical_begin", &s.astronomical.begin),
        ("astronomical_end", &s.astronomical.end),
        ("moonrise", &a.moon.rise),
        ("moonset", &a.moon.set),
    ]
    .into_iter()
    .filter_map(|(k, e)| ok(e).map(|t| (k, t.as_second())))
    .collect()
}

#[test]
fn the_same_instant_from_any_zone() {
    // Each event of a UTC date is found again, to the second, on the date of
    // another zone whose window holds it (or that date reports an earlier
    // event of the same kind: the first of two is the one reported).
    let inner = |date: &str| !date.starts_with("1900-01-01") && !date.starts_with("2100-12-31");
    for (lat, lon, date) in grid()
        .step_by(3)
        .filter(|(lat, _, date)| lat.abs() <= 60.0 && inner(date))
    {
        let utc = suntimes::compute(&request(lat, lon, &date, "UTC"));
        let day = request(lat, lon, &date, "UTC").date;
        for tz in ["+12:00", "-09:30", "Europe/London", "Asia/Kolkata"] {
            let others: Vec<(Window, Vec<(&str, i64)>)> =
                [day.yesterday().unwrap(), day, day.tomorrow().unwrap()]
                    .into_iter()
                    .map(|d| {
                        let r = request(lat, lon, &d.to_string(), tz);
                        (suntimes::local_day(&r), instants(&suntimes::compute(&r)))
                    })
                    .collect();
            for (kind, t) in instants(&utc) {
                let (_, found) = others
                    .iter()
                    .find(|((start, end, _), _)| (*start..*end).contains(&t))
                    .expect("three dates cover a UTC date");
                let reported = found.iter().find(|(k, _)| *k == kind).map(|&(_, u)| u);
                assert!(
                    reported.is_some_and(|u| (u - t).abs() <= 1 || u < t),
                    "{lat} {lon} {date} {tz}: {kind} at {t}, that date has {reported:?}"
                );
            }
        }
    }
}
