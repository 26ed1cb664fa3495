//! The Earth's orientation and the observer: nutation, obliquity, sidereal time
//! and the observer's place on the ellipsoid (Meeus, *Astronomical Algorithms*,
//! 2nd ed., ch. 11, 12 and 22).

use std::f64::consts::TAU;

pub const DEG: f64 = std::f64::consts::PI / 180.0;
const ARCSEC: f64 = DEG / 3600.0;

/// Nutation in longitude and the true obliquity of the ecliptic, radians.
#[derive(Debug, Clone, Copy)]
pub struct Nutation {
    pub dpsi: f64,
    pub eps: f64,
}

/// Meeus ch. 22, the abridged series (good to 0.5″ in Δψ, 0.1″ in Δε) and the
/// IAU mean obliquity (22.2). `t`: Julian centuries TT from J2000.0.
pub fn nutation(t: f64) -> Nutation {
    let omega = (125.04452 - 1934.136261 * t) * DEG;
    let l_sun = (280.4665 + 36000.7698 * t) * DEG;
    let l_moon = (218.3165 + 481267.8813 * t) * DEG;
    let dpsi = (-17.20 * omega.sin() - 1.32 * (2.0 * l_sun).sin() - 0.23 * (2.0 * l_moon).sin()
        + 0.21 * (2.0 * omega).sin())
        * ARCSEC;
    let deps = (9.20 * omega.cos() + 0.57 * (2.0 * l_sun).cos() + 0.10 * (2.0 * l_moon).cos()
        - 0.09 * (2.0 * omega).cos())
        * ARCSEC;
    let eps0 = 23.0 * DEG
        + 26.0 * DEG / 60.0
        + (21.448 - 46.8150 * t - 0.00059 * t * t + 0.001813 * t * t * t) * ARCSEC;
    Nutation {
        dpsi,
        eps: eps0 + deps,
    }
}

/// The rate of sidereal time (Meeus 12.4's linear term), radians per second of UT.
pub const SIDEREAL_RATE: f64 = 360.985_647_366_29 * DEG / 86_400.0;

/// Greenwich apparent sidereal time, radians in [0, 2π), for a Julian Day in UT
/// (Meeus 12.4 for the mean time, plus the equation of the equinoxes Δψ·cos ε).
pub fn gast(jd_ut: f64, nut: &Nutation) -> f64 {
    let d = jd_ut - crate::time_scale::J2000;
    let t = d / 36_525.0;
    let mean = 280.46061837 + 360.98564736629 * d + 0.000387933 * t * t - t * t * t / 38_710_000.0;
    (mean * DEG + nut.dpsi * nut.eps.cos()).rem_euclid(TAU)
}

/// An observer at sea level on the IAU 1976 ellipsoid (Meeus ch. 11).
#[derive(Debug, Clone, Copy)]
pub struct Observer {
    /// East longitude, radians.
    pub lon: f64,
    /// Sine and cosine of the geodetic latitude: the local vertical.
    pub sin_lat: f64,
    pub cos_lat: f64,
    /// ρ·sin φ′ and ρ·cos φ′: the observer's geocentric position in Earth radii.
    pub rho_sin: f64,
    pub rho_cos: f64,
}

impl Observer {
    pub fn new(lat_deg: f64, lon_deg: f64) -> Self {
        const B_OVER_A: f64 = 0.996_647_19;
        let lat = lat_deg * DEG;
        let u = (B_OVER_A * lat.tan()).atan();
        // tan() at the poles is ±∞ and atan(±∞) = ±π/2, exactly what u is there.
        Observer {
            lon: lon_deg * DEG,
            sin_lat: lat.sin(),
            cos_lat: lat.cos(),
            rho_sin: B_OVER_A * u.sin(),
            rho_cos: u.cos(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sidereal_time_meeus_example_12a() {
        // 1987 April 10, 0h UT: mean sidereal time 13h10m46.3668s.
        let nut = Nutation {
            dpsi: 0.0,
            eps: 23.44 * DEG,
        };
        let hours = gast(2_446_895.5, &nut) / TAU * 24.0;
        let want = 13.0 + 10.0 / 60.0 + 46.3668 / 3600.0;
        assert!((hours - want).abs() < 1e-6, "{hours}");
    }

    #[test]
    fn nutation_meeus_example_22a() {
        // 1987 April 10, 0h TD: Δψ = −3.788″, ε = 23°26′36.850″.
        let n = nutation(-0.127296372348);
        assert!((n.dpsi / ARCSEC + 3.788).abs() < 0.5, "{}", n.dpsi / ARCSEC);
        let eps = 23.0 + 26.0 / 60.0 + 36.850 / 3600.0;
        assert!((n.eps / DEG - eps).abs() < 0.2 / 3600.0, "{}", n.eps / DEG);
    }

    #[test]
    fn observer_meeus_example_11a() {
        // Palomar, φ = 33°21′22″, H = 1706 m: ρ sin φ′ = 0.546861, ρ cos φ′ = 0.836339.
        // At sea level the terms in H (≈ 0.00015 and 0.00022) drop out.
        let o = Observer::new(33.0 + 21.0 / 60.0 + 22.0 / 3600.0, 0.0);
        assert!(
            (o.rho_sin - (0.546861 - 0.000147)).abs() < 2e-6,
            "{}",
            o.rho_sin
        );
        assert!(
            (o.rho_cos - (0.836339 - 0.000223)).abs() < 2e-6,
            "{}",
            o.rho_cos
        );
    }
}
