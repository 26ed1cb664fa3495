// The logic crate and glue link spin-sdk 5 (the WASIp2 entry), this crate spin-sdk 7;
// outside a git checkout both define the marker export `spin-sdk-commit-unknown`.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg-cdylib=--allow-multiple-definition");
    }
}
