//! Outbound MQTT: `fermyon:spin/mqtt@2.0.0` and its async twin
//! `spin:mqtt/mqtt@3.0.0`, as Spin serves them (spinframework/spin
//! `crates/factor-outbound-mqtt`): `open` of an address the component's
//! `allowed_outbound_hosts` do not allow (as `mqtt://...`) is
//! `error::connection-failed("address <address> is not permitted")`; an
//! allowed one makes a `rumqttc` client (what Spin uses; plain TCP here, no
//! TLS), which connects on the first `publish`; `publish` returns once the
//! broker has the message at the asked QoS, as Spin's does.
//!
//! The address is read once ([`super::dial`]): rumqttc's reading must name
//! the host and port the allow-list read, else `connection-failed` says both;
//! rumqttc is then given the URL with the checked host put back, and its
//! reading of that checked again. rumqttc takes one broker address, not a
//! list, so a name is looked up by rumqttc itself (an IP address is dialled
//! as it is). Options rumqttc 0.25 panics on (`inflight_num=0`,
//! `clean_session=false` without a `client_id`) are refused.

use super::HostState;
use super::dial::Destination;
use super::outbound_hosts::{AllowedHosts, GuestAddress};
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

/// rumqttc's options for `address`: allowed by `allowed`, read alike by
/// rumqttc, and made from the URL with the checked destination as its host.
pub fn options(allowed: &AllowedHosts, address: &str) -> Result<MqttOptions, MqttError> {
    let Some(ours) = GuestAddress::parse(address, "mqtt").filter(|a| allowed.allows_address(a))
    else {
        return Err(MqttError::ConnectionFailed(format!(
            "address {address} is not permitted"
        )));
    };
    let refused =
        |reason: String| MqttError::ConnectionFailed(format!("address {address:?}: {reason}"));
    let mut url = url::Url::parse(address).map_err(|_| MqttError::InvalidAddress)?;
    let (host, port) = read_options(url.clone())?.broker_address();
    let destination = Destination::agreed(&ours, "rumqttc", &host, port)
        .map_err(|refusal| refused(refusal.to_string()))?;
    // The checked destination, written back into the URL rumqttc reads.
    let host = destination.host.to_string();
    url.set_host(Some(&host))
        .and_then(|()| {
            url.set_port(Some(destination.port))
                .map_err(|()| url::ParseError::InvalidPort)
        })
        .map_err(|e| refused(format!("its host cannot be written back: {e}")))?;
    let options = read_options(url)?;
    if options.broker_address() != (host, destination.port) {
        return Err(refused(format!(
            "rumqttc reads the checked address back as {:?}",
            options.broker_address()
        )));
    }
    Ok(options)
}

/// rumqttc's reading of `url`, refusing what its option setters assert on
/// (rumqttc 0.25.1 `MqttOptions::set_inflight`, `set_clean_session`) instead
/// of letting them panic the host.
fn read_options(url: url::Url) -> Result<MqttOptions, MqttError> {
    // The last of a repeated parameter, as rumqttc's map of them keeps it.
    let query = |name: &str| {
        url.query_pairs()
            .filter(|(key, _)| key == name)
            .last()
            .map(|(_, value)| value.into_owned())
    };
    let no_client_id = query("client_id").is_none_or(|id| id.is_empty());
    if query("inflight_num").and_then(|n| n.parse::<u16>().ok()) == Some(0)
        || (no_client_id && query("clean_session").as_deref() == Some("false"))
    {
        return Err(MqttError::InvalidAddress);
    }
    MqttOptions::try_from(url).map_err(|_| MqttError::InvalidAddress)
}

fn open(
    options: Result<MqttOptions, MqttError>,
    username: String,
    password: String,
    keep_alive_secs: u64,
) -> Result<Connection, MqttError> {
    let mut options = options?;
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

fn checked<T: HostState>(state: &T, address: &str) -> Result<MqttOptions, MqttError> {
    options(&state.context().grants.allowed_outbound_hosts, address)
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
            let options = checked(store.data(), &address);
            Ok((match open(options, username, password, keep_alive) {
                Ok(connection) => Ok(store.data_mut().table().push(connection)?),
                Err(error) => Err(error),
            },))
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
                    let options = checked(access.get(), &address);
                    match open(options, username, password, keep_alive) {
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
#[path = "mqtt_tests.rs"]
mod tests;
