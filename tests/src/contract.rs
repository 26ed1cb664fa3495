//! The function set's contract as requests and the status each must get. Every
//! host is held to it the same way: the same status as expected and the same
//! answer as the `<name>-native` binaries (tests/function_set.rs for the runner,
//! tests/real_hosts.rs for `spin up` and `wasmtime serve`).

use crate::{Answer, Server, functions, send};

/// One request to the function set and the status it must get.
pub struct Case {
    /// The function whose route the request is meant for (also its native binary).
    pub function: &'static str,
    pub method: &'static str,
    pub target: String,
    pub content_type: Option<&'static str>,
    pub body: Vec<u8>,
    pub expect: u16,
}

impl Case {
    fn new(function: &'static str, method: &'static str, target: &str, expect: u16) -> Case {
        Case {
            function,
            method,
            target: target.to_string(),
            content_type: None,
            body: Vec::new(),
            expect,
        }
    }

    fn json(method: &'static str, body: &[u8], expect: u16) -> Case {
        Case {
            content_type: Some("application/json"),
            body: body.to_vec(),
            ..Case::new("echo", method, "/echo", expect)
        }
    }

    fn sha1(body: Vec<u8>, expect: u16) -> Case {
        Case {
            body,
            ..Case::new("sha1", "POST", "/sha1", expect)
        }
    }

    /// Whether the path is the function's own route (every function is served at
    /// `/<name>`). Otherwise the answer is the host router's `404`, whose body
    /// each host words its own way, and a host serving one component alone
    /// (`wasmtime serve`) hands the request to that component.
    pub fn on_own_route(&self) -> bool {
        let path = self.target.split('?').next().unwrap_or_default();
        path.strip_prefix('/') == Some(self.function)
    }

    /// One line naming the request, for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "{} {} ({} body bytes)",
            self.method,
            self.target,
            self.body.len()
        )
    }

    /// Sends the request to the host at `base` (`http://host:port`).
    pub fn send_to(&self, base: &str) -> Answer {
        send(
            self.method,
            &format!("{base}{}", self.target),
            self.content_type,
            &self.body,
        )
    }
}

/// The suntimes request the tests share: London on the June solstice.
pub const LONDON: &str = "/suntimes?lat=51.5074&lon=-0.1278&date=2024-06-21&tz=Europe/London";

