//! `GET /suntimes?lat=&lon=&date=&tz=`: parsing and validation.
//!
//! * `lat` ∈ [−90, 90], `lon` ∈ [−180, 180], decimal degrees (north and east
//!   positive), both required, finite.
//! * `tz`: an IANA zone name (`Europe/London`), a fixed offset `±HH:MM` up to
//!   ±18:00, or `UTC` (the default).
//! * `date`: `YYYY-MM-DD`, the local calendar date in `tz`, years 1900–2100;
//!   default: today in `tz`.
//!
//! Unknown parameters are ignored. Every refusal is a 400 naming the parameter.

use glue::{ApiError, Query};
use jiff::civil::Date;
use jiff::tz::{Offset, TimeZone};

pub const YEARS: std::ops::RangeInclusive<i16> = 1900..=2100;

/// A validated request.
#[derive(Debug, Clone)]
pub struct Request {
    pub lat: f64,
    pub lon: f64,
    pub date: Date,
    pub tz: TimeZone,
    /// The zone as the client named it (`UTC` when defaulted), echoed back.
    pub tz_name: String,
}

impl Request {
    /// From a raw query string.
    pub fn parse(raw_query: &str) -> Result<Self, ApiError> {
        let query = Query::parse(raw_query);
        let lat = query.decimal("lat", -90.0..=90.0)?;
        let lon = query.decimal("lon", -180.0..=180.0)?;
        let tz_name = query.get("tz")?.map(|name| {
            // An unencoded `+` in a query decodes to a space: `tz=+05:30`
            // arrives as " 05:30"; take it as the offset the client meant.
            match name.strip_prefix(' ') {
                Some(rest) if rest.starts_with(|c: char| c.is_ascii_digit()) => format!("+{rest}"),
                _ => name.trim().to_string(),
            }
        });
        // Read before the zone, which is built for the date (crate::zone), but
        // a bad date is reported after a bad zone.
        let date = query
            .get("date")
            .and_then(|raw| raw.map(|raw| date(raw.trim())).transpose());
        let (tz, tz_name) = match tz_name {
            None => (TimeZone::UTC, "UTC".to_string()),
            Some(name) => (zone(&name, date.as_ref().ok().copied().flatten())?, name),
        };
        let date = match date? {
            Some(date) => date,
            None => jiff::Timestamp::now().to_zoned_datetime(tz.clone()).date(),
        };
        Self::new(lat, lon, date, tz, tz_name)
    }

    /// From parts (for callers that have them typed); checks the same ranges.
    pub fn new(
        lat: f64,
        lon: f64,
        date: Date,
        tz: TimeZone,
        tz_name: String,
    ) -> Result<Self, ApiError> {
        let bad =
            |name: &str, what: &str| ApiError::bad_request(format!("parameter {name} {what}"));
        if !(lat.is_finite() && (-90.0..=90.0).contains(&lat)) {
            return Err(bad("lat", "must be from -90 to 90"));
        }
        if !(lon.is_finite() && (-180.0..=180.0).contains(&lon)) {
            return Err(bad("lon", "must be from -180 to 180"));
        }
        if !YEARS.contains(&date.year()) {
            return Err(bad(
                "date",
                &format!("must be in the years 1900 to 2100, got {date}"),
            ));
        }
        let request = Request {
            lat,
            lon,
            date,
            tz,
            tz_name,
        };
        let (start, end, _) = crate::local_day(&request);
        if end <= start {
            // Zones have skipped whole dates (Pacific/Apia, 2011-12-30).
            let zone = &request.tz_name;
            return Err(bad("date", &format!("does not exist in time zone {zone}")));
        }
        Ok(request)
    }
}

fn date(raw: &str) -> Result<Date, ApiError> {
    let invalid = || {
        ApiError::bad_request(format!(
            "parameter date must be a calendar date YYYY-MM-DD, got {raw:?}"
        ))
    };
    let b = raw.as_bytes();
    let shaped = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if !shaped {
        return Err(invalid());
    }
    let date: Date = raw.parse().map_err(|_| invalid())?;
    if !YEARS.contains(&date.year()) {
        return Err(ApiError::bad_request(format!(
            "parameter date must be in the years 1900 to 2100, got {raw:?}"
        )));
    }
    Ok(date)
}

/// The zone `raw` names, for a request about `date` (today if `None`).
fn zone(raw: &str, date: Option<Date>) -> Result<TimeZone, ApiError> {
    if raw.eq_ignore_ascii_case("utc") {
        return Ok(TimeZone::UTC);
    }
    if raw.starts_with(['+', '-']) {
        return fixed_offset(raw).map(TimeZone::fixed).ok_or_else(|| {
            ApiError::bad_request(format!(
                "parameter tz offset must be ±HH:MM from -18:00 to +18:00, got {raw:?}"
            ))
        });
    }
    let around = match date {
        Some(date) => date
            .to_zoned_datetime(TimeZone::UTC)
            .expect("dates 1900–2100 are within jiff's range")
            .timestamp(),
        None => jiff::Timestamp::now(),
    };
    crate::zone::iana(raw, around).map_err(|_| {
        ApiError::bad_request(format!(
            "parameter tz must be an IANA time zone name (e.g. Europe/London), an offset ±HH:MM or UTC, got {raw:?}"
        ))
    })
}

