//! spinbench's containerd shims: a Spin app on spinbench's host (the
//! `spinbench-host` crate) as a containerd runtime, as SpinKube's
//! `containerd-shim-spin-v2` runs one on Spin. Two designs share the app's
//! making (image layers, environment, memory limit):
//!
//! - `containerd-shim-spinbench-v1` (`io.containerd.spinbench.v1`, [`sandbox`]):
//!   runwasi's `containerd-shim-wasm`, which speaks containerd's shim protocol,
//!   reads the image's layers (and precompiles them) and sets each container up
//!   with youki's libcontainer (namespaces, cgroup, root filesystem, stdio); the
//!   app then runs inside it.
//! - `containerd-shim-spinbench-inprocess-v1`
//!   (`io.containerd.spinbench-inprocess.v1`, [`inprocess`]): runwasi's lower
//!   `containerd-shimkit`, the app served on threads of the shim process, one
//!   shim per pod or one for the node (deploy/README.md weighs the two).

// Every line leaves whole, in one write (`lines`): never `println!`/`eprintln!`.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod app;
mod artifact;
mod bundle;
mod env;
pub mod inprocess;
mod memory;
mod precompile;
pub mod sandbox;
