//! The Moon's apparent geocentric place: Meeus, *Astronomical Algorithms*, 2nd
//! ed., ch. 47 (Chapront's ELP-2000/82 truncated to the 60 + 60 largest terms of
//! tables 47.A and 47.B, plus the additive Venus/Jupiter/flattening terms),
//! about 10″ in longitude and 4″ in latitude: far inside the 2-minute bar.

use crate::earth::{DEG, Nutation};
use crate::sky::{EARTH_RADIUS_KM, Place};

/// Mean lunar radius, km (IAU).
pub const RADIUS_KM: f64 = 1737.4;

/// Table 47.A: multiples of D, M, M′, F; Σl coefficient (1e-6°); Σr (1e-3 km).
#[rustfmt::skip]
const LR: [(i8, i8, i8, i8, i32, i32); 60] = [
    (0, 0, 1, 0, 6288774, -20905355), (2, 0, -1, 0, 1274027, -3699111),
    (2, 0, 0, 0, 658314, -2955968), (0, 0, 2, 0, 213618, -569925),
    (0, 1, 0, 0, -185116, 48888), (0, 0, 0, 2, -114332, -3149),
    (2, 0, -2, 0, 58793, 246158), (2, -1, -1, 0, 57066, -152138),
    (2, 0, 1, 0, 53322, -170733), (2, -1, 0, 0, 45758, -204586),
    (0, 1, -1, 0, -40923, -129620), (1, 0, 0, 0, -34720, 108743),
    (0, 1, 1, 0, -30383, 104755), (2, 0, 0, -2, 15327, 10321),
    (0, 0, 1, 2, -12528, 0), (0, 0, 1, -2, 10980, 79661),
    (4, 0, -1, 0, 10675, -34782), (0, 0, 3, 0, 10034, -23210),
    (4, 0, -2, 0, 8548, -21636), (2, 1, -1, 0, -7888, 24208),
    (2, 1, 0, 0, -6766, 30824), (1, 0, -1, 0, -5163, -8379),
    (1, 1, 0, 0, 4987, -16675), (2, -1, 1, 0, 4036, -12831),
    (2, 0, 2, 0, 3994, -10445), (4, 0, 0, 0, 3861, -11650),
    (2, 0, -3, 0, 3665, 14403), (0, 1, -2, 0, -2689, -7003),
    (2, 0, -1, 2, -2602, 0), (2, -1, -2, 0, 2390, 10056),
    (1, 0, 1, 0, -2348, 6322), (2, -2, 0, 0, 2236, -9884),
    (0, 1, 2, 0, -2120, 5751), (0, 2, 0, 0, -2069, 0),
    (2, -2, -1, 0, 2048, -4950), (2, 0, 1, -2, -1773, 4130),
    (2, 0, 0, 2, -1595, 0), (4, -1, -1, 0, 1215, -3958),
    (0, 0, 2, 2, -1110, 0), (3, 0, -1, 0, -892, 3258),
    (2, 1, 1, 0, -810, 2616), (4, -1, -2, 0, 759, -1897),
    (0, 2, -1, 0, -713, -2117), (2, 2, -1, 0, -700, 2354),
    (2, 1, -2, 0, 691, 0), (2, -1, 0, -2, 596, 0),
    (4, 0, 1, 0, 549, -1423), (0, 0, 4, 0, 537, -1117),
    (4, -1, 0, 0, 520, -1571), (1, 0, -2, 0, -487, -1739),
    (2, 1, 0, -2, -399, 0), (0, 0, 2, -2, -381, -4421),
    (1, 1, 1, 0, 351, 0), (3, 0, -2, 0, -340, 0),
    (4, 0, -3, 0, 330, 0), (2, -1, 2, 0, 327, 0),
    (0, 2, 1, 0, -323, 1165), (1, 1, -1, 0, 299, 0),
    (2, 0, 3, 0, 294, 0), (2, 0, -1, -2, 0, 8752),
];

