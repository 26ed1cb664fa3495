//! The Redis trigger, as Spin runs it (spinframework/spin main at 94a8fc8a,
//! `crates/trigger-redis/src/lib.rs`, the trigger Spin 4.1 to 4.3 build in):
//!
//! - each `[[trigger.redis]]` names a `component` and a `channel`, and may
//!   name the server (`address`); without one, the application's
//!   `[application.trigger.redis] address`; each is a template over the
//!   application's variables (`{{ redis_address }}`), resolved at start;
//! - one subscription per server, to every channel its triggers name; a
//!   message on a channel runs every component subscribed to it, each on a
//!   fresh instance, with the message's payload, and the next message of that
//!   server waits for them (Spin awaits every handler before reading on);
//! - a component exports `fermyon:spin/inbound-redis` (spin-sdk 2 to 5,
//!   `#[redis_component]`) or `spin:redis/inbound-redis@3.0.0` (spin-sdk 6
//!   and 7, `#[redis_subscriber]`, an async function): one of them, else it
//!   is refused at start in Spin's words;
//! - a handler's error or trap is logged and the next message is read; a
//!   server that cannot be reached at start stops the start, and one that
//!   goes away later stops the app, as it stops `spin up`.
//!
//! Each run is a request like any other: an admission permit (so messages
//! and HTTP requests share the instance cap), the component's memory and
//! resource limits, and the request deadline, past which the instance is
//! dropped ([`RedisHandler::handle`]).

use crate::instance::state::{RequestState, StoreRecipe, new_store};
use crate::manifest::{Manifest, variables};
use anyhow::{Context, Result, anyhow, bail};
use futures::StreamExt;
use std::collections::BTreeMap;
use wasmtime::component::{ComponentExportIndex, InstancePre, Val};

/// The unversioned interface spin-sdk 2 to 5 export.
pub const INBOUND_V1: &str = "fermyon:spin/inbound-redis";
/// The async interface spin-sdk 6 and 7 export.
pub const INBOUND_V3: &str = "spin:redis/inbound-redis@3.0.0";
const HANDLE_MESSAGE: &str = "handle-message";

/// One server's subscriptions: channel → the components it runs, in
/// manifest order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    pub address: String,
    pub channels: BTreeMap<String, Vec<String>>,
}

/// Every `[[trigger.redis]]` of `manifest`, grouped by server, its
/// templates resolved over the application's variable values.
pub fn subscriptions(
    manifest: &Manifest,
    application: &BTreeMap<String, String>,
) -> Result<Vec<Subscription>> {
    let default_address = manifest
        .application
        .trigger
        .get("redis")
        .and_then(|settings| settings.get("address"))
        .and_then(toml::Value::as_str)
        .unwrap_or_default();
    let mut servers: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for trigger in &manifest.trigger.redis {
        let id = &trigger.component;
        let address = trigger.address.as_deref().unwrap_or(default_address);
        let address = variables::expand(address, application).with_context(|| {
            format!("resolving the redis trigger address {address:?} for component {id}")
        })?;
        if address.is_empty() {
            bail!(
                "the redis trigger of component {id:?} has no address: give `address` or [application.trigger.redis] address"
            );
        }
        let channel = variables::expand(&trigger.channel, application).with_context(|| {
            format!(
                "resolving the redis trigger channel {:?} for component {id}",
                trigger.channel
            )
        })?;
        servers
            .entry(address)
            .or_default()
            .entry(channel)
            .or_default()
            .push(id.clone());
    }
    Ok(servers
        .into_iter()
        .map(|(address, channels)| Subscription { address, channels })
        .collect())
}

/// Whether `component` exports the async (`@3.0.0`) handler, which needs an
/// engine with the component model's async ABI. Only the outer component's
/// exports are read.
pub fn exports_async_handler(component: &[u8]) -> bool {
    use wasmparser::{Parser, Payload};
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(component) {
        match payload {
            Ok(Payload::ModuleSection { .. } | Payload::ComponentSection { .. }) => depth += 1,
            Ok(Payload::End(_)) if depth > 0 => depth -= 1,
            Ok(Payload::ComponentExportSection(exports))
                if depth == 0
                    && exports
                        .clone()
                        .into_iter()
                        .flatten()
                        .any(|export| export.name.name == INBOUND_V3) =>
            {
                return true;
            }
            Err(_) => return false,
            _ => {}
        }
    }
    false
}

/// Which interface a component handles messages through.
#[derive(Debug, Clone, Copy)]
enum Export {
    V1(ComponentExportIndex),
    V3(ComponentExportIndex),
}

/// A component run on each message it is subscribed to.
pub struct RedisHandler {
    pre: InstancePre<RequestState>,
    export: Export,
}

impl RedisHandler {
    /// Finds the component's handler export: exactly one of the two
    /// interfaces, as Spin's `HandlerType::from_instance_pre` asks.
    pub fn new(pre: InstancePre<RequestState>) -> Result<Self> {
        let find = |interface: &str| {
            let component = pre.component();
            let instance = component.get_export_index(None, interface)?;
            component.get_export_index(Some(&instance), HANDLE_MESSAGE)
        };
        let export = match (find(INBOUND_V1), find(INBOUND_V3)) {
            (Some(v1), None) => Export::V1(v1),
            (None, Some(v3)) => Export::V3(v3),
            (None, None) => bail!("component does not export a Redis interface"),
            (Some(_), Some(_)) => bail!("component exports multiple Redis interfaces"),
        };
        Ok(Self { pre, export })
    }

