//! Outbound MQTT: `fermyon:spin/mqtt@2.0.0` and its async twin
//! `spin:mqtt/mqtt@3.0.0`, as Spin serves them (spinframework/spin
//! `crates/factor-outbound-mqtt`): `open` of an address the component's
//! `allowed_outbound_hosts` do not allow (as `mqtt://...`) is
//! `error::connection-failed("address <address> is not permitted")`; an
//! allowed one makes a `rumqttc` client (what Spin uses; plain TCP here, no
//! TLS), which connects on the first `publish`; `publish` returns once the
//! broker has the message at the asked QoS, as Spin's does.

use super::HostState;
use anyhow::Result;
use rumqttc::{AsyncClient, Event, EventLoop, Incoming, MqttOptions, Outgoing, QoS};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;
use wasmtime::StoreContextMut;
use wasmtime::component::{Accessor, ComponentType, Lift, Linker, Lower, Resource, ResourceType};

pub const V2: &str = "fermyon:spin/mqtt@2.0.0";
pub const V3: &str = "spin:mqtt/mqtt@3.0.0";

/// The `error` variant (the same cases in both versions).
#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq, Eq)]
#[component(variant)]
pub enum MqttError {
    #[component(name = "invalid-address")]
    InvalidAddress,
    #[component(name = "too-many-connections")]
    TooManyConnections,
    #[component(name = "connection-failed")]
    ConnectionFailed(String),
    #[component(name = "other")]
    Other(String),
}

#[derive(ComponentType, Lift, Lower, Debug, Clone, Copy, PartialEq, Eq)]
#[component(enum)]
#[repr(u8)]
pub enum Qos {
    #[component(name = "at-most-once")]
    AtMostOnce,
    #[component(name = "at-least-once")]
    AtLeastOnce,
    #[component(name = "exactly-once")]
    ExactlyOnce,
}

/// Messages the client buffers before its event loop sends them (Spin's cap).
const CHANNEL_CAPACITY: usize = 1000;

/// The host side of a `connection` resource; clones share the client.
#[derive(Clone)]
pub struct Connection(Arc<(AsyncClient, Mutex<EventLoop>)>);

fn open(
    allowed: bool,
    address: &str,
    username: String,
    password: String,
    keep_alive_secs: u64,
) -> Result<Connection, MqttError> {
    if !allowed {
        return Err(MqttError::ConnectionFailed(format!(
            "address {address} is not permitted"
        )));
    }
    let mut options = MqttOptions::parse_url(address).map_err(|_| MqttError::InvalidAddress)?;
    options.set_credentials(username, password);
    options.set_keep_alive(Duration::from_secs(keep_alive_secs));
    let (client, event_loop) = AsyncClient::new(options, CHANNEL_CAPACITY);
    Ok(Connection(Arc::new((client, Mutex::new(event_loop)))))
}

async fn publish(
    connection: Connection,
    topic: String,
    payload: Vec<u8>,
    qos: Qos,
) -> Result<(), MqttError> {
    let (client, event_loop) = &*connection.0;
    let qos = match qos {
        Qos::AtMostOnce => QoS::AtMostOnce,
        Qos::AtLeastOnce => QoS::AtLeastOnce,
        Qos::ExactlyOnce => QoS::ExactlyOnce,
    };
    client
        .publish(topic, qos, false, payload)
        .await
        .map_err(|e| MqttError::Other(e.to_string()))?;
    // The event loop sends it; done once the broker acknowledged it at `qos`.
    let mut event_loop = event_loop.lock().await;
    loop {
        let event = event_loop
            .poll()
            .await
            .map_err(|e| MqttError::ConnectionFailed(e.to_string()))?;
        if matches!(
            (qos, event),
            (QoS::AtMostOnce, Event::Outgoing(Outgoing::Publish(_)))
                | (QoS::AtLeastOnce, Event::Incoming(Incoming::PubAck(_)))
                | (QoS::ExactlyOnce, Event::Incoming(Incoming::PubComp(_)))
        ) {
            return Ok(());
        }
    }
}

fn connection<T: HostState>(
    state: &mut T,
    this: &Resource<Connection>,
) -> wasmtime::Result<Connection> {
    Ok(state.table().get(this)?.clone())
}

fn allowed<T: HostState>(state: &T, address: &str) -> bool {
    state
        .context()
        .grants
        .allowed_outbound_hosts
        .allows_url(address, "mqtt")
}

type OpenParams = (String, String, String, u64);

pub fn link_v2<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    let mut instance = linker.instance(V2)?;
    instance.resource(
        "connection",
        ResourceType::host::<Connection>(),
        super::drop_resource::<T, Connection>,
    )?;
    instance.func_wrap(
        "[static]connection.open",
        |mut store: StoreContextMut<'_, T>,
         (address, username, password, keep_alive): OpenParams| {
            let allowed = allowed(store.data(), &address);
            Ok((
                match open(allowed, &address, username, password, keep_alive) {
                    Ok(connection) => Ok(store.data_mut().table().push(connection)?),
                    Err(error) => Err(error),
                },
            ))
        },
    )?;
    instance.func_wrap_async(
        "[method]connection.publish",
        |mut store: StoreContextMut<'_, T>,
         (this, topic, payload, qos): (Resource<Connection>, String, Vec<u8>, Qos)| {
            Box::new(async move {
                let connection = connection(store.data_mut(), &this)?;
                Ok((publish(connection, topic, payload, qos).await,))
            })
        },
    )?;
    Ok(())
}

pub fn link_v3<T: HostState>(linker: &mut Linker<T>) -> Result<()> {
    let mut instance = linker.instance(V3)?;
    instance.resource(
        "connection",
        ResourceType::host::<Connection>(),
        super::drop_resource::<T, Connection>,
    )?;
    instance.func_wrap_concurrent(
        "[static]connection.open",
        |accessor: &Accessor<T>, (address, username, password, keep_alive): OpenParams| {
            Box::pin(async move {
                Ok((accessor.with(|mut access| {
                    let allowed = allowed(access.get(), &address);
                    match open(allowed, &address, username, password, keep_alive) {
                        Ok(connection) => Ok(Ok(access.get().table().push(connection)?)),
                        Err(error) => Ok::<_, wasmtime::Error>(Err(error)),
                    }
                })?,))
            })
        },
    )?;
    instance.func_wrap_concurrent(
        "[method]connection.publish",
        |accessor: &Accessor<T>,
         (this, topic, payload, qos): (Resource<Connection>, String, Vec<u8>, Qos)| {
            Box::pin(async move {
                let connection = accessor.with(|mut access| connection(access.get(), &this))?;
                Ok((publish(connection, topic, payload, qos).await,))
            })
        },
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_not_allowed_fails_as_spin_s_does() {
        let address = "mqtt://localhost:1883?client_id=spintest";
        let error = open(false, address, "u".into(), "p".into(), 30).err();
        assert_eq!(
            error,
            Some(MqttError::ConnectionFailed(format!(
                "address {address} is not permitted"
            )))
        );
        assert_eq!(
            open(true, "not a url", "u".into(), "p".into(), 30).err(),
            Some(MqttError::InvalidAddress)
        );
    }
}
