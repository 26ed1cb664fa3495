use super::*;
use crate::capabilities::context::Grants;
use crate::capabilities::runtime_config::StateDirArg;
use crate::capabilities::{AppServices, ComponentContext};
use std::path::PathBuf;

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("spinbench-sql-{name}-{}", std::process::id()));
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
        sqlite_databases: granted.iter().map(ToString::to_string).collect(),
        ..Grants::default()
    };
    context.services = Arc::new(AppServices::new(config).unwrap());
    context
}

fn text(value: &str) -> Value {
    Value::Text(value.to_string())
}

#[test]
fn default_is_in_the_state_dir_and_paths_resolve_against_the_working_directory() {
    let scratch = Scratch::new("config");
    let databases = Databases::from_config(&config(&scratch.0, None)).unwrap();
    assert_eq!(
        databases.get("default").unwrap().location,
        Location::File(scratch.0.join(".spin").join(DEFAULT_FILE))
    );
    let text = "[sqlite_database.other]\ntype = \"spin\"\npath = \"other.db\"\nallow_attach_file = true\n\
                [sqlite_database.default]\ntype = \"spin\"\n";
    let databases = Databases::from_config(&config(&scratch.0, Some(text))).unwrap();
    let other = databases.get("other").unwrap();
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(other.location, Location::File(cwd.join("other.db")));
    assert!(other.allow_attach_file);
    // `default` redefined without a path: in memory.
    assert_eq!(databases.get("default").unwrap().location, Location::Memory);
}

#[test]
fn other_types_unknown_keys_and_undefined_grants_are_refused_at_start() {
    let scratch = Scratch::new("refused");
    for text in [
        "[sqlite_database.x]\ntype = \"libsql\"\nurl = \"https://x\"\ntoken = \"t\"\n",
        "[sqlite_database.x]\ntype = \"spin\"\npaht = \"typo.db\"\n",
    ] {
        assert!(
            Databases::from_config(&config(&scratch.0, Some(text))).is_err(),
            "{text}"
        );
    }
    let databases = Databases::from_config(&config(&scratch.0, None)).unwrap();
    databases.check_grants("c", &["default".into()]).unwrap();
    assert!(databases.check_grants("c", &["x".into()]).is_err());
}

#[test]
fn a_database_not_granted_is_denied_and_an_undefined_one_is_no_such_database() {
    let scratch = Scratch::new("deny");
    let context = context(&["default", "nowhere"], config(&scratch.0, None));
    assert!(matches!(
        context.open_database("forbidden"),
        Err(SqliteError::AccessDenied)
    ));
    assert!(matches!(
        context.open_database("nowhere"),
        Err(SqliteError::NoSuchDatabase)
    ));
    assert!(context.open_database("default").is_ok());
}

#[tokio::test]
async fn statements_take_parameters_and_return_every_value_type() {
    let scratch = Scratch::new("values");
    let context = context(&["default"], config(&scratch.0, None));
    let db = context.open_database("default").unwrap();
    db.execute(
        "CREATE TABLE t(i INTEGER, r REAL, s TEXT, b BLOB, n)".into(),
        vec![],
    )
    .await
    .unwrap();
    let row = vec![
        Value::Integer(-7),
        Value::Real(1.5),
        text("ü"),
        Value::Blob(vec![0, 255]),
        Value::Null,
    ];
    db.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?)".into(), row.clone())
        .await
        .unwrap();
    assert_eq!(db.changes().await.unwrap(), 1);
    assert_eq!(db.last_insert_rowid().await.unwrap(), 1);
    let result = db
        .execute("SELECT * FROM t WHERE s = ?".into(), vec![text("ü")])
        .await
        .unwrap();
    assert_eq!(result.columns, ["i", "r", "s", "b", "n"]);
    assert_eq!(result.rows, [RowResult { values: row }]);
    let error = db.execute("SELEC nonsense".into(), vec![]).await;
    assert!(matches!(error, Err(SqliteError::Io(m)) if m.contains("syntax error")));
}

#[tokio::test]
async fn data_persists_in_the_file_across_connections_and_applications() {
    let scratch = Scratch::new("persist");
    let first = context(&["default"], config(&scratch.0, None));
    let db = first.open_database("default").unwrap();
    db.execute("CREATE TABLE kv(k TEXT, v TEXT)".into(), vec![])
        .await
        .unwrap();
    db.execute("INSERT INTO kv VALUES ('a', 'b')".into(), vec![])
        .await
        .unwrap();
    assert!(scratch.0.join(".spin").join(DEFAULT_FILE).is_file());
    let second = context(&["default"], config(&scratch.0, None));
    let result = second
        .open_database("default")
        .unwrap()
        .execute("SELECT v FROM kv".into(), vec![])
        .await
        .unwrap();
    assert_eq!(
        result.rows,
        [RowResult {
            values: vec![text("b")]
        }]
    );
}

#[tokio::test]
async fn attaching_a_file_is_refused_unless_the_runtime_config_allows_it() {
    let scratch = Scratch::new("attach");
    let other = scratch.0.join("other.db").display().to_string();
    let config_text = "[sqlite_database.open]\ntype = \"spin\"\nallow_attach_file = true\n\
                       [sqlite_database.closed]\ntype = \"spin\"\n";
    let context = context(&["open", "closed"], config(&scratch.0, Some(config_text)));
    let attach = format!("ATTACH DATABASE '{other}' AS other");
    let closed = context.open_database("closed").unwrap();
    assert!(matches!(
        closed.execute(attach.clone(), vec![]).await,
        Err(SqliteError::Io(m)) if m.contains("not authorized")
    ));
    closed
        .execute("ATTACH DATABASE ':memory:' AS scratch".into(), vec![])
        .await
        .unwrap();
    let open = context.open_database("open").unwrap();
    open.execute(attach, vec![]).await.unwrap();
}
