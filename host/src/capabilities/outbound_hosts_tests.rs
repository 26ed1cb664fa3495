use super::*;

fn host(text: &str) -> Host {
    Host::parse(text).unwrap()
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(ToString::to_string).collect()
}

#[test]
fn schemes_hosts_and_ports_match_exactly() {
    let allowed = AllowedHosts::of(&["http://example.com:8080", "https://api.example.com"]);
    assert!(allowed.allows("http", &host("example.com"), Some(8080)));
    assert!(allowed.allows("http", &host("EXAMPLE.com"), Some(8080)));
    assert!(!allowed.allows("http", &host("example.com"), Some(8081)));
    assert!(!allowed.allows("https", &host("example.com"), Some(8080)));
    assert!(!allowed.allows("http", &host("other.com"), Some(8080)));
    // No port: the scheme's well-known one, both in the entry and the request.
    assert!(allowed.allows("https", &host("api.example.com"), None));
    assert!(allowed.allows("https", &host("api.example.com"), Some(443)));
    assert!(!allowed.allows("https", &host("api.example.com"), Some(8443)));
    assert!(!allowed.allows("http", &host("api.example.com"), None));
}

#[test]
fn wildcards_cover_what_spin_s_cover() {
    let any = AllowedHosts::of(&["*://*:*"]);
    assert!(any.allows("tcp", &host("10.1.2.3"), Some(1)));
    assert!(any.allows("redis", &host("db"), None));
    let sub = AllowedHosts::of(&["http://*.example.com", "mqtt://*:*"]);
    assert!(sub.allows("http", &host("a.example.com"), None));
    assert!(sub.allows("http", &host("a.b.Example.com"), Some(80)));
    assert!(!sub.allows("http", &host("example.com"), None));
    assert!(!sub.allows("http", &host("myexample.com"), None));
    assert!(sub.allows("mqtt", &host("broker"), Some(1)));
    assert!(!sub.allows("http", &host("broker"), Some(1)));
    let scheme_any = AllowedHosts::of(&["*://db.local:5432"]);
    assert!(scheme_any.allows("postgres", &host("db.local"), None));
    assert!(scheme_any.allows("tcp", &host("db.local"), Some(5432)));
    assert!(!scheme_any.allows("redis", &host("db.local"), None));
}

#[test]
fn port_ranges_exclude_their_end_as_spin_s_do() {
    let allowed = AllowedHosts::of(&["tcp://127.0.0.1:1000..2000"]);
    assert!(allowed.allows("tcp", &host("127.0.0.1"), Some(1000)));
    assert!(allowed.allows("tcp", &host("127.0.0.1"), Some(1999)));
    assert!(!allowed.allows("tcp", &host("127.0.0.1"), Some(2000)));
    assert!(!allowed.allows("tcp", &host("127.0.0.1"), Some(999)));
}

#[test]
fn names_and_addresses_never_stand_for_each_other() {
    let by_name = AllowedHosts::of(&["http://localhost:3000"]);
    assert!(by_name.allows("http", &host("localhost"), Some(3000)));
    assert!(!by_name.allows("http", &host("127.0.0.1"), Some(3000)));
    assert!(!by_name.allows("http", &host("[::1]"), Some(3000)));
    let by_address = AllowedHosts::of(&["http://127.0.0.1:3000"]);
    assert!(!by_address.allows("http", &host("localhost"), Some(3000)));
    assert!(by_address.allows("http", &host("127.0.0.1"), Some(3000)));
}

#[test]
fn cidr_ranges_and_ipv6_literals() {
    let allowed = AllowedHosts::of(&[
        "*://127.0.0.1/24:63551",
        "http://2001:db8::/32",
        "http://[::1]:8080",
    ]);
    let socket = |text: &str| text.parse::<SocketAddr>().unwrap();
    assert!(allowed.allows_socket("tcp", socket("127.0.0.200:63551")));
    assert!(!allowed.allows_socket("tcp", socket("127.0.1.1:63551")));
    assert!(!allowed.allows_socket("tcp", socket("127.0.0.1:63552")));
    assert!(allowed.allows("http", &host("[2001:db8:abcd::1]"), None));
    assert!(!allowed.allows("http", &host("[2001:db9::1]"), None));
    assert!(allowed.allows("http", &host("[::1]"), Some(8080)));
    assert!(!allowed.allows("http", &host("[::1]"), None));
    // An IPv4-mapped IPv6 socket address is its IPv4 address.
    assert!(allowed.allows_socket("tcp", socket("[::ffff:127.0.0.9]:63551")));
}