/// Table 47.B: multiples of D, M, M′, F; Σb coefficient (1e-6°).
#[rustfmt::skip]
const B: [(i8, i8, i8, i8, i32); 60] = [
    (0, 0, 0, 1, 5128122), (0, 0, 1, 1, 280602), (0, 0, 1, -1, 277693), (2, 0, 0, -1, 173237),
    (2, 0, -1, 1, 55413), (2, 0, -1, -1, 46271), (2, 0, 0, 1, 32573), (0, 0, 2, 1, 17198),
    (2, 0, 1, -1, 9266), (0, 0, 2, -1, 8822), (2, -1, 0, -1, 8216), (2, 0, -2, -1, 4324),
    (2, 0, 1, 1, 4200), (2, 1, 0, -1, -3359), (2, -1, -1, 1, 2463), (2, -1, 0, 1, 2211),
    (2, -1, -1, -1, 2065), (0, 1, -1, -1, -1870), (4, 0, -1, -1, 1828), (0, 1, 0, 1, -1794),
    (0, 0, 0, 3, -1749), (0, 1, -1, 1, -1565), (1, 0, 0, 1, -1491), (0, 1, 1, 1, -1475),
    (0, 1, 1, -1, -1410), (0, 1, 0, -1, -1344), (1, 0, 0, -1, -1335), (0, 0, 3, 1, 1107),
    (4, 0, 0, -1, 1021), (4, 0, -1, 1, 833), (0, 0, 1, -3, 777), (4, 0, -2, 1, 671),
    (2, 0, 0, -3, 607), (2, 0, 2, -1, 596), (2, -1, 1, -1, 491), (2, 0, -2, 1, -451),
    (0, 0, 3, -1, 439), (2, 0, 2, 1, 422), (2, 0, -3, -1, 421), (2, 1, -1, 1, -366),
    (2, 1, 0, 1, -351), (4, 0, 0, 1, 331), (2, -1, 1, 1, 315), (2, -2, 0, -1, 302),
    (0, 0, 1, 3, -283), (2, 1, 1, -1, -229), (1, 1, 0, -1, 223), (1, 1, 0, 1, 223),
    (0, 1, -2, -1, -220), (2, 1, -1, -1, -220), (1, 0, 1, 1, -185), (2, -1, -2, -1, 181),
    (0, 1, 2, 1, -177), (4, 0, -2, -1, 176), (4, -1, -1, -1, 166), (1, 0, 1, -1, -164),
    (4, 0, 1, -1, 132), (1, 0, -1, -1, -119), (4, -1, 0, -1, 115), (2, -2, 0, 1, 107),
];

/// The Moon's mean arguments (47.1–47.5) at `t`, with what each periodic term
/// of tables 47.A and 47.B needs from them.
struct MeanArguments {
    /// L′, F and M′, degrees.
    lp: f64,
    f: f64,
    mp: f64,
    /// The Earth's orbital eccentricity decreasing (47.6) scales terms in M by
    /// E^|k|.
    e_factor: [f64; 3],
    /// Multiples of D, M, M′ and F: each term's argument is a small integer
    /// combination of them, so its sine and cosine come from products of these
    /// (angle addition), four times faster than 120 calls to sin_cos.
    d: Powers,
    m: Powers,
    m_prime: Powers,
    f_mult: Powers,
}

impl MeanArguments {
    fn at(t: f64) -> Self {
        let (t2, t3, t4) = (t * t, t * t * t, t * t * t * t);
        let lp =
            218.3164477 + 481267.88123421 * t - 0.0015786 * t2 + t3 / 538841.0 - t4 / 65194000.0;
        let d =
            297.8501921 + 445267.1114034 * t - 0.0018819 * t2 + t3 / 545868.0 - t4 / 113065000.0;
        let m = 357.5291092 + 35999.0502909 * t - 0.0001536 * t2 + t3 / 24490000.0;
        let mp = 134.9633964 + 477198.8675055 * t + 0.0087414 * t2 + t3 / 69699.0 - t4 / 14712000.0;
        let f =
            93.2720950 + 483202.0175233 * t - 0.0036539 * t2 - t3 / 3526000.0 + t4 / 863310000.0;
        let e = 1.0 - 0.002516 * t - 0.0000074 * t2;
        Self {
            lp,
            f,
            mp,
            e_factor: [1.0, e, e * e],
            d: Unit::powers(d * DEG),
            m: Unit::powers(m * DEG),
            m_prime: Unit::powers(mp * DEG),
            f_mult: Unit::powers(f * DEG),
        }
    }

    /// cos and sin of kd·D + km·M + kmp·M′ + kf·F.
    ///
    /// Always inlined: left as a call, wasm32 returns the pair through memory
    /// and the lunar series ran 3.4× slower in the component than natively
    /// (2.4 vs 0.7 µs per [`place`]; inlined, 1.0 µs).
    #[allow(clippy::inline_always, reason = "measured: see above")]
    #[inline(always)]
    fn term(&self, kd: i8, km: i8, kmp: i8, kf: i8) -> Unit {
        let (d, m) = (self.d.get(kd), self.m.get(km));
        d.mul(m).mul(self.m_prime.get(kmp)).mul(self.f_mult.get(kf))
    }

    /// E^|km|, the eccentricity factor of a term in km·M.
    fn eccentricity(&self, km: i8) -> f64 {
        self.e_factor[km.unsigned_abs() as usize]
    }
}

