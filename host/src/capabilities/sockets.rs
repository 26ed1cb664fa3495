//! `wasi:sockets` as Spin grants it (spinframework/spin
//! `crates/factor-outbound-networking/src/lib.rs`, the WASI context's
//! `outbound_socket_addr_check`): a TCP connection is allowed when its address
//! is, as `tcp://<ip>:<port>`, in `allowed_outbound_hosts`; a UDP datagram when
//! its peer is, as `udp://<ip>:<port>`. Nothing listens or accepts. Name lookup
//! (`ip-name-lookup`) is not enabled, as in Spin 4: a guest connects to
//! addresses, and a name in the list never allows an address.
//!
//! wasmtime-wasi 48 also asks about the implicit bind before a connect or a
//! first datagram (the unspecified address, port 0); that one is allowed, as
//! an explicit bind to it is: binding without listening reaches nothing.

use super::outbound_hosts::AllowedHosts;

mod limit;
pub use limit::{limit_p2, limit_p3};
use std::net::SocketAddr;
use wasmtime_wasi::sockets::SocketAddrUse;

/// Whether `use_` of `address` is allowed.
pub fn allows(allowed: &AllowedHosts, address: SocketAddr, use_: SocketAddrUse) -> bool {
    match use_ {
        SocketAddrUse::TcpBind | SocketAddrUse::UdpBind => {
            address.ip().is_unspecified() && address.port() == 0 && !allowed.is_empty()
        }
        SocketAddrUse::TcpListen | SocketAddrUse::TcpAccept => false,
        SocketAddrUse::TcpConnect => allowed.allows_socket("tcp", address),
        SocketAddrUse::UdpSend | SocketAddrUse::UdpReceive => allowed.allows_socket("udp", address),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn connections_are_allowed_per_the_list() {
        let list = AllowedHosts::of(&["*://127.0.0.1:7000", "tcp://10.0.0.0/8:5432"]);
        let connect = |a: &str| allows(&list, address(a), SocketAddrUse::TcpConnect);
        assert!(connect("127.0.0.1:7000"));
        assert!(connect("10.9.8.7:5432"));
        assert!(!connect("127.0.0.1:7001"));
        assert!(!connect("127.0.0.2:7000"));
        assert!(!connect("11.0.0.1:5432"));
        let udp = |a: &str| allows(&list, address(a), SocketAddrUse::UdpSend);
        assert!(udp("127.0.0.1:7000"));
        assert!(!udp("10.0.0.1:5432"));
    }

    #[test]
    fn nothing_listens_and_only_implicit_binds_pass() {
        let list = AllowedHosts::of(&["*://*:*"]);
        assert!(allows(&list, address("0.0.0.0:0"), SocketAddrUse::TcpBind));
        assert!(allows(&list, address("[::]:0"), SocketAddrUse::UdpBind));
        assert!(!allows(
            &list,
            address("0.0.0.0:8080"),
            SocketAddrUse::TcpBind
        ));
        assert!(!allows(
            &list,
            address("127.0.0.1:0"),
            SocketAddrUse::TcpBind
        ));
        assert!(!allows(
            &list,
            address("0.0.0.0:0"),
            SocketAddrUse::TcpListen
        ));
        assert!(!allows(
            &list,
            address("127.0.0.1:5"),
            SocketAddrUse::TcpAccept
        ));
        let none = AllowedHosts::default();
        assert!(!allows(&none, address("0.0.0.0:0"), SocketAddrUse::TcpBind));
        assert!(!allows(
            &none,
            address("127.0.0.1:1"),
            SocketAddrUse::TcpConnect
        ));
    }
}
