//! The Sun's apparent geocentric place (Meeus, *Astronomical Algorithms*, ch. 25,
//! "low accuracy" solar coordinates, with the full nutation of ch. 22 and the
//! aberration constant 20.4898″/R). Good to about 0.01°, ≈ 2–4 s of time at rise.

use crate::earth::{DEG, Nutation};
use crate::sky::{EARTH_RADIUS_KM, Place};

/// Solar radius, km (IAU 2015 nominal); gives the 959.63″ semidiameter at 1 AU.
pub const RADIUS_KM: f64 = 695_700.0;
const AU_KM: f64 = 149_597_870.7;
const ABERRATION: f64 = 20.4898 / 3600.0 * DEG;

/// `t`: Julian centuries TT from J2000.0.
pub fn place(t: f64, nut: &Nutation) -> Place {
    let l0 = 280.46646 + 36000.76983 * t + 0.0003032 * t * t;
    let m = (357.52911 + 35999.05029 * t - 0.0001537 * t * t) * DEG;
    let e = 0.016708634 - 0.000042037 * t - 0.0000001267 * t * t;
    let c = (1.914602 - 0.004817 * t - 0.000014 * t * t) * m.sin()
        + (0.019993 - 0.000101 * t) * (2.0 * m).sin()
        + 0.000289 * (3.0 * m).sin();
    let true_lon = (l0 + c) * DEG;
    let anomaly = m + c * DEG;
    let r_au = 1.000001018 * (1.0 - e * e) / (1.0 + e * anomaly.cos());
    let lon = true_lon + nut.dpsi - ABERRATION / r_au;
    Place::from_ecliptic(lon, 0.0, r_au * AU_KM / EARTH_RADIUS_KM, nut.eps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::earth::nutation;

    #[test]
    fn meeus_example_25a() {
        // 1992 October 13.0 TD: apparent α = 198.38083°, δ = −7.78507°, R = 0.99766 AU.
        let t = -0.072183436;
        let p = place(t, &nutation(t));
        let [x, y, z] = p.xyz;
        let ra = y.atan2(x) / DEG + 360.0;
        let dec = (z / p.dist).asin() / DEG;
        assert!((ra - 198.38083).abs() < 0.002, "{ra}");
        assert!((dec + 7.78507).abs() < 0.002, "{dec}");
        assert!((p.dist * EARTH_RADIUS_KM / AU_KM - 0.99766).abs() < 1e-4);
    }
}
