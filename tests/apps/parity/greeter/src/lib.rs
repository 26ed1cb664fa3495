//! tests/apps/parity's component dependency: `greet(name)` answers
//! `Hello, <name>! (GREETING_STYLE=<value>)`, reading its environment, which
//! it reaches only when its parent lets it inherit `environment` (otherwise
//! the host traps the read).

#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    spin_sdk::wit_bindgen::generate!({
        world: "greeter",
        path: "../wit",
        runtime_path: "::spin_sdk::wit_bindgen::rt",
    });

    struct Greeter;

    impl exports::spinbench::parity::greet::Guest for Greeter {
        fn greet(name: String) -> String {
            let style = std::env::var("GREETING_STYLE").unwrap_or_else(|_| "unset".into());
            format!("Hello, {name}! (GREETING_STYLE={style})")
        }
    }

    export!(Greeter);
}
