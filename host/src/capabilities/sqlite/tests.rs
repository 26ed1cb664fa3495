use super::*;
use crate::capabilities::context::Grants;
use crate::capabilities::runtime_config::StateDirArg;
use crate::capabilities::{AppServices, ComponentContext};
use std::path::{Path, PathBuf};

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
    context.services = Arc::new(AppServices::new(config, 1).unwrap());
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
        context.open_database("forbidden", &budget()),
        Err(SqliteError::AccessDenied)
    ));
    assert!(matches!(
        context.open_database("nowhere", &budget()),
        Err(SqliteError::NoSuchDatabase)
    ));
    assert!(context.open_database("default", &budget()).is_ok());
}

#[tokio::test]
async fn statements_take_parameters_and_return_every_value_type() {
    let scratch = Scratch::new("values");
    let context = context(&["default"], config(&scratch.0, None));
    let db = context.open_database("default", &budget()).unwrap();
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
    let db = first.open_database("default", &budget()).unwrap();
    db.execute("CREATE TABLE kv(k TEXT, v TEXT)".into(), vec![])
        .await
        .unwrap();
    db.execute("INSERT INTO kv VALUES ('a', 'b')".into(), vec![])
        .await
        .unwrap();
    assert!(scratch.0.join(".spin").join(DEFAULT_FILE).is_file());
    let second = context(&["default"], config(&scratch.0, None));
    let result = second
        .open_database("default", &budget())
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
    let closed = context.open_database("closed", &budget()).unwrap();
    assert!(matches!(
        closed.execute(attach.clone(), vec![]).await,
        Err(SqliteError::Io(m)) if m.contains("not authorized")
    ));
    closed
        .execute("ATTACH DATABASE ':memory:' AS scratch".into(), vec![])
        .await
        .unwrap();
    let open = context.open_database("open", &budget()).unwrap();
    open.execute(attach, vec![]).await.unwrap();
}

/// Every way SQL can name a file to attach, none a string literal but the last.
const ATTACH_SPELLINGS: &[&str] = &[
    "ATTACH DATABASE ?1 || '' AS x",
    "ATTACH DATABASE ?1 AS x",
    "ATTACH DATABASE lower(?1) AS x",
    "ATTACH DATABASE (SELECT ?1) AS x",
    "ATTACH DATABASE 'file:' || ?1 || '?mode=rwc' AS x",
    "VACUUM INTO ?1",
    "VACUUM INTO ?1 || ''",
];

