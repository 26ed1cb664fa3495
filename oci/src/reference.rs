//! OCI references (`[registry[:port]/]repository[:tag][@digest]`), parsed by
//! the grammar of distribution's `reference` package, as `oci-spec` parses
//! them, into `oci-spec`'s own [`Reference`] (what `oci-client` takes).
//!
//! Why not `Reference::from_str`: it compiles one regular expression of that
//! grammar at first use (its `\w{0,127}` tag alone is 127 copies of Unicode's
//! word class), which took 70 ms of a `serve -f <reference>` start on this
//! 2-core machine, three times everything else that start does. The tests
//! hold this parser to `oci-spec`'s on every case below.

use oci_client::Reference;

const DOCKER_HUB: &str = "docker.io";
const DOCKER_HUB_LEGACY: &str = "index.docker.io";
const OFFICIAL_REPOSITORIES: &str = "library";
const DEFAULT_TAG: &str = "latest";
/// The longest repository name.
const NAME_MAX: usize = 255;

/// `text` as a reference, or why it is not one.
pub fn parse(text: &str) -> Result<Reference, String> {
    if text.is_empty() {
        return Err("an empty reference".into());
    }
    let (rest, digest) = match text.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (text, None),
    };
    // A tag follows the last `:` after the last `/` (one before it is a port).
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[last_slash..].rfind(':') {
        Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
        None => (rest, None),
    };
    let named = is_path(name)
        || name
            .split_once('/')
            .is_some_and(|(domain, path)| is_domain(domain) && is_path(path));
    if !named || !tag.is_none_or(is_tag) || !digest.is_none_or(is_digest) {
        return Err("not a reference: [registry[:port]/]repository[:tag][@digest]".into());
    }
    let (registry, repository) = split_domain(name);
    if repository.len() > NAME_MAX {
        return Err(format!("a repository name over {NAME_MAX} characters"));
    }
    if let Some(digest) = digest {
        check_digest_length(digest)?;
    }
    Ok(match (tag, digest) {
        (Some(tag), Some(digest)) => {
            Reference::with_tag_and_digest(registry, repository, tag.into(), digest.into())
        }
        (None, Some(digest)) => Reference::with_digest(registry, repository, digest.into()),
        (tag, None) => Reference::with_tag(registry, repository, tag.unwrap_or(DEFAULT_TAG).into()),
    })
}

/// `host[.host...][:port]`, each part alphanumerics with inner `-`s.
fn is_domain(text: &str) -> bool {
    let (host, port) = match text.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (text, None),
    };
    let label = |part: &str| {
        !part.is_empty()
            && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !part.starts_with('-')
            && !part.ends_with('-')
    };
    host.split('.').all(label)
        && port.is_none_or(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
}

/// `component[/component...]`, each lowercase alphanumerics separated by
/// `.`, `_`, `__` or any run of `-`.
fn is_path(text: &str) -> bool {
    text.split('/').all(|component| {
        let bytes = component.as_bytes();
        let mut i = 0;
        let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        loop {
            let start = i;
            while i < bytes.len() && alnum(bytes[i]) {
                i += 1;
            }
            if i == start {
                return false;
            }
            if i == bytes.len() {
                return true;
            }
            let separator = i;
            match bytes[i] {
                b'.' => i += 1,
                b'_' => {
                    i += if bytes.get(i + 1) == Some(&b'_') {
                        2
                    } else {
                        1
                    }
                }
                b'-' => {
                    while bytes.get(i) == Some(&b'-') {
                        i += 1;
                    }
                }
                _ => return false,
            }
            debug_assert!(i > separator);
        }
    })
}

/// A word character, then up to 127 word characters, `.` or `-`.
fn is_tag(text: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut chars = text.chars();
    chars.next().is_some_and(word)
        && text.chars().count() <= 128
        && chars.all(|c| word(c) || c == '.' || c == '-')
}

