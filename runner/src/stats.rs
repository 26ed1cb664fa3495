//! Summaries of repeated measurements: percentiles, median and spread, and the
//! ratios between hosts. Everything the report prints about a series comes from here.

use serde::Serialize;

/// A series' summary, as it appears in the report (all values in the metric's unit).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
    /// Median absolute deviation (unscaled): robust spread, not dragged by outliers.
    pub mad: f64,
    /// `mad / p50`: the spread relative to the median (0 when the median is 0).
    pub rel_spread: f64,
    /// Samples further than 5 scaled MADs from the median.
    pub outliers: usize,
}

/// Relative spread above which a series is flagged as noisy.
pub const HIGH_SPREAD: f64 = 0.10;
/// Series longer than this are distributions, not repeated runs: no outlier warning.
const MAX_SERIES_FOR_OUTLIERS: usize = 200;

/// Linear-interpolated percentile (`q` in 0..=100) of already sorted samples.
pub fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let rank = (q.clamp(0.0, 100.0) / 100.0) * (n - 1) as f64;
            let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
            sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
        }
    }
}

pub fn median(samples: &[f64]) -> f64 {
    percentile_sorted(&sorted(samples), 50.0)
}

fn sorted(samples: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

impl Summary {
    /// Summarizes `samples`; non-finite values are dropped. `None` when nothing is left.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        let s = sorted(samples);
        if s.is_empty() {
            return None;
        }
        let p50 = percentile_sorted(&s, 50.0);
        let deviations: Vec<f64> = s.iter().map(|x| (x - p50).abs()).collect();
        let mad = median(&deviations);
        // 1.4826 scales the MAD to a standard deviation for normal data.
        let fence = 5.0 * 1.4826 * mad;
        let outliers = if mad > 0.0 {
            s.iter().filter(|x| (*x - p50).abs() > fence).count()
        } else {
            0
        };
        Some(Summary {
            n: s.len(),
            min: s[0],
            p50,
            p90: percentile_sorted(&s, 90.0),
            p99: percentile_sorted(&s, 99.0),
            max: s[s.len() - 1],
            mean: s.iter().sum::<f64>() / s.len() as f64,
            mad,
            rel_spread: if p50 == 0.0 { 0.0 } else { mad / p50.abs() },
            outliers,
        })
    }

    /// Why this series deserves a second look, if it does.
    pub fn warning(&self) -> Option<String> {
        let mut why = Vec::new();
        if self.n > 1 && self.rel_spread > HIGH_SPREAD {
            why.push(format!(
                "high spread (MAD {:.0}% of median)",
                self.rel_spread * 100.0
            ));
        }
        // Outliers flag a disturbed series of repeated runs; a distribution of
        // hundreds of instances has a tail by nature, which p99 and max report.
        if (10..=MAX_SERIES_FOR_OUTLIERS).contains(&self.n) && self.outliers * 10 > self.n {
            why.push(format!(
                "{} of {} samples are outliers",
                self.outliers, self.n
            ));
        }
        (!why.is_empty()).then(|| why.join(", "))
    }
}

/// `value / baseline`, or `None` when the baseline is zero or either is not finite.
pub fn ratio(value: f64, baseline: f64) -> Option<f64> {
    let r = value / baseline;
    (baseline != 0.0 && r.is_finite()).then_some(r)
}

/// Least-squares slope of `y` against `x`; `None` with fewer than two distinct x.
pub fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x / n, b + y / n));
    let sxx: f64 = points.iter().map(|(x, _)| (x - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    (points.len() >= 2 && sxx > 0.0).then(|| sxy / sxx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_between_ranks() {
        let s: Vec<f64> = (1..=101).map(f64::from).collect();
        assert_eq!(percentile_sorted(&s, 0.0), 1.0);
        assert_eq!(percentile_sorted(&s, 50.0), 51.0);
        assert_eq!(percentile_sorted(&s, 90.0), 91.0);
        assert_eq!(percentile_sorted(&s, 100.0), 101.0);
        assert_eq!(percentile_sorted(&[1.0, 2.0], 50.0), 1.5);
        assert!(percentile_sorted(&[], 50.0).is_nan());
    }

    #[test]
    fn summary_is_robust_to_one_outlier() {
        let mut samples = vec![10.0; 19];
        samples.push(1000.0);
        let s = Summary::of(&samples).unwrap();
        assert_eq!(
            (s.n, s.min, s.p50, s.max, s.mad),
            (20, 10.0, 10.0, 1000.0, 0.0)
        );
        assert_eq!(s.mean, 59.5);
        assert!(s.warning().is_none());
    }

    #[test]
    fn summary_unsorted_input_and_spread() {
        let s = Summary::of(&[5.0, 1.0, 3.0, 2.0, 4.0, f64::NAN]).unwrap();
        assert_eq!((s.n, s.min, s.p50, s.max, s.mad), (5, 1.0, 3.0, 5.0, 1.0));
        assert!((s.rel_spread - 1.0 / 3.0).abs() < 1e-12);
        assert!(s.warning().unwrap().contains("high spread"));
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[f64::NAN]).is_none());
    }

    #[test]
    fn outliers_are_counted_and_flagged() {
        let mut samples: Vec<f64> = (0..90).map(|i| 100.0 + f64::from(i % 3)).collect();
        samples.extend([500.0; 12]);
        let s = Summary::of(&samples).unwrap();
        assert_eq!(s.outliers, 12);
        assert!(s.warning().unwrap().contains("outliers"));
    }

    #[test]
    fn slope_fits_a_line() {
        let points = [
            (1.0, 1010.0),
            (10.0, 1100.0),
            (100.0, 2000.0),
            (1000.0, 11000.0),
        ];
        assert!((slope(&points).unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(slope(&[(1.0, 5.0)]), None);
        assert_eq!(slope(&[(2.0, 5.0), (2.0, 7.0)]), None);
    }

    #[test]
    fn ratios() {
        assert_eq!(ratio(30.0, 10.0), Some(3.0));
        assert_eq!(ratio(5.0, 10.0), Some(0.5));
        assert_eq!(ratio(1.0, 0.0), None);
        assert_eq!(ratio(f64::NAN, 1.0), None);
    }
}