/// Every function's requests: answers, refusals (4xx with a JSON error), wrong
/// methods and paths the router does not serve.
#[allow(clippy::too_many_lines, reason = "a table of cases, one line each")]
pub fn cases() -> Vec<Case> {
    let seed = br#"{"FirstName":"John","LastName":"Doe","Age":33}"#;
    let patterned: Vec<u8> = (0..1_000_000u32).map(|i| (i % 253) as u8).collect();
    let case = Case::new;
    let json = Case::json;
    vec![
        case("hello", "GET", "/hello", 200),
        case("hello", "GET", "/hello?anything=1", 200),
        case("hello", "POST", "/hello", 405),
        case("hello", "DELETE", "/hello", 405),
        case("hello", "GET", "/hello/extra", 404),
        case("hello", "GET", "/", 404),
        case("hello", "GET", "/no-such-route", 404),
        // The template's component answers every method alike.
        case("hello-sdk", "GET", "/hello-sdk", 200),
        case("hello-sdk", "GET", "/hello-sdk?anything=1", 200),
        case("hello-sdk", "POST", "/hello-sdk", 200),
        case("hello-sdk", "GET", "/hello-sdk/extra", 404),
        json("POST", seed, 200),
        json(
            "POST",
            br#"{"firstName":"Ana","lastName":"Li","age":-20}"#,
            200,
        ),
        json("POST", br#"{"LastName":"Doe","Age":33}"#, 400),
        json("POST", br#"{"FirstName":7,"LastName":"Doe","Age":33}"#, 400),
        json(
            "POST",
            br#"{"FirstName":"J","LastName":"D","Age":"33"}"#,
            400,
        ),
        json(
            "POST",
            br#"{"FirstName":"J","LastName":"D","Age":2147483640}"#,
            400,
        ),
        json(
            "POST",
            br#"{"FirstName":"J","LastName":"D","Age":1e400}"#,
            400,
        ),
        json(
            "POST",
            br#"{"FirstName":"J","LastName":"D","Age":NaN}"#,
            400,
        ),
        json("POST", br#"{"FirstName":"J","LastName":"D","Age":3"#, 400),
        json(
            "POST",
            b"{\"FirstName\":\"\xc3\x28\",\"LastName\":\"D\",\"Age\":3}",
            400,
        ),
        // As deep as serde_json goes (128 levels): the guest's small stack must hold it.
        json("POST", deepest_json_field().as_bytes(), 200),
        json("POST", b"", 400),
        json("POST", b"null", 400),
        json("POST", &vec![b' '; 65 * 1024], 413),
        json("GET", b"", 405),
        json("PUT", seed, 405),
        Case {
            content_type: Some("text/plain"),
            ..json("POST", seed, 415)
        },
        case("cpu", "GET", "/cpu?ms=5", 200),
        case("cpu", "GET", "/cpu", 200),
        case("cpu", "POST", "/cpu?ms=0", 200),
        case("cpu", "GET", "/cpu?ms=-1", 400),
        case("cpu", "GET", "/cpu?ms=10001", 400),
        case("cpu", "GET", "/cpu?ms=soon", 400),
        case("cpu", "GET", "/cpu?ms=1&ms=2", 400),
        case("cpu", "GET", "/cpu?ms=184467440737095516160", 400),
        case("cpu", "PUT", "/cpu", 405),
        case("io", "GET", "/io?ms=30", 200),
        case("io", "POST", "/io?ms=0", 200),
        case("io", "GET", "/io?ms=60001", 400),
        case("io", "GET", "/io?ms=%FF", 400),
        case("io", "DELETE", "/io", 405),
        case("suntimes", "GET", LONDON, 200),
        case(
            "suntimes",
            "GET",
            "/suntimes?lat=78.22&lon=15.65&date=2024-06-21&tz=Arctic/Longyearbyen",
            200,
        ),
        case(
            "suntimes",
            "GET",
            "/suntimes?lat=-33.87&lon=151.21&date=2024-12-21&tz=%2B10:00",
            200,
        ),
        case("suntimes", "GET", "/suntimes?lon=-0.12", 400),
        case("suntimes", "GET", "/suntimes?lat=NaN&lon=0", 400),
        case("suntimes", "GET", "/suntimes?lat=inf&lon=0", 400),
        case("suntimes", "GET", "/suntimes?lat=91&lon=0", 400),
        case("suntimes", "GET", "/suntimes?lat=0&lon=-181", 400),
        case(
            "suntimes",
            "GET",
            "/suntimes?lat=0&lon=0&date=2024-02-30",
            400,
        ),
        case(
            "suntimes",
            "GET",
            "/suntimes?lat=0&lon=0&date=1899-12-31",
            400,
        ),
        case(
            "suntimes",
            "GET",
            "/suntimes?lat=0&lon=0&date=yesterday",
            400,
        ),
        case(
            "suntimes",
            "GET",
            "/suntimes?lat=0&lon=0&tz=Mars/Olympus_Mons",
            400,
        ),
        case("suntimes", "GET", "/suntimes?lat=0&lon=0&tz=%2B25:00", 400),
        case("suntimes", "POST", LONDON, 405),
        Case::sha1(b"abc".to_vec(), 200),
        Case::sha1(Vec::new(), 200),
        Case::sha1(patterned, 200),
        case("sha1", "GET", "/sha1", 405),
    ]
}

/// A valid person with an extra field nested 126 objects deep, the most serde_json
/// parses (its recursion limit is 128, counting the outer object).
fn deepest_json_field() -> String {
    format!(
        r#"{{"FirstName":"J","LastName":"D","Age":1,"deep":{}1{}}}"#,
        r#"{"a":"#.repeat(126),
        "}".repeat(126)
    )
}

/// The `<name>-native` binaries, the reference every host's answers are held to.
pub struct Natives(Vec<(&'static str, Server)>);

impl Natives {
    pub fn start() -> Natives {
        Natives(
            functions()
                .iter()
                .map(|f| (*f, Server::native(f)))
                .collect(),
        )
    }

    pub fn answer(&self, case: &Case) -> Answer {
        let (_, server) = self
            .0
            .iter()
            .find(|(f, _)| *f == case.function)
            .expect("a native binary per function");
        case.send_to(&format!("http://{}", server.addr))
    }
}

/// Sends `case` to the host at `base` and holds its answer to the contract: the
/// expected status; on the function's own route the native binary's exact answer,
/// and a refusal carries a JSON error. Off its route only the status counts: the
/// `404` is the host router's own.
pub fn meets_contract(host: &str, case: &Case, base: &str, natives: &Natives) {
    let from_host = case.send_to(base);
    let what = case.describe();
    assert_eq!(
        from_host.status,
        case.expect,
        "{host}: {what}: {}",
        from_host.text()
    );
    if !case.on_own_route() {
        return;
    }
    assert_eq!(from_host, natives.answer(case), "{host} vs native: {what}");
    if from_host.status >= 400 {
        assert_eq!(from_host.content_type, "application/json", "{host}: {what}");
        let error = from_host.json()["error"].clone();
        assert!(
            error.as_str().is_some_and(|e| !e.is_empty()),
            "{host}: {what}: {error}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_route_is_the_path_named_after_the_function() {
        let on_route =
            |function, target: &str| Case::new(function, "GET", target, 200).on_own_route();
        assert!(on_route("hello", "/hello"));
        assert!(on_route("hello", "/hello?anything=1"));
        assert!(on_route("suntimes", LONDON));
        assert!(!on_route("hello", "/hello/extra"));
        assert!(!on_route("hello", "/"));
        assert!(!on_route("hello", "/no-such-route"));
        assert!(!on_route("hello", "/hellooo"));
    }

    #[test]
    fn every_function_has_cases_on_its_own_route() {
        let cases = cases();
        for &function in crate::functions() {
            assert!(
                cases
                    .iter()
                    .any(|c| c.function == function && c.on_own_route() && c.expect == 200),
                "{function}"
            );
        }
    }
}