/// `±HH:MM`, at most ±18:00.
fn fixed_offset(raw: &str) -> Option<Offset> {
    let b = raw.as_bytes();
    if b.len() != 6 || b[3] != b':' || ![1, 2, 4, 5].iter().all(|&i| b[i].is_ascii_digit()) {
        return None;
    }
    let digits = |i: usize| i32::from(b[i] - b'0') * 10 + i32::from(b[i + 1] - b'0');
    let (hours, minutes) = (digits(1), digits(4));
    let seconds = hours * 3600 + minutes * 60;
    if minutes >= 60 || seconds > 18 * 3600 {
        return None;
    }
    let sign = if b[0] == b'-' { -1 } else { 1 };
    Offset::from_seconds(sign * seconds).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(query: &str) -> String {
        let err = Request::parse(query).expect_err(query);
        assert_eq!(err.status, 400, "{query}");
        err.message
    }

    #[test]
    fn each_bad_input_is_a_400_naming_the_parameter() {
        let cases = [
            ("lat=NaN&lon=0", "lat"),
            ("lat=inf&lon=0", "lat"),
            ("lat=-infinity&lon=0", "lat"),
            ("lat=91&lon=0", "lat"),
            ("lat=-90.0001&lon=0", "lat"),
            ("lon=0", "lat"),
            ("lat=abc&lon=0", "lat"),
            ("lat=0&lon=-181", "lon"),
            ("lat=0&lon=NaN", "lon"),
            ("lat=0", "lon"),
            ("lat=0&lon=0&date=1899-12-31", "date"),
            ("lat=0&lon=0&date=2101-01-01", "date"),
            ("lat=0&lon=0&date=2024-02-30", "date"),
            ("lat=0&lon=0&date=2024-2-3", "date"),
            ("lat=0&lon=0&date=today", "date"),
            ("lat=0&lon=0&date=", "date"),
            ("lat=0&lon=0&tz=Mars/Olympus_Mons", "tz"),
            ("lat=0&lon=0&tz=%2B25:00", "tz"),
            ("lat=0&lon=0&tz=%2B05:60", "tz"),
            ("lat=0&lon=0&tz=%2B0530", "tz"),
            ("lat=0&lon=0&tz=", "tz"),
            ("lat=0&lat=1&lon=0", "lat"),
        ];
        for (query, name) in cases {
            let message = refused(query);
            assert!(
                message.contains(&format!("parameter {name}")),
                "{query}: {message}"
            );
        }
    }

    #[test]
    fn accepts_zones_offsets_and_defaults() {
        let r = Request::parse("lat=51.5&lon=-0.12&date=2024-06-21&tz=Europe/London").unwrap();
        assert_eq!(
            (r.lat, r.lon, r.date.to_string(), r.tz_name.as_str()),
            (51.5, -0.12, "2024-06-21".into(), "Europe/London")
        );
        let r = Request::parse("lat=0&lon=0&date=2024-06-21&tz=%2B05:30").unwrap();
        assert_eq!(r.tz.to_fixed_offset().unwrap().seconds(), 5 * 3600 + 1800);
        let r = Request::parse("lat=0&lon=0&date=2024-06-21&tz=+05:30").unwrap();
        assert_eq!(
            (
                r.tz.to_fixed_offset().unwrap().seconds(),
                r.tz_name.as_str()
            ),
            (19800, "+05:30")
        );
        let r = Request::parse("lat=0&lon=0&date=2024-06-21&tz=-08:00").unwrap();
        assert_eq!(r.tz.to_fixed_offset().unwrap().seconds(), -8 * 3600);
        let r = Request::parse("lat=-90&lon=180&date=1900-01-01&extra=ignored").unwrap();
        assert_eq!(r.tz_name, "UTC");
        let r = Request::parse("lat=90&lon=-180").unwrap();
        assert!(YEARS.contains(&r.date.year()));
        assert!(Request::parse("lat=0&lon=0&date=2100-12-31&tz=Asia/Kolkata").is_ok());
        // Samoa skipped 2011-12-30 moving across the date line.
        assert!(
            refused("lat=-13.8&lon=-171.8&date=2011-12-30&tz=Pacific/Apia")
                .contains("parameter date")
        );
        assert!(Request::parse("lat=-13.8&lon=-171.8&date=2011-12-31&tz=Pacific/Apia").is_ok());
    }
}
