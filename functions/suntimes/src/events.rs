//! The day's events: sunrise, sunset, noon, twilights and moonrise/moonset for
//! one local calendar date, found as threshold crossings of the topocentric
//! altitude over [local midnight, next local midnight).
//!
//! Thresholds (observer at sea level, standard refraction R = 34′):
//! * sunrise/sunset: upper limb on the horizon, h + s = −34′, with s the Sun's
//!   semidiameter at that date (15.7′–16.3′; the textbook −0°50′ uses 16′);
//! * twilights: the centre at −6°, −12°, −18° (no refraction, by convention);
//! * moonrise/moonset: upper limb, topocentric, h′ + s = −34′. With geocentric
//!   altitude h and parallax π this is Meeus's h₀ = 0.7275π − 34′ (ch. 15): the
//!   topocentric altitude is h − π·cos h and s ≈ 0.2725π;
//! * noon: the Sun's upper transit (hour angle zero).
//!
//! When a kind of event happens more than once in a local date (two moonsets,
//! or a high-latitude sunset just after midnight and another before the next),
//! the first is reported.

use crate::earth::{self, Observer};
use crate::search::{self, Crossings};
use crate::sky::{Place, Sighting, Track};
use crate::{moon, phase, sun, time_scale};
use jiff::Timestamp;

const ARCMIN: f64 = earth::DEG / 60.0;
const REFRACTION: f64 = 34.0 * ARCMIN;

/// Why an event has no time on this date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Absence {
    /// The Sun stays above the horizon all day.
    PolarDay,
    /// The Sun stays below the horizon all day (for a twilight: below that
    /// twilight's depression angle all day).
    PolarNight,
    /// Twilight: the Sun does set but never gets this far below the horizon,
    /// so this twilight lasts all night and never begins or ends.
    WhiteNight,
    /// The Moon stays above the horizon all day.
    AlwaysUp,
    /// The Moon stays below the horizon all day.
    AlwaysDown,
    /// The body crosses the threshold this day only the other way; this event
    /// falls on the date before or after (e.g. the once-a-month date with no moonrise).
    OtherDate,
}

/// An event's instant (rounded to the second), or why it has none this date.
pub type Event = Result<Timestamp, Absence>;

