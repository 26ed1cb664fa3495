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

    /// The headers as every host sends them: content type, content length (so the
    /// response is framed plainly rather than chunked, as the native server does),
    /// then the reply's own.
    pub fn wire_headers(&self) -> Vec<(String, Vec<u8>)> {
        let fixed = [
            ("content-type", self.content_type.to_string()),
            ("content-length", self.body.len().to_string()),
        ];
        fixed
            .into_iter()
            .chain(
                self.headers
                    .iter()
                    .map(|(name, value)| (*name, value.clone())),
            )
            .map(|(name, value)| (name.to_string(), value.into_bytes()))
            .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_headers_declare_type_and_length_then_the_replys_own() {
        let mut reply = Reply::text(405, "no");
        reply.headers.push(("allow", "GET".to_string()));
        let names: Vec<(String, String)> = reply
            .wire_headers()
            .into_iter()
            .map(|(k, v)| (k, String::from_utf8(v).unwrap()))
            .collect();
        assert_eq!(
            names,
            [
                ("content-type".into(), "text/plain; charset=utf-8".into()),
                ("content-length".into(), "2".into()),
                ("allow".into(), "GET".into()),
            ]
        );
    }
}
