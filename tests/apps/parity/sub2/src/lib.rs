//! tests/apps/parity's Redis subscriber as spin-sdk 5's `redis-rust`
//! template writes one (`#[redis_component]`). Each message is kept in the
//! default key-value store under `sub2` as `<n>:<payload>`, where `n` counts
//! the messages this instance has seen (always 1 on a fresh instance). The
//! message `trap` panics; `spin` never returns (the deadline stops it).

#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    use spin_sdk::key_value::Store;
    use spin_sdk::redis_component;
    use std::sync::atomic::{AtomicU32, Ordering};

    static SEEN: AtomicU32 = AtomicU32::new(0);

    // spin-sdk 5.2's `redis_component` hands the message over by value.
    #[allow(clippy::needless_pass_by_value)]
    #[redis_component]
    fn on_message(message: Vec<u8>) -> anyhow::Result<()> {
        let seen = SEEN.fetch_add(1, Ordering::Relaxed) + 1;
        match message.as_slice() {
            b"trap" => panic!("asked to trap"),
            b"spin" => loop {
                std::hint::spin_loop();
            },
            _ => {}
        }
        let text = format!("{seen}:{}", String::from_utf8_lossy(&message));
        Store::open_default()?.set("sub2", text.as_bytes())?;
        Ok(())
    }
}
