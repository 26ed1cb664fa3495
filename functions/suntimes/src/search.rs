//! Finding where a smooth function of time crosses zero within a window.
//!
//! The function is sampled hourly; each sign change is refined by the Illinois
//! variant of regula falsi. A crossing pair inside one hour (the body grazing
//! the threshold) shows no sign change, so each interval also gets a 3-point
//! parabola (the Astronomical Almanac / Meeus ch. 3 interpolation): when its
//! extremum lies inside the interval on the other side of zero, the true
//! function is evaluated there and both roots are bracketed from it.

/// The longest step between samples, seconds.
pub const MAX_STEP: f64 = 3600.0;
/// Roots are refined until a step moves them less than this many seconds
/// (the output is whole seconds; the ephemerides are good to a few).
const TOLERANCE: f64 = 0.2;

/// The crossings of one threshold over the window, in time order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Crossings {
    /// Upward crossings (below → above), Unix seconds.
    pub up: Vec<f64>,
    /// Downward crossings (above → below), Unix seconds.
    pub down: Vec<f64>,
    /// With no crossing at all: whether the function stayed above zero.
    pub above_all_day: bool,
    pub below_all_day: bool,
}

/// `times` are equally spaced sample instants (at most [`MAX_STEP`] apart, the
/// first at the window's start, the last at its end) and `values` the function there.
pub fn crossings(times: &[f64], values: &[f64], f: impl Fn(f64) -> f64) -> Crossings {
    let n = times.len();
    if n < 2 {
        return Crossings::default(); // an empty window has no crossings
    }
    let step = times[1] - times[0];
    let mut out = Crossings::default();
    for i in 0..n - 1 {
        let (t0, t1, f0, f1) = (times[i], times[i + 1], values[i], values[i + 1]);
        if (f0 >= 0.0) != (f1 >= 0.0) {
            push(&mut out, refine(&f, t0, f0, t1, f1), f1 >= 0.0);
            continue;
        }
        // Grazing: the parabola through three neighbouring samples.
        let j = if i + 2 < n {
            i
        } else if i >= 1 {
            i - 1
        } else {
            continue;
        };
        let (a, b, c) = (values[j], values[j + 1], values[j + 2]);
        let curvature = a - 2.0 * b + c;
        if curvature == 0.0 {
            continue;
        }
        let x = (a - c) / (2.0 * curvature); // vertex, in steps from sample j+1
        let tv = times[j + 1] + x * step;
        if tv <= t0 || tv >= t1 {
            continue;
        }
        let peak = b - (a - c) * (a - c) / (8.0 * curvature);
        if (peak >= 0.0) == (f0 >= 0.0) && peak.abs() > 1e-4 {
            continue;
        }
        let fv = f(tv);
        if (fv >= 0.0) != (f0 >= 0.0) {
            push(&mut out, refine(&f, t0, f0, tv, fv), fv >= 0.0);
            push(&mut out, refine(&f, tv, fv, t1, f1), f1 >= 0.0);
        }
    }
    if out.up.is_empty() && out.down.is_empty() {
        out.above_all_day = values.iter().all(|&v| v >= 0.0);
        out.below_all_day = values.iter().all(|&v| v < 0.0);
    }
    out
}

fn push(out: &mut Crossings, t: f64, upward: bool) {
    if upward {
        out.up.push(t);
    } else {
        out.down.push(t);
    }
}

/// Illinois regula falsi on a bracket with f(a), f(b) of opposite signs,
/// until an iteration moves the estimate by less than [`TOLERANCE`].
fn refine(f: &impl Fn(f64) -> f64, mut a: f64, mut fa: f64, mut b: f64, mut fb: f64) -> f64 {
    let mut side = 0;
    let mut last = f64::NAN;
    for _ in 0..60 {
        let t = (a * fb - b * fa) / (fb - fa);
        if (t - last).abs() < TOLERANCE || b - a < TOLERANCE {
            return t;
        }
        last = t;
        let ft = f(t);
        if ft == 0.0 {
            return t;
        }
        if (ft >= 0.0) == (fb >= 0.0) {
            (b, fb) = (t, ft);
            if side == -1 {
                fa /= 2.0;
            }
            side = -1;
        } else {
            (a, fa) = (t, ft);
            if side == 1 {
                fb /= 2.0;
            }
            side = 1;
        }
    }
    (a + b) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(f: impl Fn(f64) -> f64, hours: usize) -> Crossings {
        let times: Vec<f64> = (0..=hours).map(|i| i as f64 * MAX_STEP).collect();
        let values: Vec<f64> = times.iter().map(|&t| f(t)).collect();
        crossings(&times, &values, f)
    }

    #[test]
    fn finds_a_rise_and_a_set() {
        let c = run(|t| (std::f64::consts::TAU * (t / 86400.0 - 0.25)).sin(), 24);
        assert_eq!(c.up.len(), 1);
        assert_eq!(c.down.len(), 1);
        assert!((c.up[0] - 21600.0).abs() < 0.1, "{c:?}");
        assert!((c.down[0] - 64800.0).abs() < 0.1, "{c:?}");
    }

    #[test]
    fn finds_two_crossings_inside_one_hour() {
        // Peaks at 10:30 just above zero: up at 10:20, down at 10:40.
        let peak = 10.5 * 3600.0;
        let c = run(|t| 1e-4 - ((t - peak) / 3600.0).powi(2) * 9e-4, 24);
        assert_eq!((c.up.len(), c.down.len()), (1, 1), "{c:?}");
        assert!((c.up[0] - (peak - 1200.0)).abs() < 1.0, "{c:?}");
        assert!((c.down[0] - (peak + 1200.0)).abs() < 1.0, "{c:?}");
    }

    #[test]
    fn reports_a_side_when_nothing_crosses() {
        let c = run(|t| 2.0 + (t / 10000.0).sin(), 24);
        assert!(c.above_all_day && !c.below_all_day && c.up.is_empty());
        let c = run(|t| -2.0 + (t / 10000.0).sin(), 24);
        assert!(c.below_all_day && !c.above_all_day);
    }
}
