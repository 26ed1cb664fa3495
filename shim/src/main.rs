//! `containerd-shim-spinbench-v1`: the runtime `io.containerd.spinbench.v1`, the
//! container design (the crate's docs say what each design is).

// Every line leaves whole, in one write (`lines`): never `println!`/`eprintln!`.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use containerd_shim_spinbench::sandbox::SpinbenchShim;
use containerd_shim_wasm::shim::{Cli, Config};

fn main() {
    // The library's own log goes to containerd's (the shim log); warnings up.
    SpinbenchShim::run(Config {
        default_log_level: "warn".to_string(),
        ..Config::default()
    });
}
