use serde::Serialize;

/// A complete response: what a handler returns and what a host sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn text(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            content_type: "text/plain; charset=utf-8",
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// A `200` with `value` serialized as JSON.
    pub fn json(value: &impl Serialize) -> Self {
        Self::json_value(200, value)
    }

    pub fn json_value(status: u16, value: &impl Serialize) -> Self {
        // Serializing our own plain data types cannot fail (no maps with
        // non-string keys, no failing Serialize impls).
        let body = serde_json::to_vec(value).expect("response types serialize to JSON");
        Self {
            status,
            content_type: "application/json",
            headers: Vec::new(),
            body,
        }
    }
}
