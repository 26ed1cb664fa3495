//! `containerd-shim-spinbench-inprocess-v1`: the runtime
//! `io.containerd.spinbench-inprocess.v1`, the in-process design (the crate's
//! docs say what each design is).

fn main() {
    containerd_shim_spinbench::inprocess::main();
}