/// `algorithm:hex`, the algorithm letters and digits joined by `-_+.`, the
/// hex at least 32 digits.
fn is_digest(text: &str) -> bool {
    let Some((algorithm, hex)) = text.split_once(':') else {
        return false;
    };
    let algorithm_ok = algorithm.split(['-', '_', '+', '.']).all(|part| {
        part.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && part.chars().all(|c| c.is_ascii_alphanumeric())
    });
    algorithm_ok && hex.len() >= 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

fn check_digest_length(digest: &str) -> Result<(), String> {
    let (algorithm, hex) = digest.split_once(':').unwrap_or_default();
    let expected = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        other => return Err(format!("the digest algorithm {other:?} is not supported")),
    };
    if hex.len() == expected {
        Ok(())
    } else {
        Err(format!(
            "a {algorithm} digest of {} hex digits, not {expected}",
            hex.len()
        ))
    }
}

/// The registry and repository of a name, as Docker splits them: the first
/// part is a registry if it has a `.` or `:` or is `localhost`; Docker Hub's
/// official images are under `library/`.
fn split_domain(name: &str) -> (String, String) {
    let (mut domain, mut rest) = match name.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => {
            (first.to_string(), rest.to_string())
        }
        _ => (DOCKER_HUB.to_string(), name.to_string()),
    };
    if domain == DOCKER_HUB_LEGACY {
        domain = DOCKER_HUB.to_string();
    }
    if domain == DOCKER_HUB && !rest.contains('/') {
        rest = format!("{OFFICIAL_REPOSITORIES}/{rest}");
    }
    (domain, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_parsed_as_oci_spec_parses_them() {
        let hex = "0123456789abcdef".repeat(4);
        let cases = [
            "busybox".to_string(),
            "test.com:tag".into(),
            "test.com:5000".into(),
            "test.com/repo:tag".into(),
            "test:5000/repo".into(),
            "test:5000/repo:tag".into(),
            format!("test:5000/repo@sha256:{hex}"),
            format!("test:5000/repo:tag@sha256:{hex}"),
            "127.0.0.1:5000/spinbench:0.1.0".into(),
            "localhost/app".into(),
            "localhost:5000/a/b/c:v1.2-rc_3".into(),
            "index.docker.io/app".into(),
            "docker.io/me/app:latest".into(),
            "ghcr.io/me/my-app__x.y---z:1".into(),
            "ghcr.io/me/app".into(),
            "sub.domain-x.example.com:443/ns/app:TAG".into(),
            // Invalid.
            String::new(),
            "Upper/app".into(),
            "ghcr.io/Me/app".into(),
            "ghcr.io/me/app:".into(),
            "ghcr.io/me/app:-tag".into(),
            "ghcr.io/me//app".into(),
            "ghcr.io/me/app/".into(),
            "ghcr.io/me/app_".into(),
            "ghcr.io/me/a..b".into(),
            "ghcr.io/me/a___b".into(),
            "-ghcr.io/app".into(),
            "ghcr-.io/app".into(),
            "host:port/app".into(),
            format!("ghcr.io/me/app:{}", "t".repeat(128)),
            format!("ghcr.io/me/app:{}", "t".repeat(129)),
            "ghcr.io/me/app@sha256:abc".into(),
            format!("ghcr.io/me/app@sha256:{}", &hex[..40]),
            format!("ghcr.io/me/app@md5:{hex}"),
            format!("ghcr.io/me/app@sha512:{hex}{hex}"),
            format!("ghcr.io/{}", "a".repeat(256)),
            "spin.toml".into(),
            "tests/template-app".into(),
            "./spin.toml".into(),
            "/abs/spin.toml".into(),
        ];
        for case in cases {
            let ours = parse(&case).map(|r| r.whole());
            let theirs = case.parse::<Reference>().map(|r| r.whole());
            assert_eq!(
                ours.is_ok(),
                theirs.is_ok(),
                "{case:?}: {ours:?} vs {theirs:?}"
            );
            if let (Ok(ours), Ok(theirs)) = (ours, theirs) {
                assert_eq!(ours, theirs, "{case:?}");
            }
        }
    }
}
