use crate::ApiError;
use std::fmt::Display;
use std::ops::RangeInclusive;
use std::str::FromStr;

/// A decoded query string with typed, range-checked lookups whose errors name
/// the parameter.
#[derive(Debug, Clone, Default)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    pub fn parse(raw: &str) -> Self {
        let pairs = form_urlencoded::parse(raw.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        Self { pairs }
    }

    /// The parameter's value; a parameter given twice is an error, since
    /// silently picking one would hide a client bug.
    pub fn get(&self, name: &str) -> Result<Option<&str>, ApiError> {
        let mut values = self.pairs.iter().filter(|(k, _)| k == name);
        let first = values.next().map(|(_, v)| v.as_str());
        if values.next().is_some() {
            return Err(ApiError::bad_request(format!(
                "parameter {name} is given more than once"
            )));
        }
        Ok(first)
    }

    pub fn required(&self, name: &str) -> Result<&str, ApiError> {
        self.get(name)?
            .ok_or_else(|| ApiError::bad_request(format!("parameter {name} is required")))
    }

    /// An integer parameter in `range`, `default` when absent.
    pub fn integer<T>(
        &self,
        name: &str,
        default: T,
        range: RangeInclusive<T>,
    ) -> Result<T, ApiError>
    where
        T: FromStr + PartialOrd + Display + Copy,
    {
        let Some(raw) = self.get(name)? else {
            return Ok(default);
        };
        let value: T = raw.trim().parse().map_err(|_| {
            ApiError::bad_request(format!(
                "parameter {name} must be an integer from {} to {}, got {raw:?}",
                range.start(),
                range.end()
            ))
        })?;
        in_range(name, value, &range)
    }

    /// A required finite decimal parameter in `range`.
    pub fn decimal(&self, name: &str, range: RangeInclusive<f64>) -> Result<f64, ApiError> {
        let raw = self.required(name)?;
        let value: f64 = raw
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "parameter {name} must be a decimal number from {} to {}, got {raw:?}",
                    range.start(),
                    range.end()
                ))
            })?;
        in_range(name, value, &range)
    }
}

fn in_range<T: PartialOrd + Display + Copy>(
    name: &str,
    value: T,
    range: &RangeInclusive<T>,
) -> Result<T, ApiError> {
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(ApiError::bad_request(format!(
            "parameter {name} must be from {} to {}, got {value}",
            range.start(),
            range.end()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_defaults_parses_and_checks_range() {
        let q = Query::parse("ms=25&big=99999999999999999999");
        assert_eq!(q.integer("ms", 1u64, 0..=100).unwrap(), 25);
        assert_eq!(q.integer("absent", 7u64, 0..=100).unwrap(), 7);
        assert_eq!(q.integer("ms", 1u64, 0..=10).unwrap_err().status, 400);
        let err = q.integer("big", 1u64, 0..=10).unwrap_err();
        assert!(err.message.contains("big"), "{}", err.message);
    }

    #[test]
    fn decimal_rejects_nan_infinity_and_out_of_range() {
        for raw in [
            "lat=NaN",
            "lat=inf",
            "lat=-infinity",
            "lat=91",
            "lat=",
            "lat=1e999",
        ] {
            let err = Query::parse(raw).decimal("lat", -90.0..=90.0).unwrap_err();
            assert_eq!(err.status, 400, "{raw}");
            assert!(err.message.contains("lat"), "{raw}: {}", err.message);
        }
        assert_eq!(
            Query::parse("lat=%2D33.5")
                .decimal("lat", -90.0..=90.0)
                .unwrap(),
            -33.5
        );
    }

    #[test]
    fn repeated_parameter_is_an_error() {
        let err = Query::parse("ms=1&ms=2")
            .integer("ms", 0u32, 0..=10)
            .unwrap_err();
        assert!(err.message.contains("more than once"));
    }
}
