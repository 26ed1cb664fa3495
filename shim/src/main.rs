//! `containerd-shim-spinbench-v1`: the containerd runtime
//! `io.containerd.spinbench.v1`, which runs a Spin app on spinbench's host
//! (the `spinbench-host` crate) in a container, as SpinKube's
//! `containerd-shim-spin-v2` runs one on Spin. Built on runwasi's
//! `containerd-shim-wasm`, the library that shim is built on: it speaks
//! containerd's shim protocol, reads the image's layers from containerd, and
//! sets the container up with youki's libcontainer (namespaces, cgroup, root
//! filesystem, stdio); the app then runs inside it (`sandbox`).

// Every line leaves whole, in one write (`lines`): never `println!`/`eprintln!`.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod app;
mod artifact;
mod bundle;
mod env;
mod memory;
mod precompile;
mod sandbox;

use containerd_shim_wasm::shim::{Cli, Config};

fn main() {
    // The library's own log goes to containerd's (the shim log); warnings up.
    sandbox::SpinbenchShim::run(Config {
        default_log_level: "warn".to_string(),
        ..Config::default()
    });
}
