//! Hosts a Spin manifest's components on wasmtime the way `spin up` does: the
//! library behind `spinbench serve`, `spinbench compare` and the containerd shim.
//!
//! The tree follows Spin's own split (its `trigger-http`, `core` and `factor-*` crates):
//! - [`front`]: the HTTP side of a request: routing and the `spin-*` headers, body
//!   limits, admission, the host's own replies, the route listing;
//! - [`instance`]: the instance machinery: engine, compiled-code cache, the store's
//!   data, a fresh instance per WASIp2 request ([`instance::invoke`]) or reused WASIp3
//!   instances ([`instance::reuse`]), pool slots;
//! - [`capabilities`]: what a component may import, one module per capability
//!   (variables, key-value, SQLite, outbound networking, ...), and the table of
//!   interface names and versions that everything else reads;
//! - [`manifest`]: the Spin manifest (v2), typed, and what the host refuses of it;
//! - [`app`]: the loaded application ([`Host`]) tying the three together, and
//!   [`server`], which puts it behind an HTTP/1.1 listener.

// Every line leaves whole, in one write (`lines`): never `println!`/`eprintln!`.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod app;
pub mod capabilities;
pub mod front;
pub mod instance;
pub mod lines;
mod logger;
pub mod manifest;
mod server;
pub mod trigger;

pub use app::{Host, HostOptions, precompile};
pub use capabilities::budget::BudgetLimits;
pub use capabilities::runtime_config::StateDirArg;
pub use front::admission::AdmissionLimits;
pub use front::body_limit::{
    DEFAULT_BODY_READ_TIMEOUT, DEFAULT_BODY_TOTAL_TIMEOUT, DEFAULT_MAX_REQUEST_BODY,
};
pub use instance::compiled_cache::Origin;
pub use instance::engine::{Allocation, PoolSizing};
pub use instance::limits::MemoryFit;
pub use instance::reuse::ReuseLimits;
pub use instance::state::GuestLimits;
pub use server::{
    DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_HEADER_BYTES,
    DEFAULT_RESPONSE_WRITE_TIMEOUT, DEFAULT_SHUTDOWN_GRACE, ServeOptions, serve,
};
