//! Time scales: Unix seconds (UTC ≈ UT1 for our purpose), Julian Day, ΔT and
//! Terrestrial Time.
//!
//! The ephemerides take TT (Julian centuries from J2000.0); the Earth's rotation
//! takes UT. Leap seconds and UT1−UTC (< 0.9 s) are below the bar and ignored.

/// Julian Day of 2000-01-01 12:00 TT (J2000.0).
pub const J2000: f64 = 2_451_545.0;
/// Julian Day of the Unix epoch, 1970-01-01 00:00 UT.
const UNIX_EPOCH_JD: f64 = 2_440_587.5;
pub const SECONDS_PER_DAY: f64 = 86_400.0;

/// Julian Day (UT) of a Unix time in seconds.
pub fn jd_ut(unix: f64) -> f64 {
    unix / SECONDS_PER_DAY + UNIX_EPOCH_JD
}

/// Julian centuries of TT since J2000.0 at a Unix time: the ephemerides' argument.
pub fn centuries_tt(unix: f64) -> f64 {
    let jd = jd_ut(unix);
    let year = 2000.0 + (jd - J2000) / 365.25;
    (jd + delta_t(year) / SECONDS_PER_DAY - J2000) / 36_525.0
}

/// ΔT = TT − UT in seconds for a decimal year, by the Espenak–Meeus polynomials
/// (NASA's "Five Millennium Canon of Solar Eclipses", 2006), pieces 1900–2150.
/// Outside 1900–2150 the nearest piece is extended; the service only asks 1900–2100.
pub fn delta_t(y: f64) -> f64 {
    if y < 1920.0 {
        let t = y - 1900.0;
        -2.79 + 1.494119 * t - 0.0598939 * t * t + 0.0061966 * t.powi(3) - 0.000197 * t.powi(4)
    } else if y < 1941.0 {
        let t = y - 1920.0;
        21.20 + 0.84493 * t - 0.076100 * t * t + 0.0020936 * t.powi(3)
    } else if y < 1961.0 {
        let t = y - 1950.0;
        29.07 + 0.407 * t - t * t / 233.0 + t.powi(3) / 2547.0
    } else if y < 1986.0 {
        let t = y - 1975.0;
        45.45 + 1.067 * t - t * t / 260.0 - t.powi(3) / 718.0
    } else if y < 2005.0 {
        let t = y - 2000.0;
        63.86 + 0.3345 * t - 0.060374 * t * t
            + 0.0017275 * t.powi(3)
            + 0.000651814 * t.powi(4)
            + 0.00002373599 * t.powi(5)
    } else if y < 2050.0 {
        let t = y - 2000.0;
        62.92 + 0.32217 * t + 0.005589 * t * t
    } else {
        let u = (y - 1820.0) / 100.0;
        -20.0 + 32.0 * u * u - 0.5628 * (2150.0 - y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_t_matches_published_values() {
        // Espenak–Meeus tabulated values (s): 1900 −2.8, 1950 29.1, 2000 63.9, 2100 ~203.
        for (year, want, tol) in [
            (1900.0, -2.8, 0.2),
            (1950.0, 29.1, 0.2),
            (2000.0, 63.9, 0.2),
            (2100.0, 202.7, 1.0),
        ] {
            let got = delta_t(year);
            assert!((got - want).abs() < tol, "{year}: {got}");
        }
    }

    #[test]
    fn julian_day_of_j2000() {
        // 2000-01-01T12:00:00Z is Unix 946728000.
        assert_eq!(jd_ut(946_728_000.0), J2000);
    }
}
