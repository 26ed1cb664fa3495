//! The Moon's phase for a local date: its name, illuminated fraction and age.
//!
//! * Elongation E = λ☾ − λ☉ (apparent ecliptic longitudes) sets the phase:
//!   new moon at 0°, first quarter 90°, full 180°, last quarter 270°.
//! * `name`: one of the four principal phases if its instant falls within the
//!   local date; otherwise the intermediate phase the Moon is in at 12:00 local
//!   time (waxing crescent, waxing gibbous, waning gibbous, waning crescent).
//! * `illuminated_fraction` at 12:00 local time, k = (1 + cos i)/2 with the
//!   phase angle i from the geocentric elongation (Meeus ch. 48, 48.2–48.3).
//! * `age_days`: days since the last new moon (E = 0) before 12:00 local time,
//!   found by secant iteration on E (with the Moon's longitude from the 25
//!   largest terms: 0.02° of elongation is under a minute of age).

use crate::earth::Nutation;
use crate::sky::Place;
use crate::{moon, sun, time_scale};
use std::f64::consts::{FRAC_PI_2, PI, TAU};

/// Mean synodic month, days.
const SYNODIC_MONTH: f64 = 29.530_588_9;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseName {
    NewMoon,
    WaxingCrescent,
    FirstQuarter,
    WaxingGibbous,
    FullMoon,
    WaningGibbous,
    LastQuarter,
    WaningCrescent,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phase {
    pub name: PhaseName,
    pub illuminated_fraction: f64,
    pub age_days: f64,
}

/// Elongation in longitude, radians in [0, 2π), and the phase angle's cosine.
fn elongation(unix: f64, nut: &Nutation) -> (f64, f64) {
    let t = time_scale::centuries_tt(unix);
    elongation_of(&moon::place(t, nut), &sun::place(t, nut))
}

fn elongation_of(m: &Place, s: &Place) -> (f64, f64) {
    let e = (m.lon - s.lon).rem_euclid(TAU);
    let cos_psi = m.lat.cos() * e.cos();
    let sin_psi = (1.0 - cos_psi * cos_psi).sqrt();
    let i = (s.dist * sin_psi).atan2(m.dist - s.dist * cos_psi);
    (e, i.cos())
}

/// `at_start` and `at_end`: the (Moon, Sun) places at the local date's first
/// instant and the next date's; `noon`: 12:00 local time.
pub fn phase(
    at_start: (&Place, &Place),
    at_end: (&Place, &Place),
    noon: i64,
    nut: &Nutation,
) -> Phase {
    let quarter = |e: f64| ((e / FRAC_PI_2) as usize).min(3);
    let (e_noon, cos_i) = elongation(noon as f64, nut);
    let q0 = quarter(elongation_of(at_start.0, at_start.1).0);
    let q1 = quarter(elongation_of(at_end.0, at_end.1).0);
    let name = if q0 == q1 {
        [
            PhaseName::WaxingCrescent,
            PhaseName::WaxingGibbous,
            PhaseName::WaningGibbous,
            PhaseName::WaningCrescent,
        ][quarter(e_noon)]
    } else {
        [
            PhaseName::NewMoon,
            PhaseName::FirstQuarter,
            PhaseName::FullMoon,
            PhaseName::LastQuarter,
        ][q1]
    };
    Phase {
        name,
        illuminated_fraction: (1.0 + cos_i) / 2.0,
        age_days: (noon as f64 - last_new_moon(noon as f64, e_noon, nut))
            / time_scale::SECONDS_PER_DAY,
    }
}

/// The instant of the new moon before `unix`, where the elongation is `e`.
fn last_new_moon(unix: f64, e: f64, nut: &Nutation) -> f64 {
    let signed = |e: f64| if e > PI { e - TAU } else { e };
    let mean_rate = TAU / (SYNODIC_MONTH * time_scale::SECONDS_PER_DAY);
    let (mut t0, mut e0) = (unix, e);
    let mut t1 = unix - e / mean_rate;
    for _ in 0..6 {
        let t = time_scale::centuries_tt(t1);
        let e1 = signed((moon::longitude(t, nut, 25) - sun::place(t, nut).lon).rem_euclid(TAU));
        // 2e-5 rad of elongation is under 3 minutes of age.
        if e1.abs() < 2e-5 {
            break;
        }
        let slope = if t1 == t0 {
            mean_rate
        } else {
            (e1 - e0) / (t1 - t0)
        };
        let slope = if slope > 0.5 * mean_rate && slope < 2.0 * mean_rate {
            slope
        } else {
            mean_rate
        };
        (t0, e0) = (t1, e1);
        t1 -= e1 / slope;
    }
    t1
}
