//! The JSON body of a `200`.

use crate::Request;
use crate::events::{Absence, Almanac, Event, Twilight};
use crate::phase::PhaseName;
use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::Serialize;

/// `GET /suntimes` answers with this, as `application/json`.
///
/// Times are ISO 8601 local times with the zone's UTC offset at that instant
/// (so each is right on a DST change day), to the second. Every event has a
/// sibling `<event>_absent`: `null` when the event has a time, otherwise the
/// reason it has none on this local date (and the event is `null`):
///
/// | reason        | meaning |
/// |---------------|---------|
/// | `polar_day`   | the Sun stays above the horizon all day |
/// | `polar_night` | the Sun stays below the horizon (for a twilight: below that twilight's depression) all day |
/// | `white_night` | twilight only: the Sun sets but never gets that far below the horizon, so that twilight never ends |
/// | `always_up`   | the Moon stays above the horizon all day |
/// | `always_down` | the Moon stays below the horizon all day |
/// | `other_date`  | this date the body only crosses the other way; the event falls on the day before or after (e.g. the monthly date without a moonrise) |
///
/// If an event happens twice in one local date (two moonsets; a sunset just
/// after midnight and another before the next one at high latitude), the first
/// is reported.
///
/// ```json
/// {
///   "location": {"lat": 51.5074, "lon": -0.1278},
///   "date": "2024-06-21",
///   "tz": "Europe/London",
///   "sun": {
///     "rise": "2024-06-21T04:43:15+01:00", "rise_absent": null,
///     "set": "2024-06-21T21:21:37+01:00", "set_absent": null,
///     "noon": "2024-06-21T13:02:27+01:00", "noon_absent": null,
///     "day_length": 59902,
///     "twilight": {
///       "civil": {"begin": "2024-06-21T03:55:26+01:00", "begin_absent": null,
///                 "end": "2024-06-21T22:09:25+01:00", "end_absent": null},
///       "nautical": {"begin": "2024-06-21T02:40:47+01:00", "begin_absent": null,
///                    "end": "2024-06-21T23:24:03+01:00", "end_absent": null},
///       "astronomical": {"begin": null, "begin_absent": "white_night",
///                        "end": null, "end_absent": "white_night"}
///     }
///   },
///   "moon": {
///     "rise": "2024-06-21T21:44:03+01:00", "rise_absent": null,
///     "set": "2024-06-21T03:24:25+01:00", "set_absent": null,
///     "phase": "waxing_gibbous", "illuminated_fraction": 0.994, "age_days": 14.93
///   }
/// }
/// ```
///
/// * `sun.noon`: the Sun's upper transit (local apparent noon).
/// * `sun.day_length`: seconds the Sun's upper limb is above the horizon
///   within this local date (0 in polar night, the date's length in polar day).
/// * `sun.twilight.*.begin` / `end`: the Sun's centre at −6° (civil), −12°
///   (nautical), −18° (astronomical), morning and evening.
/// * `moon.phase`: `new_moon`, `first_quarter`, `full_moon`, `last_quarter` when
///   that instant falls within the date, else `waxing_crescent`,
///   `waxing_gibbous`, `waning_gibbous` or `waning_crescent` at 12:00 local time.
/// * `moon.illuminated_fraction` (0–1, 3 decimals) and `moon.age_days` (days
///   since the last new moon, 2 decimals): at 12:00 local time.
/// * Rise and set are for the upper limb with 34′ of refraction, at sea level;
///   the Moon's are topocentric (its parallax included).
#[derive(Debug, Clone, Serialize)]
pub struct Response {
    pub location: Location,
    pub date: String,
    pub tz: String,
    pub sun: Sun,
    pub moon: Moon,
}

