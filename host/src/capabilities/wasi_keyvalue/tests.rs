use super::*;
use crate::capabilities::context::Grants;
use crate::capabilities::runtime_config::{RuntimeConfig, StateDirArg};
use crate::capabilities::{AppServices, ComponentContext, Group, group_of, groups_for};
use std::collections::BTreeSet;
use std::sync::Arc;

/// A component granted `default` (in memory: no state directory) and `other`
/// (a second in-memory store).
fn context() -> ComponentContext {
    let dir = std::env::temp_dir().join(format!("spinbench-wasi-kv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("runtime-config.toml");
    std::fs::write(&file, "[key_value_store.other]\ntype = \"spin\"\n").unwrap();
    let config = RuntimeConfig::load(Some(&file), &StateDirArg::Unset, &dir).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let mut context = ComponentContext::for_test("c", &[]);
    context.grants = Grants {
        key_value_stores: vec!["default".into(), "other".into()],
        ..Grants::default()
    };
    context.services = Arc::new(AppServices::new(config, 1).unwrap());
    context
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, Vec<u8>)> {
    list.iter()
        .map(|(k, v)| ((*k).to_string(), v.as_bytes().to_vec()))
        .collect()
}

fn keys(list: &[&str]) -> Vec<String> {
    list.iter().map(ToString::to_string).collect()
}

#[test]
fn the_three_interfaces_are_provided_at_spin_s_version_only() {
    let imports = keys(&[
        "wasi:keyvalue/store@0.2.0-draft2",
        "wasi:keyvalue/batch@0.2.0-draft2",
        "wasi:keyvalue/atomics@0.2.0-draft2",
    ]);
    let groups = groups_for(&imports).unwrap();
    assert_eq!(
        groups.into_iter().collect::<Vec<_>>(),
        [Group::WasiKeyValue]
    );
    assert!(!Group::WasiKeyValue.concurrent());
    for other in [
        "wasi:keyvalue/store@0.2.0-draft",
        "wasi:keyvalue/store@0.2.0",
        "wasi:keyvalue/watcher@0.2.0-draft2",
    ] {
        assert_eq!(group_of(other), None, "{other}");
    }
}

#[test]
fn open_answers_as_spin_and_errors_map_to_this_interface() {
    let context = context();
    assert!(context.open_store("default", &budget()).is_ok());
    let denied = context
        .open_store("forbidden", &budget())
        .map(drop)
        .map_err(Error::from);
    assert_eq!(denied, Err(Error::AccessDenied));
    assert_eq!(
        Error::from(KeyValueError::StoreTableFull),
        Error::Other("store table full".into())
    );
    assert_eq!(Error::from(KeyValueError::NoSuchStore), Error::NoSuchStore);
}

#[tokio::test]
async fn list_keys_answers_all_keys_at_once_and_refuses_a_cursor() {
    let store = context().open_store("default", &budget()).unwrap();
    store.set("b".into(), b"2".to_vec()).await.unwrap();
    store.set("a".into(), b"1".to_vec()).await.unwrap();
    let mut response = list_keys(&store, None).await.unwrap();
    response.keys.sort();
    assert_eq!(
        response,
        KeyResponse {
            keys: keys(&["a", "b"]),
            cursor: None
        }
    );
    assert_eq!(
        list_keys(&store, Some("a".into())).await,
        Err(Error::Other("list_keys: cursor not supported".into()))
    );
}

#[tokio::test]
async fn batches_answer_only_existing_keys_and_stay_in_their_store() {
    let context = context();
    let store = context.open_store("default", &budget()).unwrap();
    let other = context.open_store("other", &budget()).unwrap();
    assert_eq!(get_many(&store, Vec::new()).await, Ok(Vec::new()));
    set_many(&store, pairs(&[("b", "2"), ("a", "1"), ("c", "3")]))
        .await
        .unwrap();
    set_many(&other, pairs(&[("a", "elsewhere")]))
        .await
        .unwrap();
    // Absent keys are left out (Spin's query selects rows); duplicates once.
    let found = get_many(&store, keys(&["c", "missing", "a", "c"]))
        .await
        .unwrap();
    let mut found_keys: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
    found_keys.sort_unstable();
    assert_eq!(found_keys, ["a", "c"]);
    assert!(found.contains(&("a".to_string(), Some(b"1".to_vec()))));
    // What the Spin interface reads is what the batch wrote.
    assert_eq!(store.get("b".into()).await, Ok(Some(b"2".to_vec())));
    delete_many(&store, keys(&["a", "b", "missing"]))
        .await
        .unwrap();
    delete_many(&store, Vec::new()).await.unwrap();
    assert_eq!(store.get_keys().await, Ok(keys(&["c"])));
    assert_eq!(other.get("a".into()).await, Ok(Some(b"elsewhere".to_vec())));
}

#[tokio::test]
async fn increment_counts_in_8_le_bytes_and_refuses_other_values_without_panicking() {
    let store = context().open_store("default", &budget()).unwrap();
    assert_eq!(increment(&store, "n".into(), 5).await, Ok(5));
    assert_eq!(increment(&store, "n".into(), -7).await, Ok(-2));
    assert_eq!(
        store.get("n".into()).await,
        Ok(Some((-2i64).to_le_bytes().to_vec()))
    );
    store
        .set("max".into(), i64::MAX.to_le_bytes().to_vec())
        .await
        .unwrap();
    assert_eq!(increment(&store, "max".into(), 1).await, Ok(i64::MIN));
    store.set("word".into(), b"hello".to_vec()).await.unwrap();
    let refused = increment(&store, "word".into(), 1).await;
    assert!(
        matches!(&refused, Err(Error::Other(m)) if m.contains("5 bytes")),
        "{refused:?}"
    );
    // Left as it was.
    assert_eq!(store.get("word".into()).await, Ok(Some(b"hello".to_vec())));
}

#[tokio::test]
async fn a_swap_succeeds_on_the_value_read_and_fails_with_a_fresh_cas_after_a_change() {
    let store = context().open_store("default", &budget()).unwrap();
    store.set("k".into(), b"one".to_vec()).await.unwrap();
    let mut cas = Cas::new(store.clone(), "k".into());
    assert_eq!(cas.current().await, Ok(Some(b"one".to_vec())));
    cas.swap(b"two".to_vec()).await.unwrap();
    assert_eq!(store.get("k".into()).await, Ok(Some(b"two".to_vec())));

    let mut cas = Cas::new(store.clone(), "k".into());
    cas.current().await.unwrap();
    store.set("k".into(), b"intruder".to_vec()).await.unwrap();
    let Err(SwapFailure::Changed(mut fresh)) = cas.swap(b"lost".to_vec()).await else {
        panic!("a swap over a change must fail with a fresh cas");
    };
    assert_eq!(store.get("k".into()).await, Ok(Some(b"intruder".to_vec())));
    // The fresh cas has read the value that won, so it swaps without a `current`.
    assert_eq!(fresh.read.as_deref(), Some(&b"intruder"[..]));
    assert_eq!(fresh.key, "k");
    assert_eq!(fresh.current().await, Ok(Some(b"intruder".to_vec())));
    fresh.swap(b"three".to_vec()).await.unwrap();
    assert_eq!(store.get("k".into()).await, Ok(Some(b"three".to_vec())));
}

#[tokio::test]
async fn without_a_value_read_a_swap_writes_as_spin_s_does() {
    let store = context().open_store("default", &budget()).unwrap();
    // `current` never called: an unconditional write.
    store.set("k".into(), b"v".to_vec()).await.unwrap();
    Cas::new(store.clone(), "k".into())
        .swap(b"w".to_vec())
        .await
        .unwrap();
    assert_eq!(store.get("k".into()).await, Ok(Some(b"w".to_vec())));
    // An absent key read as none: the swap creates it.
    let mut cas = Cas::new(store.clone(), "new".into());
    assert_eq!(cas.current().await, Ok(None));
    cas.swap(b"x".to_vec()).await.unwrap();
    assert_eq!(store.get("new".into()).await, Ok(Some(b"x".to_vec())));
}

/// Store data for linking only.
struct TestState {
    context: ComponentContext,
    table: ResourceTable,
    budget: Arc<crate::capabilities::budget::InstanceBudget>,
}

impl HostState for TestState {
    fn context(&self) -> &ComponentContext {
        &self.context
    }
    fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }
    fn budget(&self) -> &Arc<crate::capabilities::budget::InstanceBudget> {
        &self.budget
    }
}

/// A component whose world is the test app's (tests/apps/wasi-keyvalue/wit,
/// the interfaces as Spin 4.0.2 declares them) links: every name and type the
/// guest imports is what the linker provides.
#[test]
fn a_component_importing_the_three_interfaces_links() {
    use wit_parser::Resolve;
    let mut resolve = Resolve::default();
    let package = resolve
        .push_str(
            "keyvalue.wit",
            include_str!("../../../../tests/apps/wasi-keyvalue/wit/deps/keyvalue/keyvalue.wit"),
        )
        .unwrap();
    let world = resolve.select_world(&[package], Some("imports")).unwrap();
    let module = crate::capabilities::test_support::module_for(&resolve, world);
    let component = wit_component::ComponentEncoder::default()
        .module(&module)
        .unwrap()
        .encode()
        .unwrap();
    let mut config = wasmtime::Config::new();
    config.wasm_component_model(true);
    let engine = wasmtime::Engine::new(&config).unwrap();
    let component = wasmtime::component::Component::new(&engine, &component).unwrap();
    let imports: Vec<String> = component
        .component_type()
        .imports(&engine)
        .map(|(name, _)| name.to_string())
        .collect();
    assert_eq!(
        groups_for(&imports).unwrap(),
        BTreeSet::from([Group::WasiKeyValue])
    );
    let mut linker = Linker::<TestState>::new(&engine);
    link(&mut linker).unwrap();
    linker.instantiate_pre(&component).unwrap();
}

/// A fresh instance's budget at the default limits.
fn budget() -> Arc<crate::capabilities::budget::InstanceBudget> {
    crate::capabilities::budget::InstanceBudget::new(
        crate::capabilities::budget::BudgetLimits::default(),
    )
}
