//! suntimes against PyEphem: every case in `golden/golden.json`, made by
//! `golden/make_golden.py` (how, and why PyEphem, is written at its top).
//!
//! The bar: sunrise, sunset and noon within 1 minute; twilights, moonrise and
//! moonset within 2 minutes; an event is null exactly when PyEphem finds none
//! in the local date, with the reason matching which side of the threshold the
//! body stayed on. Run with `--nocapture` to see the largest errors.

use serde_json::Value;
use std::collections::BTreeMap;
use suntimes::{Absence, Event, Request};

const GOLDEN: &str = include_str!("golden/golden.json");

struct Case<'a> {
    value: &'a Value,
    name: &'a str,
}

impl Case<'_> {
    fn request(&self) -> Request {
        let v = self.value;
        let tz = v["tz"].as_str().unwrap().replace('+', "%2B");
        let query = format!(
            "lat={}&lon={}&date={}&tz={tz}",
            v["lat"],
            v["lon"],
            v["date"].as_str().unwrap()
        );
        Request::parse(&query).unwrap_or_else(|e| panic!("{}: {e}", self.name))
    }

    fn events(&self, kind: &str) -> Vec<f64> {
        self.value["events"][kind]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_f64().unwrap())
            .collect()
    }

    fn state(&self, threshold: &str) -> &str {
        self.value["state"][threshold].as_str().unwrap()
    }
}

fn cases() -> Vec<Value> {
    let golden: Value = serde_json::from_str(GOLDEN).unwrap();
    golden["cases"].as_array().unwrap().clone()
}

#[derive(Default)]
struct Errors {
    max: BTreeMap<&'static str, (f64, String)>,
    failures: Vec<String>,
    compared: usize,
}

impl Errors {
    #[allow(clippy::too_many_arguments)]
    fn check(
        &mut self,
        case: &Case,
        kind: &'static str,
        ours: &Event,
        golden: &[f64],
        expected_absence: Absence,
        tol: f64,
        window: (i64, i64),
    ) {
        self.compared += 1;
        match (ours, golden.first()) {
            (Ok(t), Some(&g)) => {
                let err = (t.as_second() as f64 - g).abs();
                let entry = self.max.entry(kind).or_insert((0.0, String::new()));
                if err > entry.0 {
                    *entry = (err, case.name.to_string());
                }
                if err > tol {
                    self.failures
                        .push(format!("{}: {kind} off by {err:.0} s", case.name));
                }
            }
            (Err(why), None) => {
                if *why != expected_absence {
                    self.failures.push(format!(
                        "{}: {kind} absent as {why:?}, expected {expected_absence:?}",
                        case.name
                    ));
                }
            }
            // An event within the tolerance of midnight may fall on either side.
            (Ok(t), None) if near_edge(t.as_second() as f64, window, tol) => {}
            (Err(_), Some(&g)) if near_edge(g, window, tol) => {}
            (ours, _) => self.failures.push(format!(
                "{}: {kind} ours {ours:?}, PyEphem {golden:?}",
                case.name
            )),
        }
    }
}

fn near_edge(t: f64, (start, end): (i64, i64), tol: f64) -> bool {
    (t - start as f64).abs() <= tol || (t - end as f64).abs() <= tol
}

