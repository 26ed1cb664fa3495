//! `GET /suntimes?lat=&lon=&date=&tz=`: sunrise, sunset, noon, day length,
//! civil/nautical/astronomical twilight, moonrise, moonset and the Moon's
//! phase for a place and local date, to the minute.
//!
//! Pure Rust, no I/O: Meeus's *Astronomical Algorithms* (2nd ed.) solar (ch. 25)
//! and lunar (ch. 47) series, nutation (ch. 22), sidereal time (ch. 12), the
//! Espenak–Meeus ΔT, and a threshold-crossing search over the local day
//! ([`events`]). Checked against PyEphem (VSOP87/ELP) in `tests/golden`.
//!
//! Modules: [`request`] parses and validates ([`zone`] builds the time zone),
//! [`events`] computes the [`Almanac`], [`response`] shapes the JSON
//! ([`Response`] documents it).

// Meeus's coefficients are copied digit for digit from his tables, and his formulas
// name their terms with single letters (T, L, M, e, C): the code reads beside the book.
// Midpoints stay `(a + b) / 2.0` (no overflow at these magnitudes): the measured code
// is not changed by a lint.
#![allow(
    clippy::unreadable_literal,
    clippy::many_single_char_names,
    clippy::manual_midpoint
)]

pub mod earth;
pub mod events;
pub mod moon;
pub mod phase;
pub mod request;
pub mod response;
pub mod search;
pub mod sky;
pub mod sun;
pub mod time_scale;
pub mod zone;

#[cfg(all(target_arch = "wasm32", feature = "p2"))]
glue::spin_component!(ENDPOINT);

pub use events::{Absence, Almanac, Event};
pub use request::Request;
pub use response::Response;

use glue::{ApiError, Endpoint, Handler, Head, Reply};

pub static ENDPOINT: Endpoint = Endpoint {
    route: "/suntimes",
    methods: &["GET"],
    handler: Handler::Head(suntimes),
    // ~14 µs of computation natively: less than handing it to another thread costs.
    cpu_bound: false,
};

pub fn suntimes(head: &Head) -> Result<Reply, ApiError> {
    let request = Request::parse(&head.query)?;
    Ok(Reply::json(&Response::new(&request, &compute(&request))))
}

/// The pure computation for one request: the local date's window in its zone,
/// then the events in it.
pub fn compute(request: &Request) -> Almanac {
    let (start, end, noon) = local_day(request);
    events::almanac(request.lat, request.lon, start, end, noon)
}

/// The local date's first instant, the next date's first instant and 12:00
/// local time, as Unix seconds. A midnight that falls in a DST gap starts the
/// day at the first instant after the gap.
pub fn local_day(request: &Request) -> (i64, i64, i64) {
    let at = |date: jiff::civil::Date, hour: i8| {
        date.at(hour, 0, 0, 0)
            .to_zoned_datetime(request.tz.clone())
            .expect("dates 1900–2101 are within jiff's range")
            .timestamp()
            .as_second()
    };
    let next = request
        .date
        .tomorrow()
        .expect("2101-01-01 is within jiff's range");
    (at(request.date, 0), at(next, 0), at(request.date, 12))
}
