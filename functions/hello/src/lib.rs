//! `GET /hello` → `200 Hello, World!`: the floor every other function stands on.

use glue::{ApiError, Endpoint, Handler, Head, Reply};

#[cfg(all(target_arch = "wasm32", feature = "p2"))]
glue::spin_component!(ENDPOINT);

pub static ENDPOINT: Endpoint = Endpoint {
    route: "/hello",
    methods: &["GET"],
    handler: Handler::Head(hello),
    cpu_bound: false,
};

pub fn hello(_: &Head) -> Result<Reply, ApiError> {
    Ok(Reply::text(200, "Hello, World!"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn says_hello() {
        let reply = hello(&Head::default()).unwrap();
        assert_eq!(
            (reply.status, reply.body.as_slice()),
            (200, &b"Hello, World!"[..])
        );
    }
}