fn absence(state: &str, above: Absence, below: Absence) -> Absence {
    match state {
        "above" => above,
        "below" => below,
        _ => Absence::OtherDate,
    }
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one pass over the golden cases, field by field"
)]
fn matches_pyephem_on_every_golden_case() {
    let mut errors = Errors::default();
    let mut worst_phase = (0.0f64, 0.0f64);
    for value in cases() {
        let case = Case {
            value: &value,
            name: value["name"].as_str().unwrap(),
        };
        let request = case.request();
        let (start, end, _) = suntimes::local_day(&request);
        let window = (start, end);
        let a = suntimes::compute(&request);
        let sun_state = case.state("sun");
        let sun_why = absence(sun_state, Absence::PolarDay, Absence::PolarNight);
        errors.check(
            &case,
            "sunrise",
            &a.sun.rise,
            &case.events("sunrise"),
            sun_why,
            60.0,
            window,
        );
        errors.check(
            &case,
            "sunset",
            &a.sun.set,
            &case.events("sunset"),
            sun_why,
            60.0,
            window,
        );
        errors.check(
            &case,
            "noon",
            &a.sun.noon,
            &case.events("noon"),
            Absence::OtherDate,
            60.0,
            window,
        );
        for (kind, t) in [
            ("civil", &a.sun.civil),
            ("nautical", &a.sun.nautical),
            ("astronomical", &a.sun.astronomical),
        ] {
            let above = if sun_state == "above" {
                Absence::PolarDay
            } else {
                Absence::WhiteNight
            };
            let why = absence(case.state(kind), above, Absence::PolarNight);
            let (begin, end_kind): (&'static str, &'static str) = match kind {
                "civil" => ("civil_begin", "civil_end"),
                "nautical" => ("nautical_begin", "nautical_end"),
                _ => ("astronomical_begin", "astronomical_end"),
            };
            errors.check(
                &case,
                begin,
                &t.begin,
                &case.events(begin),
                why,
                120.0,
                window,
            );
            errors.check(
                &case,
                end_kind,
                &t.end,
                &case.events(end_kind),
                why,
                120.0,
                window,
            );
        }
        let moon_why = absence(case.state("moon"), Absence::AlwaysUp, Absence::AlwaysDown);
        if value["lat"].as_f64().unwrap().abs() > 89.0 {
            // At a pole there is no meridian: PyEphem's rise/set search, which
            // steps from transit to transit, finds nothing there, so only its
            // sampled state is used: a Moon that crosses must have an event.
            let crossed = a.moon.rise.is_ok() || a.moon.set.is_ok();
            if crossed != (case.state("moon") == "crosses") {
                errors.failures.push(format!(
                    "{}: moon {:?} vs state {}",
                    case.name,
                    a.moon,
                    case.state("moon")
                ));
            }
        } else {
            errors.check(
                &case,
                "moonrise",
                &a.moon.rise,
                &case.events("moonrise"),
                moon_why,
                120.0,
                window,
            );
            errors.check(
                &case,
                "moonset",
                &a.moon.set,
                &case.events("moonset"),
                moon_why,
                120.0,
                window,
            );
        }

        let want_len = day_length(
            &case.events("sunrise"),
            &case.events("sunset"),
            sun_state,
            window,
        );
        if (a.sun.day_length as f64 - want_len).abs() > 120.0 {
            errors.failures.push(format!(
                "{}: day_length {} vs {want_len}",
                case.name, a.sun.day_length
            ));
        }

        let phase = &value["moon_phase"];
        let fraction_err =
            (a.moon.phase.illuminated_fraction - phase["fraction"].as_f64().unwrap()).abs();
        let age_err = (a.moon.phase.age_days - phase["age_days"].as_f64().unwrap()).abs();
        worst_phase = (worst_phase.0.max(fraction_err), worst_phase.1.max(age_err));
        let name = serde_json::to_value(a.moon.phase.name).unwrap();
        if fraction_err > 0.005 || age_err > 0.05 || name != phase["name"] {
            errors.failures.push(format!(
                "{}: phase {:?} vs {phase}",
                case.name, a.moon.phase
            ));
        }
    }
    println!(
        "compared {} events; largest |ours − PyEphem| (s):",
        errors.compared
    );
    for (kind, (err, name)) in &errors.max {
        println!("  {kind:<20} {err:>4.0}  ({name})");
    }
    println!(
        "  moon fraction {:.4}, age {:.4} d",
        worst_phase.0, worst_phase.1
    );
    assert!(
        errors.failures.is_empty(),
        "{} failures:\n{}",
        errors.failures.len(),
        errors.failures.join("\n")
    );
}

/// Seconds the Sun's limb is up within the window, from PyEphem's events.
fn day_length(rises: &[f64], sets: &[f64], state: &str, (start, end): (i64, i64)) -> f64 {
    let mut edges: Vec<(f64, bool)> = rises
        .iter()
        .map(|&t| (t, true))
        .chain(sets.iter().map(|&t| (t, false)))
        .collect();
    edges.sort_by(|a, b| a.0.total_cmp(&b.0));
    let up_at_start = match edges.first() {
        Some(&(_, rise)) => !rise,
        None => state == "above",
    };
    let (mut total, mut since) = (0.0, up_at_start.then_some(start as f64));
    for (t, rise) in edges {
        match (rise, since) {
            (true, None) => since = Some(t),
            (false, Some(s)) => {
                total += t - s;
                since = None;
            }
            _ => {}
        }
    }
    total + since.map_or(0.0, |s| end as f64 - s)
}
