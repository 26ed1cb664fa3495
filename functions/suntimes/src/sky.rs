//! Where a body is in the observer's sky over one local day.
//!
//! The ephemerides are evaluated at four instants spanning the day and their
//! geocentric equatorial vectors interpolated (4-point Lagrange; for the Moon
//! over 25 h the error is under 1″), so each altitude evaluation during the
//! rise/set search costs one sidereal-time rotation instead of a lunar series.
//! This is the Astronomical Almanac's "interpolate the ephemeris, then solve"
//! approach in vector form.

use crate::earth::{self, Nutation, Observer};
use crate::time_scale;

/// Equatorial radius of the Earth, km (IAU 1976, as Meeus ch. 11).
pub const EARTH_RADIUS_KM: f64 = 6378.14;

/// A body's apparent geocentric place, true equator and equinox of date.
#[derive(Debug, Clone, Copy)]
pub struct Place {
    /// Equatorial rectangular coordinates, Earth radii.
    pub xyz: [f64; 3],
    /// Apparent ecliptic longitude and latitude, radians.
    pub lon: f64,
    pub lat: f64,
    /// Distance, Earth radii.
    pub dist: f64,
}

impl Place {
    pub fn from_ecliptic(lon: f64, lat: f64, dist: f64, eps: f64) -> Self {
        let (sl, cl) = lon.sin_cos();
        let (sb, cb) = lat.sin_cos();
        let (se, ce) = eps.sin_cos();
        Place {
            xyz: [
                dist * cb * cl,
                dist * (cb * sl * ce - sb * se),
                dist * (cb * sl * se + sb * ce),
            ],
            lon,
            lat,
            dist,
        }
    }
}

/// One body's places at four equally spaced instants, interpolated between.
pub struct Track {
    start: f64,
    step: f64,
    nodes: [[f64; 3]; 4],
    /// The body's radius in Earth radii, for its apparent semidiameter.
    radius: f64,
    observer: Observer,
    /// The local apparent sidereal angle at `start`, radians; it grows at
    /// [`earth::SIDEREAL_RATE`] from there (see [`Track::sight`]).
    local_sidereal: f64,
}

/// The body seen from the observer at one instant.
#[derive(Debug, Clone, Copy)]
pub struct Sighting {
    /// Topocentric altitude of the centre, without refraction, radians.
    pub alt: f64,
    /// Apparent semidiameter, radians.
    pub semidiameter: f64,
    /// Sign of the local hour angle: negative before transit, positive after.
    pub hour_sin: f64,
}

impl Track {
    /// `places[i]` is the body at `start + i·step` (Unix seconds).
    pub fn new(
        start: f64,
        step: f64,
        places: [Place; 4],
        radius_km: f64,
        observer: Observer,
        nutation: Nutation,
    ) -> Self {
        Track {
            start,
            step,
            nodes: places.map(|p| p.xyz),
            radius: radius_km / EARTH_RADIUS_KM,
            observer,
            local_sidereal: earth::gast(time_scale::jd_ut(start), &nutation) + observer.lon,
        }
    }

    fn xyz(&self, unix: f64) -> [f64; 3] {
        let s = (unix - self.start) / self.step;
        let (a, b, c) = (s - 1.0, s - 2.0, s - 3.0);
        let w = [
            -a * b * c / 6.0,
            s * b * c / 2.0,
            -s * a * c / 2.0,
            s * a * b / 6.0,
        ];
        let n = &self.nodes;
        std::array::from_fn(|k| w[0] * n[0][k] + w[1] * n[1][k] + w[2] * n[2][k] + w[3] * n[3][k])
    }

    /// Topocentric altitude and semidiameter at a Unix time: the geocentric
    /// vector rotated into the local meridian frame, minus the observer's
    /// geocentric position (Meeus ch. 40, in vector form), against the
    /// geodetic vertical.
    ///
    /// Sidereal time advances linearly from the window's start: over a day the
    /// quadratic and cubic terms of Meeus 12.4 move it by under 10⁻⁸ rad and the
    /// equation of the equinoxes is fixed with the day's nutation, while a full
    /// [`earth::gast`] per call (a large-argument remainder and a cosine) was a
    /// third of this function's cost in the component.
    pub fn sight(&self, unix: f64) -> Sighting {
        let [x, y, z] = self.xyz(unix);
        let theta = self.local_sidereal + earth::SIDEREAL_RATE * (unix - self.start);
        let (st, ct) = theta.sin_cos();
        // Meridian frame: x toward the local meridian on the equator, y toward
        // the west point's opposite (hour angle decreasing), z to the pole.
        let xm = x * ct + y * st - self.observer.rho_cos;
        let ym = -x * st + y * ct;
        let zm = z - self.observer.rho_sin;
        let d = (xm * xm + ym * ym + zm * zm).sqrt();
        let o = &self.observer;
        let sin_alt = (o.cos_lat * xm + o.sin_lat * zm) / d;
        Sighting {
            alt: sin_alt.clamp(-1.0, 1.0).asin(),
            // asin(r/d) ≈ r/d: the difference is below 10⁻⁷ rad for the Sun and Moon.
            semidiameter: self.radius / d,
            hour_sin: -ym,
        }
    }
}