#[tokio::test]
async fn no_spelling_of_attach_or_vacuum_into_reaches_a_file_not_granted() {
    let scratch = Scratch::new("attach-spellings");
    let context = context(&["default"], config(&scratch.0, None));
    let db = context.open_database("default", &budget()).unwrap();
    db.execute("CREATE TABLE t(x)".into(), vec![])
        .await
        .unwrap();
    let outside = scratch.0.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let target = outside.join("made.db").display().to_string();
    let literal = format!("VACUUM INTO '{target}'");
    let uri = format!("ATTACH DATABASE 'file:{target}?mode=rwc' AS x");
    for statement in ATTACH_SPELLINGS.iter().copied().chain([&*literal, &*uri]) {
        let parameters = if statement.contains("?1") {
            vec![text(&target)]
        } else {
            vec![]
        };
        let outcome = db.execute(statement.into(), parameters).await;
        assert!(
            // "not authorized" at prepare, "authorization denied" for VACUUM
            // INTO's own ATTACH, which runs when the statement does.
            matches!(&outcome, Err(SqliteError::Io(m)) if m.contains("authoriz")),
            "{statement}: {outcome:?}"
        );
    }
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "a file appeared"
    );
    // Temporary and in-memory databases stay allowed, as in Spin.
    for name in ["", ":memory:"] {
        db.execute("ATTACH DATABASE ?1 || '' AS m".into(), vec![text(name)])
            .await
            .expect_err("an expression is refused even when it names memory");
        db.execute(format!("ATTACH DATABASE '{name}' AS m"), vec![])
            .await
            .unwrap();
        db.execute("DETACH DATABASE m".into(), vec![])
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn allow_attach_file_grants_every_spelling() {
    let scratch = Scratch::new("attach-granted");
    let text_config = "[sqlite_database.open]\ntype = \"spin\"\nallow_attach_file = true\n";
    let context = context(&["open"], config(&scratch.0, Some(text_config)));
    let db = context.open_database("open", &budget()).unwrap();
    let target = scratch.0.join("granted.db").display().to_string();
    db.execute("ATTACH DATABASE ?1 || '' AS x".into(), vec![text(&target)])
        .await
        .unwrap();
    assert!(Path::new(&target).exists());
}

#[tokio::test]
async fn extension_loading_the_fts3_tokenizer_and_process_wide_pragmas_are_refused() {
    let scratch = Scratch::new("refused-calls");
    let context = context(&["default"], config(&scratch.0, None));
    let db = context.open_database("default", &budget()).unwrap();
    for statement in [
        "SELECT load_extension('/lib/x86_64-linux-gnu/libc.so.6')",
        "SELECT fts3_tokenizer('simple')",
        "SELECT FTS3_TOKENIZER('simple', x'0000000000000000')",
        "PRAGMA hard_heap_limit = 1",
        "PRAGMA soft_heap_limit = 1",
        "SELECT * FROM pragma_hard_heap_limit(1)",
        "PRAGMA temp_store_directory = '/tmp'",
        "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = 'x'",
    ] {
        let outcome = db.execute(statement.into(), vec![]).await;
        assert!(outcome.is_err(), "{statement}: {outcome:?}");
    }
    // A per-connection pragma still works.
    db.execute("PRAGMA foreign_keys = ON".into(), vec![])
        .await
        .unwrap();
}

#[tokio::test]
async fn values_are_bounded_by_the_result_limit_before_they_are_built() {
    let scratch = Scratch::new("length");
    let context = context(&["default"], config(&scratch.0, None));
    let db = context.open_database("default", &budget()).unwrap();
    for statement in [
        "SELECT zeroblob(999000000)",
        "SELECT length(zeroblob(999000000))",
    ] {
        let outcome = db.execute(statement.into(), vec![]).await;
        assert!(
            matches!(&outcome, Err(SqliteError::Io(m)) if m.contains("too big")),
            "{statement}: {outcome:?}"
        );
    }
    // printf() builds its text in one VM step that nothing interrupts: its
    // width is capped (LIBSQLITE3_FLAGS in .cargo/config.toml), so the step is short.
    let printed = db
        .execute(
            "SELECT length(printf('%.*c', 999000000, 'x'))".into(),
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(printed.rows[0].values, [Value::Integer(1 << 20)]);
}

#[tokio::test]
async fn a_query_whose_caller_gives_up_is_interrupted() {
    let scratch = Scratch::new("interrupt");
    let context = context(&["default"], config(&scratch.0, None));
    let db = context.open_database("default", &budget()).unwrap();
    let runaway = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) \
                   SELECT count(*) FROM n";
    let given_up = tokio::time::timeout(
        std::time::Duration::from_millis(200),
        db.execute(runaway.into(), vec![]),
    )
    .await;
    assert!(
        given_up.is_err(),
        "the runaway query finished: {given_up:?}"
    );
    // The next statement waits for the connection, which the runaway query
    // would hold forever if it were not interrupted.
    let next = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        db.execute("SELECT 1".into(), vec![]),
    )
    .await
    .expect("the runaway query still holds the connection");
    assert!(next.is_ok(), "{next:?}");
}

/// A fresh instance's budget at the default limits.
fn budget() -> Arc<crate::capabilities::budget::InstanceBudget> {
    crate::capabilities::budget::InstanceBudget::new(
        crate::capabilities::budget::BudgetLimits::default(),
    )
}
