//! `POST /echo`: JSON in, modified JSON out — the ASP.NET vs Spring seed's endpoint.
//!
//! `{"FirstName":"John","LastName":"Doe","Age":33}` → `{"firstName":"Johnx","lastName":"Doex","age":43}`.
//! Keys match case-insensitively, as ASP.NET's and Spring's binders do; the
//! output is camelCase. `Age` is a 32-bit integer like the seed's `int`, so
//! `Age + 10` overflowing is the client's error, not ours.

use glue::{ApiError, Endpoint, Handler, Head, Reply};
use serde::Serialize;
use serde_json::{Map, Value};

#[cfg(all(target_arch = "wasm32", feature = "p2"))]
glue::spin_component!(ENDPOINT);

/// The largest body echo reads: a person record is a few dozen bytes.
pub const BODY_LIMIT: usize = 64 * 1024;

pub static ENDPOINT: Endpoint = Endpoint {
    route: "/echo",
    methods: &["POST"],
    handler: Handler::Buffered {
        limit: BODY_LIMIT,
        handle: echo,
    },
    cpu_bound: false,
};

#[derive(Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Person {
    pub first_name: String,
    pub last_name: String,
    pub age: i32,
}

pub fn echo(head: &Head, body: &[u8]) -> Result<Reply, ApiError> {
    check_content_type(head.content_type.as_deref())?;
    let person = parse(body)?;
    Ok(Reply::json(&transform(person)?))
}

/// The seed's transformation: names get an `x`, age gets ten years.
pub fn transform(person: Person) -> Result<Person, ApiError> {
    let age = person.age.checked_add(10).ok_or_else(|| {
        ApiError::bad_request(format!(
            "field Age = {} overflows a 32-bit integer when 10 is added",
            person.age
        ))
    })?;
    Ok(Person {
        first_name: person.first_name + "x",
        last_name: person.last_name + "x",
        age,
    })
}

/// JSON or unlabelled bodies are read; anything else is refused rather than guessed.
fn check_content_type(content_type: Option<&str>) -> Result<(), ApiError> {
    let Some(value) = content_type else {
        return Ok(());
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if essence == "application/json" || essence.ends_with("+json") {
        Ok(())
    } else {
        Err(ApiError::unsupported_media_type(value, "application/json"))
    }
}

pub fn parse(body: &[u8]) -> Result<Person, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("body is not valid JSON: {e}")))?;
    let Value::Object(fields) = value else {
        return Err(ApiError::bad_request("body must be a JSON object"));
    };
    Ok(Person {
        first_name: string_field(&fields, "FirstName")?,
        last_name: string_field(&fields, "LastName")?,
        age: age_field(&fields)?,
    })
}

/// The field whose key equals `name` ignoring case; two such keys are ambiguous.
fn field<'a>(fields: &'a Map<String, Value>, name: &str) -> Result<&'a Value, ApiError> {
    let mut matches = fields.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name));
    let (_, value) = matches
        .next()
        .ok_or_else(|| ApiError::bad_request(format!("field {name} is missing")))?;
    if matches.next().is_some() {
        return Err(ApiError::bad_request(format!(
            "field {name} is given more than once (keys match case-insensitively)"
        )));
    }
    Ok(value)
}

fn string_field(fields: &Map<String, Value>, name: &str) -> Result<String, ApiError> {
    match field(fields, name)? {
        Value::String(s) => Ok(s.clone()),
        other => Err(ApiError::bad_request(format!(
            "field {name} must be a string, got {}",
            kind(other)
        ))),
    }
}

fn age_field(fields: &Map<String, Value>) -> Result<i32, ApiError> {
    let value = field(fields, "Age")?;
    value
        .as_i64()
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "field Age must be an integer from {} to {}, got {value}",
                i32::MIN,
                i32::MAX
            ))
        })
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(body: &str) -> Result<Reply, ApiError> {
        echo(&Head::default(), body.as_bytes())
    }

    #[test]
    fn transforms_the_seed_request_exactly() {
        let reply = run(r#"{"FirstName":"John","LastName":"Doe","Age":33}"#).unwrap();
        assert_eq!(reply.status, 200);
        assert_eq!(reply.content_type, "application/json");
        assert_eq!(
            reply.body,
            br#"{"firstName":"Johnx","lastName":"Doex","age":43}"#
        );
    }

    #[test]
    fn keys_match_case_insensitively() {
        let reply = run(r#"{"firstName":"A","lastname":"B","AGE":-5,"extra":true}"#).unwrap();
        assert_eq!(reply.body, br#"{"firstName":"Ax","lastName":"Bx","age":5}"#);
    }

    #[test]
    fn bad_bodies_are_400_naming_the_field() {
        let cases = [
            (r#"{"LastName":"Doe","Age":33}"#, "FirstName"),
            (r#"{"FirstName":1,"LastName":"Doe","Age":33}"#, "FirstName"),
            (r#"{"FirstName":"J","LastName":"Doe","Age":"33"}"#, "Age"),
            (r#"{"FirstName":"J","LastName":"Doe","Age":33.5}"#, "Age"),
            (
                r#"{"FirstName":"J","LastName":"Doe","Age":2147483647}"#,
                "Age",
            ),
            (r#"{"FirstName":"J","LastName":"Doe","Age":1e40}"#, "Age"),
            (
                r#"{"FirstName":"J","firstname":"K","LastName":"Doe","Age":1}"#,
                "FirstName",
            ),
            (r#"{"FirstName":"J","LastName":"Doe","Age":1"#, "JSON"),
            (r"[1,2]", "object"),
            ("", "JSON"),
        ];
        for (body, named) in cases {
            let err = run(body).unwrap_err();
            assert_eq!(err.status, 400, "{body}");
            assert!(err.message.contains(named), "{body}: {}", err.message);
        }
    }

    #[test]
    fn content_type_must_be_json_when_given() {
        let body = br#"{"FirstName":"J","LastName":"D","Age":1}"#;
        let head = |ct: &str| Head {
            content_type: Some(ct.to_string()),
            ..Head::default()
        };
        assert!(echo(&head("application/json; charset=utf-8"), body).is_ok());
        assert_eq!(echo(&head("text/plain"), body).unwrap_err().status, 415);
    }

    #[test]
    fn invalid_utf8_is_a_400() {
        let err = echo(&Head::default(), b"{\"FirstName\":\"\xff\"}").unwrap_err();
        assert_eq!(err.status, 400);
    }
}
