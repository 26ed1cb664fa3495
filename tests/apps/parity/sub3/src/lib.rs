//! tests/apps/parity's Redis subscriber as spin-sdk 7 writes one
//! (`#[redis_subscriber]`, an async handler): each message is kept in the
//! default key-value store under `sub3`.

#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    use spin_sdk::key_value::Store;
    use spin_sdk::redis_subscriber;

    #[redis_subscriber]
    async fn on_message(message: Vec<u8>) -> anyhow::Result<()> {
        Store::open_default().await?.set("sub3", &message).await?;
        Ok(())
    }
}
