//! Links `spinbench` as a position-dependent executable on Linux: a PIE of its
//! size carries ~52,000 relative relocations that the dynamic loader applies at
//! every start (1.2 MiB of `.rela.dyn`, and every page of `.data.rel.ro` copied
//! on write), a cost a server's process start pays before `main`.

fn main() {
    let linux = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux");
    if linux {
        println!("cargo:rustc-link-arg-bin=spinbench=-no-pie");
    }
}
