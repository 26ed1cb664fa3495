use super::*;
use crate::capabilities::context::Grants;
use crate::capabilities::runtime_config::StateDirArg;
use crate::capabilities::{AppServices, ComponentContext};
use std::path::{Path, PathBuf};

/// A fresh directory under the system's temporary one, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("spinbench-kv-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn config(app: &Path, runtime_config: Option<&str>) -> RuntimeConfig {
    let file = runtime_config.map(|text| {
        let file = app.join("runtime-config.toml");
        std::fs::write(&file, text).unwrap();
        file
    });
    RuntimeConfig::load(file.as_deref(), &StateDirArg::Default, app).unwrap()
}

fn context(granted: &[&str], config: RuntimeConfig) -> ComponentContext {
    let mut context = ComponentContext::for_test("c", &[]);
    context.grants = Grants {
        key_value_stores: granted.iter().map(ToString::to_string).collect(),
        ..Grants::default()
    };
    context.services = Arc::new(AppServices::new(config, 1).unwrap());
    context
}

#[test]
fn default_is_in_the_state_dir_and_labels_come_from_the_runtime_config() {
    let scratch = Scratch::new("config");
    let stores = Stores::from_config(&config(&scratch.0, None), &Executor::new(1)).unwrap();
    assert_eq!(
        stores.labels["default"].location(),
        &Location::File(scratch.0.join(".spin").join(DEFAULT_FILE))
    );
    let with_file = config(
        &scratch.0,
        Some(
            "[key_value_store.cache]\ntype = \"spin\"\npath = \"data/cache.db\"\n[key_value_store.temp]\ntype = \"spin\"\n",
        ),
    );
    let stores = Stores::from_config(&with_file, &Executor::new(1)).unwrap();
    assert_eq!(
        stores.labels["cache"].location(),
        &Location::File(scratch.0.join("data/cache.db"))
    );
    assert_eq!(stores.labels["temp"].location(), &Location::Memory);
    let no_state = RuntimeConfig::load(None, &StateDirArg::Unset, &scratch.0).unwrap();
    let stores = Stores::from_config(&no_state, &Executor::new(1)).unwrap();
    assert_eq!(stores.labels["default"].location(), &Location::Memory);
}

#[test]
fn other_store_types_and_undefined_grants_are_refused_at_start() {
    let scratch = Scratch::new("refused");
    let redis = config(
        &scratch.0,
        Some("[key_value_store.r]\ntype = \"redis\"\nurl = \"redis://localhost\"\n"),
    );
    let error = Stores::from_config(&redis, &Executor::new(1)).unwrap_err();
    assert!(
        format!("{error:#}").contains("type Some(\"redis\")"),
        "{error:#}"
    );
    let stores = Stores::from_config(&config(&scratch.0, None), &Executor::new(1)).unwrap();
    stores.check_grants("c", &["default".into()]).unwrap();
    let error = stores.check_grants("c", &["cache".into()]).unwrap_err();
    assert!(error.to_string().contains("\"cache\""), "{error}");
}

#[test]
fn a_label_not_granted_is_denied_and_an_undefined_one_is_no_such_store() {
    let scratch = Scratch::new("deny");
    let context = context(&["default", "nowhere"], config(&scratch.0, None));
    assert!(matches!(
        context.open_store("forbidden", &budget()),
        Err(KeyValueError::AccessDenied)
    ));
    assert!(matches!(
        context.open_store("nowhere", &budget()),
        Err(KeyValueError::NoSuchStore)
    ));
    assert!(context.open_store("default", &budget()).is_ok());
    // Nothing is created before a store is used.
    assert!(!scratch.0.join(".spin").exists());
}

#[tokio::test]
async fn a_store_keeps_what_is_set_across_reopening_and_labels_are_apart() {
    let scratch = Scratch::new("ops");
    let text = "[key_value_store.other]\ntype = \"spin\"\npath = \".spin/sqlite_key_value.db\"\n";
    let context = context(&["default", "other"], config(&scratch.0, Some(text)));
    let store = context.open_store("default", &budget()).unwrap();
    assert_eq!(store.get("k".into()).await, Ok(None));
    assert_eq!(store.exists("k".into()).await, Ok(false));
    store.set("k".into(), b"v1".to_vec()).await.unwrap();
    store.set("k".into(), b"v2".to_vec()).await.unwrap();
    store.set("j".into(), Vec::new()).await.unwrap();
    assert_eq!(store.get("k".into()).await, Ok(Some(b"v2".to_vec())));
    assert_eq!(store.exists("j".into()).await, Ok(true));
    let mut keys = store.get_keys().await.unwrap();
    keys.sort();
    assert_eq!(keys, ["j", "k"]);
    // The same file under another label: another store.
    let other = context.open_store("other", &budget()).unwrap();
    assert_eq!(other.get_keys().await, Ok(Vec::new()));
    store.delete("j".into()).await.unwrap();
    store.delete("j".into()).await.unwrap();
    assert_eq!(store.exists("j".into()).await, Ok(false));
    // A new application over the same state directory sees the same data.
    let reopened = self::context(&["default"], config(&scratch.0, Some(text)));
    let store = reopened.open_store("default", &budget()).unwrap();
    assert_eq!(store.get("k".into()).await, Ok(Some(b"v2".to_vec())));
    assert_eq!(store.get_keys().await, Ok(vec!["k".to_string()]));
}

#[tokio::test]
async fn an_unwritable_location_is_an_other_error_not_a_panic() {
    let scratch = Scratch::new("unwritable");
    std::fs::write(scratch.0.join("file"), "").unwrap();
    let text = "[key_value_store.bad]\ntype = \"spin\"\npath = \"file/below/a/file.db\"\n";
    let context = context(&["bad"], config(&scratch.0, Some(text)));
    let store = context.open_store("bad", &budget()).unwrap();
    assert!(matches!(
        store.set("k".into(), b"v".to_vec()).await,
        Err(KeyValueError::Other(_))
    ));
}

/// A fresh instance's budget at the default limits.
fn budget() -> Arc<crate::capabilities::budget::InstanceBudget> {
    crate::capabilities::budget::InstanceBudget::new(
        crate::capabilities::budget::BudgetLimits::default(),
    )
}