/// The apparent ecliptic longitude alone, from the first `terms` rows of
/// table 47.A: with 25 rows, within 0.02° of the full series, and about three
/// times cheaper (for the new-moon search behind the Moon's age).
pub fn longitude(t: f64, nut: &Nutation, terms: usize) -> f64 {
    let args = MeanArguments::at(t);
    let sl: f64 = LR[..terms.min(LR.len())]
        .iter()
        .map(|&(kd, km, kmp, kf, l, _)| {
            f64::from(l) * args.eccentricity(km) * args.term(kd, km, kmp, kf).sin
        })
        .sum();
    ((args.lp + sl * 1e-6) * DEG + nut.dpsi).rem_euclid(std::f64::consts::TAU)
}

/// `t`: Julian centuries TT from J2000.0.
pub fn place(t: f64, nut: &Nutation) -> Place {
    let args = MeanArguments::at(t);
    let (lp, f, mp) = (args.lp, args.f, args.mp);
    let a1 = (119.75 + 131.849 * t) * DEG;
    let a2 = (53.09 + 479264.290 * t) * DEG;
    let a3 = (313.45 + 481266.484 * t) * DEG;

    let (mut sl, mut sr, mut sb) = (0.0, 0.0, 0.0);
    for &(kd, km, kmp, kf, l, r) in &LR {
        let z = args.term(kd, km, kmp, kf);
        let ef = args.eccentricity(km);
        sl += f64::from(l) * ef * z.sin;
        sr += f64::from(r) * ef * z.cos;
    }
    for &(kd, km, kmp, kf, b) in &B {
        sb += f64::from(b) * args.eccentricity(km) * args.term(kd, km, kmp, kf).sin;
    }
    let (lpr, fr, mpr) = (lp * DEG, f * DEG, mp * DEG);
    sl += 3958.0 * a1.sin() + 1962.0 * (lpr - fr).sin() + 318.0 * a2.sin();
    sb += -2235.0 * lpr.sin()
        + 382.0 * a3.sin()
        + 175.0 * (a1 - fr).sin()
        + 175.0 * (a1 + fr).sin()
        + 127.0 * (lpr - mpr).sin()
        - 115.0 * (lpr + mpr).sin();

    let lon = ((lp + sl * 1e-6) * DEG + nut.dpsi).rem_euclid(std::f64::consts::TAU);
    let lat = sb * 1e-6 * DEG;
    let dist_km = 385000.56 + sr * 1e-3;
    Place::from_ecliptic(lon, lat, dist_km / EARTH_RADIUS_KM, nut.eps)
}

/// cos x + i·sin x.
#[derive(Clone, Copy)]
struct Unit {
    cos: f64,
    sin: f64,
}

impl Unit {
    fn mul(self, o: Unit) -> Unit {
        Unit {
            cos: self.cos * o.cos - self.sin * o.sin,
            sin: self.sin * o.cos + self.cos * o.sin,
        }
    }
}

/// The multiples 0·x … 4·x of an angle (the tables use at most 4).
struct Powers([Unit; 5]);

impl Unit {
    fn powers(x: f64) -> Powers {
        let (sin, cos) = x.sin_cos();
        let one = Unit { cos, sin };
        let mut p = [Unit { cos: 1.0, sin: 0.0 }; 5];
        for k in 1..5 {
            p[k] = p[k - 1].mul(one);
        }
        Powers(p)
    }
}

impl Powers {
    /// k·x for k in −4..=4.
    fn get(&self, k: i8) -> Unit {
        let u = self.0[k.unsigned_abs() as usize];
        if k < 0 {
            Unit {
                cos: u.cos,
                sin: -u.sin,
            }
        } else {
            u
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::earth::nutation;

    #[test]
    fn truncated_longitude_is_close_to_the_full_series() {
        for i in 0..200 {
            let t = -1.0 + f64::from(i) * 0.01;
            let nut = nutation(t);
            let full = place(t, &nut).lon;
            let diff = (longitude(t, &nut, 25) - full + 3.0 * std::f64::consts::PI)
                .rem_euclid(std::f64::consts::TAU)
                - std::f64::consts::PI;
            assert!(diff.abs() / DEG < 0.03, "{t}: {}", diff / DEG);
        }
    }

    #[test]
    fn meeus_example_47a() {
        // 1992 April 12, 0h TD: λ = 133.162655° (+ Δψ = 0.004610° → apparent
        // 133.167265°), β = −3.229126°, Δ = 368409.7 km, α = 134.688470°, δ = 13.768368°.
        let t = -0.077221081451;
        let p = place(t, &nutation(t));
        assert!((p.lon / DEG - 133.167265).abs() < 2e-4, "{}", p.lon / DEG);
        assert!((p.lat / DEG + 3.229126).abs() < 1e-5, "{}", p.lat / DEG);
        assert!((p.dist * EARTH_RADIUS_KM - 368409.7).abs() < 0.1);
        let [x, y, z] = p.xyz;
        assert!(
            (y.atan2(x) / DEG - 134.688470).abs() < 2e-4,
            "{}",
            y.atan2(x) / DEG
        );
        assert!(((z / p.dist).asin() / DEG - 13.768368).abs() < 2e-4);
    }
}