    /// Runs the handler on a fresh instance with `payload`, within the
    /// component's limits and the request deadline.
    pub async fn handle(&self, payload: &[u8], recipe: &StoreRecipe) -> Result<()> {
        let timeout = recipe.limits.timeout;
        let run = async {
            let mut store = new_store(self.pre.engine(), recipe)?;
            let instance = self.pre.instantiate_async(&mut store).await?;
            let index = match self.export {
                Export::V1(index) | Export::V3(index) => index,
            };
            let func = instance
                .get_func(&mut store, index)
                .ok_or_else(|| anyhow!("its {HANDLE_MESSAGE} export is not a function"))?;
            let message = Val::List(payload.iter().copied().map(Val::U8).collect());
            let mut result = [Val::Bool(false)];
            func.call_async(&mut store, &[message], &mut result).await?;
            match &result[0] {
                Val::Result(Ok(_)) => Ok(()),
                Val::Result(Err(error)) => Err(anyhow!(
                    "Redis handler returned an error: {}",
                    describe(error.as_deref())
                )),
                other => Err(anyhow!("Redis handler returned {other:?}")),
            }
        };
        match tokio::time::timeout(timeout, run).await {
            Ok(outcome) => outcome,
            Err(_) => Err(anyhow!("did not finish within {timeout:?}")),
        }
    }
}

/// A guest's error value in a few words.
fn describe(error: Option<&Val>) -> String {
    match error {
        None => "(none)".into(),
        Some(Val::Enum(case) | Val::Variant(case, None)) => case.clone(),
        Some(Val::Variant(case, Some(payload))) => match payload.as_ref() {
            Val::String(text) => format!("{case}({text})"),
            other => format!("{case}({other:?})"),
        },
        Some(other) => format!("{other:?}"),
    }
}

/// What runs one component on one message's payload (and logs how it went).
pub type Dispatcher = std::sync::Arc<
    dyn Fn(String, Vec<u8>) -> futures::future::BoxFuture<'static, ()> + Send + Sync,
>;

/// Subscribes to `subscription`'s channels (an error if the server cannot be
/// reached or refuses), then returns a future that delivers every message
/// to `dispatch` until the server goes away, which it returns as an error.
pub async fn subscribe(
    subscription: Subscription,
    dispatch: Dispatcher,
) -> Result<impl Future<Output = Result<()>>> {
    let Subscription { address, channels } = subscription;
    let client = redis::Client::open(address.as_str())
        .with_context(|| format!("redis trigger: {address:?} is not a Redis address"))?;
    let mut pubsub = client
        .get_async_pubsub()
        .await
        .with_context(|| format!("Redis trigger failed to connect to {address}"))?;
    for (channel, components) in &channels {
        pubsub.subscribe(channel).await.with_context(|| {
            format!("Redis trigger failed to subscribe to channel {channel:?} on {address}")
        })?;
        crate::err_line!(
            "Subscribed to {address}/{channel}: [{}]",
            components.join(",")
        );
    }
    Ok(async move {
        let mut messages = pubsub.into_on_message();
        while let Some(message) = messages.next().await {
            let Some(components) = channels.get(message.get_channel_name()) else {
                continue;
            };
            let payload = message.get_payload_bytes().to_vec();
            let runs = components
                .iter()
                .map(|component| dispatch(component.clone(), payload.clone()));
            futures::future::join_all(runs).await;
        }
        Err(anyhow!("disconnected from Redis server {address}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const APP: &str = r#"spin_manifest_version = 2
[application]
name = "app"
[application.trigger.redis]
address = "redis://{{ host }}:6379"
[variables]
host = { default = "127.0.0.1" }
channel = { default = "news" }
[[trigger.redis]]
component = "a"
channel = "{{ channel }}"
[[trigger.redis]]
component = "b"
channel = "news"
[[trigger.redis]]
component = "c"
channel = "other"
address = "redis://127.0.0.2:7000"
[component.a]
source = "a.wasm"
[component.b]
source = "b.wasm"
[component.c]
source = "c.wasm"
"#;

    fn values(manifest: &Manifest) -> BTreeMap<String, String> {
        variables::application_values(&manifest.variables, |_| None).unwrap()
    }

    #[test]
    fn triggers_are_grouped_by_server_and_channel_their_templates_resolved() {
        let manifest = Manifest::parse(APP, "/app".into()).unwrap();
        let subscriptions = subscriptions(&manifest, &values(&manifest)).unwrap();
        assert_eq!(
            subscriptions,
            [
                Subscription {
                    address: "redis://127.0.0.1:6379".into(),
                    channels: BTreeMap::from([("news".into(), vec!["a".into(), "b".into()])]),
                },
                Subscription {
                    address: "redis://127.0.0.2:7000".into(),
                    channels: BTreeMap::from([("other".into(), vec!["c".into()])]),
                },
            ]
        );
    }

    #[test]
    fn a_trigger_without_an_address_is_refused_naming_its_component() {
        let app = APP.replace(
            "[application.trigger.redis]\naddress = \"redis://{{ host }}:6379\"\n",
            "",
        );
        let manifest = Manifest::parse(&app, "/app".into()).unwrap();
        let error = subscriptions(&manifest, &values(&manifest))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("\"a\"") && error.contains("address"),
            "{error}"
        );
    }
}