#[test]
fn guest_addresses_are_read_as_spin_reads_them() {
    let allowed = AllowedHosts::of(&["redis://localhost:6379", "mysql://xyz.com"]);
    assert!(allowed.allows_url("redis://localhost:6379", "redis"));
    assert!(allowed.allows_url("localhost:6379", "redis"));
    assert!(allowed.allows_url("redis://localhost", "redis"));
    assert!(!allowed.allows_url("redis://localhost:6380", "redis"));
    assert!(!allowed.allows_url("rediss://localhost:6379", "redis"));
    assert!(!allowed.allows_url("redis://127.0.0.1:6379", "redis"));
    assert!(allowed.allows_url("mysql://user:pass#word@xyz.com", "mysql"));
    assert!(allowed.allows_url("mysql://user%3Apass%23word@xyz.com", "mysql"));
    assert!(!allowed.allows_url("not a url at all", "redis"));
    assert!(!allowed.allows_url("http://localhost:6379/x", "redis"));
}

#[test]
fn self_is_the_app_itself() {
    let allowed = AllowedHosts::of(&["http://self", "https://example.com"]);
    assert!(allowed.allows_self(&["http", "https"]));
    assert!(!allowed.allows("http", &host("self"), None));
    assert!(!AllowedHosts::of(&["https://example.com"]).allows_self(&["http", "https"]));
    assert!(AllowedHosts::of(&["*://*:*"]).allows_self(&["http"]));
}

#[test]
fn empty_template_results_grant_nothing_and_are_skipped() {
    let allowed =
        AllowedHosts::parse(&strings(&["", "https://", "http://", "https://three"]), &[]).unwrap();
    assert_eq!(allowed, AllowedHosts::of(&["https://three"]));
    assert!(AllowedHosts::parse(&[], &[]).unwrap().is_empty());
}

#[test]
fn invalid_entries_are_refused_naming_the_entry() {
    for bad in [
        "example.com",
        "example.com:8080",
        "*",
        "http://example.com:notaport",
        "http://example.com:8080..70000",
        "http://example.com:99999",
        "http://*.example.com:8O8O",
        "http://example.com:8080/p",
        "http://*.example.com/p",
        "http://127.0.0.0/24/p",
        "http://*.",
        "http://*.127.0.0.1",
        "http://exa*mple.com",
        "http://example%.com",
        "http://exa[mple.com",
        "http://example.com:80:90",
        "h77p://example.com",
        "{http,https}://example.com",
        "http://{a,b}.com",
        "foo://example.com",
        "http://[::1]/foo",
        "http://[::1",
    ] {
        let error = AllowedHosts::parse(&strings(&[bad]), &[])
            .expect_err(bad)
            .to_string();
        assert!(
            error.contains(&format!("{bad:?}")),
            "{bad}: the error must name the entry: {error}"
        );
        let chain = format!(
            "{:#}",
            AllowedHosts::parse(&strings(&[bad]), &[]).unwrap_err()
        );
        assert!(!chain.contains('\n'), "{bad}: one line: {chain}");
    }
    assert!(AllowedHosts::parse(&strings(&["insecure:allow-all"]), &[]).is_err());
}

#[test]
fn valid_entries_of_every_form_parse() {
    AllowedHosts::of(&[
        "http://example.com/",
        "https://*.example.com:*",
        "redis://db:6380",
        "mqtt://broker",
        "postgres://{a}".replace("{a}", "pg.local").as_str(),
        "mysql://127.0.0.1",
        "tcp://10.0.0.0/8:5000..5100",
        "*://[::1]:80",
        "http://self.alt",
        "udp://*:53",
    ]);
}

#[test]
fn allowed_http_hosts_are_converted_as_spin_converts_them() {
    let converted = AllowedHosts::parse(
        &[],
        &strings(&["example.com", "localhost:3001", "https://api.com", "self"]),
    )
    .unwrap();
    assert!(converted.allows("http", &host("example.com"), None));
    assert!(converted.allows("https", &host("example.com"), None));
    assert!(converted.allows("https", &host("localhost"), Some(3001)));
    assert!(!converted.allows("https", &host("localhost"), None));
    assert!(converted.allows("http", &host("api.com"), None));
    assert!(converted.allows_self(&["http"]));
    let all = AllowedHosts::parse(&[], &strings(&["insecure:allow-all"])).unwrap();
    assert!(all.allows("https", &host("anything.org"), Some(8443)));
    assert!(!all.allows("redis", &host("anything.org"), None));
    for bad in ["ftp://example.com", "example.com/path", "http://"] {
        assert!(AllowedHosts::parse(&[], &strings(&[bad])).is_err(), "{bad}");
    }
}
