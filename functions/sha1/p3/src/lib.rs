//! `sha1-blocks` as a WASIp3 component (`wasi:http/handler@0.3.0`, glue's adapter); the
//! logic and its WASIp2 entry live in the crate above.

#[cfg(target_arch = "wasm32")]
glue::spin_p3_component!(sha1_blocks::ENDPOINT);
