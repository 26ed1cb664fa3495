//! WASI, from wasmtime-wasi and wasmtime-wasi-http 48: the 0.2 interfaces
//! (wasmtime 48 provides 0.2.12, which serves every 0.2.z import) and the 0.3
//! ones. A WASI release candidate identical to its release (0.3.0-rc-2026-03-15,
//! what spin-sdk 6 builds against) was renamed to the release at load
//! (`instance::prepare`), so it is served here as 0.3.
//!
//! What a component is granted beyond the sandbox (its environment, outbound
//! connections) is decided per component elsewhere (`environment`, the store's
//! WASI context); linking is the same for all.

use super::{Group, Name};
use anyhow::{Context, Result};
use wasmtime::component::Linker;

/// Interfaces of wasi:http provided in each track; every interface of the other
/// WASI packages is provided.
const HTTP_P2: &[&str] = &["types", "outgoing-handler"];
const HTTP_P3: &[&str] = &["types", "client"];

/// The WASI packages provided in both tracks; `wasi:io` exists only in 0.2.
const PACKAGES: &[&str] = &[
    "wasi:cli",
    "wasi:clocks",
    "wasi:filesystem",
    "wasi:random",
    "wasi:sockets",
];

/// The group providing a WASI import: any `0.2.z` release for WASIp2, any
/// `0.3.z` release for WASIp3. Pre-releases other than the renamed one are not
/// provided.
pub fn group_of(name: &Name<'_>) -> Option<Group> {
    let version = name.version.as_ref()?;
    if version.major != 0 || !version.pre.is_empty() {
        return None;
    }
    let (group, http) = match version.minor {
        2 => (Group::WasiP2, HTTP_P2),
        3 => (Group::WasiP3, HTTP_P3),
        _ => return None,
    };
    let provided = match name.package {
        "wasi:http" => http.contains(&name.interface),
        "wasi:io" => group == Group::WasiP2,
        package => PACKAGES.contains(&package),
    };
    provided.then_some(group)
}

/// Socket methods of WASI's 0.2.0-rc-2023-11-10 that 0.2.0 dropped, by the
/// 0.2 instance its other functions are renamed onto (`instance::prepare`).
/// They trap when called, as in Spin 4.0.2 (`crates/factor-wasi/src/wasi_2023_11_10.rs`):
/// linked, so that a component that merely imports them starts.
const DROPPED_FROM_0_2_0: &[(&str, &[&str])] = &[
    (
        "wasi:sockets/tcp@0.2.12",
        &[
            "[method]tcp-socket.ipv6-only",
            "[method]tcp-socket.set-ipv6-only",
        ],
    ),
    (
        "wasi:sockets/udp@0.2.12",
        &[
            "[method]udp-socket.ipv6-only",
            "[method]udp-socket.set-ipv6-only",
        ],
    ),
];

/// WASI 0.2, with wasi:http's `types` and `outgoing-handler`.
pub fn link_p2<T>(linker: &mut Linker<T>) -> Result<()>
where
    T: wasmtime_wasi::WasiView + wasmtime_wasi_http::WasiHttpView + 'static,
{
    wasmtime_wasi::p2::add_to_linker_async(linker)
        .and_then(|()| wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker))
        .and_then(|()| {
            for (instance, functions) in DROPPED_FROM_0_2_0 {
                let mut instance = linker.instance(instance)?;
                for function in *functions {
                    instance.func_new(function, move |_, _, _, _| {
                        wasmtime::bail!("{function} is no longer supported (WASI 0.2.0 dropped it)")
                    })?;
                }
            }
            Ok(())
        })
        .map_err(anyhow::Error::from)
        .context("adding WASIp2 to the linker")
}

/// WASI 0.3, with wasi:http's `types` and `client`.
pub fn link_p3<T>(linker: &mut Linker<T>) -> Result<()>
where
    T: wasmtime_wasi::WasiView + wasmtime_wasi_http::WasiHttpView + 'static,
{
    wasmtime_wasi::p3::add_to_linker(linker)
        .and_then(|()| wasmtime_wasi_http::p3::add_to_linker(linker))
        .map_err(anyhow::Error::from)
        .context("adding WASIp3 to the linker")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(name: &str) -> Option<Group> {
        group_of(&Name::parse(name).unwrap())
    }

    #[test]
    fn every_02_release_is_wasip2() {
        for name in [
            "wasi:io/error@0.2.0",
            "wasi:cli/environment@0.2.3",
            "wasi:http/types@0.2.0",
            "wasi:http/outgoing-handler@0.2.12",
            "wasi:sockets/tcp@0.2.6",
        ] {
            assert_eq!(group(name), Some(Group::WasiP2), "{name}");
        }
    }

    #[test]
    fn every_03_release_is_wasip3_and_no_prerelease_is_either() {
        assert_eq!(group("wasi:cli/environment@0.3.0"), Some(Group::WasiP3));
        assert_eq!(group("wasi:http/client@0.3.0"), Some(Group::WasiP3));
        assert_eq!(group("wasi:http/types@0.3.0-rc-2026-01-06"), None);
        assert_eq!(group("wasi:http/types@0.2.0-rc-2023-11-10"), None);
        assert_eq!(group("wasi:io/error@0.3.0"), None);
        assert_eq!(group("wasi:http/client@0.2.0"), None);
        assert_eq!(group("wasi:cli/environment@1.0.0"), None);
        assert_eq!(group("wasi:keyvalue/store@0.2.0-draft2"), None);
    }
}