#[derive(Debug, Clone, Serialize)]
pub struct Location {
    pub lat: f64,
    pub lon: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Sun {
    pub rise: Option<String>,
    pub rise_absent: Option<Absence>,
    pub set: Option<String>,
    pub set_absent: Option<Absence>,
    pub noon: Option<String>,
    pub noon_absent: Option<Absence>,
    pub day_length: i64,
    pub twilight: Twilights,
}

#[derive(Debug, Clone, Serialize)]
pub struct Twilights {
    pub civil: TwilightTimes,
    pub nautical: TwilightTimes,
    pub astronomical: TwilightTimes,
}

#[derive(Debug, Clone, Serialize)]
pub struct TwilightTimes {
    pub begin: Option<String>,
    pub begin_absent: Option<Absence>,
    pub end: Option<String>,
    pub end_absent: Option<Absence>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Moon {
    pub rise: Option<String>,
    pub rise_absent: Option<Absence>,
    pub set: Option<String>,
    pub set_absent: Option<Absence>,
    pub phase: PhaseName,
    pub illuminated_fraction: f64,
    pub age_days: f64,
}

impl Response {
    pub fn new(request: &Request, almanac: &Almanac) -> Self {
        let tz = &request.tz;
        let (sun, moon) = (&almanac.sun, &almanac.moon);
        let (sun_rise, sun_rise_absent) = split(&sun.rise, tz);
        let (sun_set, sun_set_absent) = split(&sun.set, tz);
        let (noon, noon_absent) = split(&sun.noon, tz);
        let (moon_rise, moon_rise_absent) = split(&moon.rise, tz);
        let (moon_set, moon_set_absent) = split(&moon.set, tz);
        Response {
            location: Location {
                lat: request.lat,
                lon: request.lon,
            },
            date: request.date.to_string(),
            tz: request.tz_name.clone(),
            sun: Sun {
                rise: sun_rise,
                rise_absent: sun_rise_absent,
                set: sun_set,
                set_absent: sun_set_absent,
                noon,
                noon_absent,
                day_length: sun.day_length,
                twilight: Twilights {
                    civil: twilight(&sun.civil, tz),
                    nautical: twilight(&sun.nautical, tz),
                    astronomical: twilight(&sun.astronomical, tz),
                },
            },
            moon: Moon {
                rise: moon_rise,
                rise_absent: moon_rise_absent,
                set: moon_set,
                set_absent: moon_set_absent,
                phase: moon.phase.name,
                illuminated_fraction: round(moon.phase.illuminated_fraction, 1e3),
                age_days: round(moon.phase.age_days, 1e2),
            },
        }
    }
}

fn twilight(t: &Twilight, tz: &TimeZone) -> TwilightTimes {
    let (begin, begin_absent) = split(&t.begin, tz);
    let (end, end_absent) = split(&t.end, tz);
    TwilightTimes {
        begin,
        begin_absent,
        end,
        end_absent,
    }
}

fn split(event: &Event, tz: &TimeZone) -> (Option<String>, Option<Absence>) {
    match event {
        Ok(t) => (Some(local_time(*t, tz)), None),
        Err(why) => (None, Some(*why)),
    }
}

/// `2024-06-21T04:43:09+01:00`: local time and the offset in force then
/// (with seconds in the offset only for the rare historical zones that have them).
///
/// Written digit by digit: a response has up to eleven of these, and jiff's
/// general `strftime` took 0.5 µs each in the component (0.2 µs natively).
pub fn local_time(t: Timestamp, tz: &TimeZone) -> String {
    let offset = tz.to_offset(t);
    let local = offset.to_datetime(t);
    let mut out = String::with_capacity(25);
    // Events fall in the years 1899–2101: four digits, no sign.
    let fields = [
        (u32::from(local.year().unsigned_abs()), 4, '-'),
        (local.month() as u32, 2, '-'),
        (local.day() as u32, 2, 'T'),
        (local.hour() as u32, 2, ':'),
        (local.minute() as u32, 2, ':'),
        (
            local.second() as u32,
            2,
            if offset.seconds() < 0 { '-' } else { '+' },
        ),
    ];
    for (value, width, then) in fields {
        push_digits(&mut out, value, width);
        out.push(then);
    }
    let seconds = offset.seconds().unsigned_abs();
    push_digits(&mut out, seconds / 3600, 2);
    out.push(':');
    push_digits(&mut out, seconds / 60 % 60, 2);
    if !seconds.is_multiple_of(60) {
        out.push(':');
        push_digits(&mut out, seconds % 60, 2);
    }
    out
}

/// `n` in exactly `width` decimal digits, zero-padded (`n` fits).
fn push_digits(out: &mut String, n: u32, width: u32) {
    for place in (0..width).rev() {
        out.push(char::from(b'0' + (n / 10_u32.pow(place) % 10) as u8));
    }
}

fn round(x: f64, scale: f64) -> f64 {
    (x * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same text as jiff's `strftime` with `%:z` (or `%::z` for offsets
    /// with seconds), across zones with negative, half-hour, +14 h and
    /// seconds-precision historical offsets, every 97 hours from 1899 to 2101.
    #[test]
    fn local_time_is_jiffs_iso_format() {
        let zones = [
            "UTC",
            "Europe/London",
            "America/Sao_Paulo",
            "Asia/Kolkata",
            "Pacific/Kiritimati",
            "Etc/GMT+12",
            "Africa/Monrovia",
            "Europe/Amsterdam",
            "America/St_Johns",
        ];
        let (first, last) = (-2_209_075_200_i64, 4_133_980_799_i64); // 1899-12-31, 2100-12-31
        let (mut negative, mut with_seconds) = (0, 0);
        for name in zones {
            let tz = TimeZone::get(name).unwrap();
            for second in (first..last).step_by(97 * 3600 + 17) {
                let t = Timestamp::from_second(second).unwrap();
                let zoned = t.to_zoned_datetime(tz.clone());
                negative += usize::from(zoned.offset().seconds() < 0);
                with_seconds += usize::from(zoned.offset().seconds() % 60 != 0);
                let format = if zoned.offset().seconds() % 60 == 0 {
                    "%Y-%m-%dT%H:%M:%S%:z"
                } else {
                    "%Y-%m-%dT%H:%M:%S%::z"
                };
                assert_eq!(local_time(t, &tz), zoned.strftime(format).to_string());
            }
        }
        assert!(
            negative > 1000 && with_seconds > 1000,
            "{negative} {with_seconds}"
        );
    }
}