#[derive(Debug, Clone, PartialEq)]
pub struct Twilight {
    /// Morning: the Sun's centre rises through the depression angle.
    pub begin: Event,
    /// Evening: the Sun's centre sets through it.
    pub end: Event,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SunDay {
    pub rise: Event,
    pub set: Event,
    pub noon: Event,
    /// Seconds the upper limb is above the horizon (−34′) within the local date.
    pub day_length: i64,
    pub civil: Twilight,
    pub nautical: Twilight,
    pub astronomical: Twilight,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MoonDay {
    pub rise: Event,
    pub set: Event,
    pub phase: phase::Phase,
}

/// Everything computed for one place and local date.
#[derive(Debug, Clone, PartialEq)]
pub struct Almanac {
    pub sun: SunDay,
    pub moon: MoonDay,
}

/// The events at (`lat`, `lon`) degrees in the window [`start`, `end`) (Unix
/// seconds: the local date's first instant and the next date's); `noon` is
/// 12:00 local time, the instant the Moon's phase is given for.
pub fn almanac(lat: f64, lon: f64, start: i64, end: i64, noon: i64) -> Almanac {
    let (t0, t1) = (start as f64, end as f64);
    let observer = Observer::new(lat, lon);
    let nutation = earth::nutation(time_scale::centuries_tt((t0 + t1) / 2.0));
    let node_step = (t1 - t0) / 3.0;
    let nodes: [f64; 4] = std::array::from_fn(|i| t0 + i as f64 * node_step);
    let centuries = nodes.map(time_scale::centuries_tt);
    let sun_places: [Place; 4] = centuries.map(|t| sun::place(t, &nutation));
    let moon_places: [Place; 4] = centuries.map(|t| moon::place(t, &nutation));
    let sun_track = Track::new(
        t0,
        node_step,
        sun_places,
        sun::RADIUS_KM,
        observer,
        nutation,
    );
    let moon_track = Track::new(
        t0,
        node_step,
        moon_places,
        moon::RADIUS_KM,
        observer,
        nutation,
    );

    let steps = ((t1 - t0) / search::MAX_STEP).ceil() as usize;
    let times: Vec<f64> = (0..=steps)
        .map(|i| t0 + (t1 - t0) * i as f64 / steps as f64)
        .collect();
    let sun_sky: Vec<Sighting> = times.iter().map(|&t| sun_track.sight(t)).collect();
    let moon_sky: Vec<Sighting> = times.iter().map(|&t| moon_track.sight(t)).collect();

    let limb = |s: Sighting| s.alt + s.semidiameter + REFRACTION;
    let cross = |sky: &[Sighting], track: &Track, g: &dyn Fn(Sighting) -> f64| {
        let values: Vec<f64> = sky.iter().map(|&s| g(s)).collect();
        search::crossings(&times, &values, |t| g(track.sight(t)))
    };
    let window = Window { start, end };

    let horizon = cross(&sun_sky, &sun_track, &limb);
    let sun_absence = |c: &Crossings| side(c, Absence::PolarDay, Absence::PolarNight);
    let transits = cross(&sun_sky, &sun_track, &|s| s.hour_sin);
    let twilight = |depression: f64| {
        let c = cross(&sun_sky, &sun_track, &|s: Sighting| {
            s.alt + depression * earth::DEG
        });
        let above = if horizon.above_all_day {
            Absence::PolarDay
        } else {
            Absence::WhiteNight
        };
        let why = side(&c, above, Absence::PolarNight);
        Twilight {
            begin: window.first(&c.up, why),
            end: window.first(&c.down, why),
        }
    };
    let sun = SunDay {
        rise: window.first(&horizon.up, sun_absence(&horizon)),
        set: window.first(&horizon.down, sun_absence(&horizon)),
        noon: window.first(&transits.up, Absence::OtherDate),
        day_length: window.time_above(&horizon, limb(sun_sky[0]) >= 0.0),
        civil: twilight(6.0),
        nautical: twilight(12.0),
        astronomical: twilight(18.0),
    };

    let moon_horizon = cross(&moon_sky, &moon_track, &limb);
    let moon_absence = side(&moon_horizon, Absence::AlwaysUp, Absence::AlwaysDown);
    let moon = MoonDay {
        rise: window.first(&moon_horizon.up, moon_absence),
        set: window.first(&moon_horizon.down, moon_absence),
        phase: phase::phase(
            (&moon_places[0], &sun_places[0]),
            (&moon_places[3], &sun_places[3]),
            noon,
            &nutation,
        ),
    };
    Almanac { sun, moon }
}

/// Why a kind of crossing is missing: the body stayed on one side all day, or
/// it crossed only the other way.
fn side(c: &Crossings, above: Absence, below: Absence) -> Absence {
    if c.above_all_day {
        above
    } else if c.below_all_day {
        below
    } else {
        Absence::OtherDate
    }
}

struct Window {
    start: i64,
    end: i64,
}

impl Window {
    /// The first crossing that rounds into [start, end).
    fn first(&self, times: &[f64], absent: Absence) -> Event {
        times
            .iter()
            .map(|&t| t.round() as i64)
            .find(|&t| (self.start..self.end).contains(&t))
            .map(|t| Timestamp::from_second(t).expect("dates 1900–2100 are in range"))
            .ok_or(absent)
    }

    /// Seconds above the threshold within the window, from the side at its
    /// start and the crossings in between.
    fn time_above(&self, c: &Crossings, above_at_start: bool) -> i64 {
        let mut edges: Vec<(f64, bool)> =
            c.up.iter()
                .map(|&t| (t, true))
                .chain(c.down.iter().map(|&t| (t, false)))
                .collect();
        edges.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (mut total, mut since) = (
            0.0,
            if above_at_start {
                Some(self.start as f64)
            } else {
                None
            },
        );
        for (t, up) in edges {
            match (up, since) {
                (true, None) => since = Some(t),
                (false, Some(s)) => {
                    total += t - s;
                    since = None;
                }
                _ => {}
            }
        }
        if let Some(s) = since {
            total += self.end as f64 - s;
        }
        total.round() as i64
    }
}
