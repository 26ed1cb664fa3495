//! What one instance's SQLite work may hold, all its connections together:
//! their heap (databases, page caches, temporary storage), how many are
//! open, and the bytes of its statements and results the host holds.

use super::*;
use crate::capabilities::budget::{BudgetLimits, InstanceBudget};
use crate::capabilities::context::Grants;
use crate::capabilities::runtime_config::StateDirArg;
use crate::capabilities::{AppServices, ComponentContext};

const MIB: usize = 1 << 20;

/// A component granted `default`, without a state directory: in memory,
/// each connection its own database.
fn context() -> ComponentContext {
    let dir = std::env::temp_dir();
    let config = RuntimeConfig::load(None, &StateDirArg::Unset, &dir).unwrap();
    let mut context = ComponentContext::for_test("c", &[]);
    context.grants = Grants {
        sqlite_databases: vec!["default".into()],
        ..Grants::default()
    };
    context.services = Arc::new(AppServices::new(config, 2).unwrap());
    context
}

fn budget(limits: BudgetLimits) -> Arc<InstanceBudget> {
    InstanceBudget::new(limits)
}

fn small_heap(bytes: usize) -> BudgetLimits {
    BudgetLimits {
        sqlite_memory: bytes,
        ..BudgetLimits::default()
    }
}

/// Fills `db` with `mib` MiB of blobs, one MiB per row.
async fn fill(db: &Connection, mib: usize) -> Result<QueryResult, SqliteError> {
    db.execute("CREATE TABLE IF NOT EXISTS t(b)".into(), vec![])
        .await?;
    db.execute(
        format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {mib}) \
             INSERT INTO t SELECT randomblob(1048576) FROM n"
        ),
        vec![],
    )
    .await
}

fn out_of_memory(outcome: &Result<QueryResult, SqliteError>) -> bool {
    matches!(outcome, Err(SqliteError::Io(message)) if message.contains("out of memory"))
}

/// One budget for every connection of the instance: three in-memory
/// databases of 6 MiB do not fit in 16 MiB (each fit in its own budget
/// before), the statement past it fails, and the connections stay usable.
#[tokio::test]
async fn an_instances_connections_share_one_heap_budget() {
    let context = context();
    let budget = budget(small_heap(16 * MIB));
    let mut outcomes = Vec::new();
    let mut dbs = Vec::new();
    for _ in 0..3 {
        let db = context.open_database("default", &budget).unwrap();
        outcomes.push(fill(&db, 6).await);
        dbs.push(db);
    }
    assert!(outcomes[0].is_ok(), "{:?}", outcomes[0]);
    assert!(out_of_memory(&outcomes[2]), "{:?}", outcomes[2]);
    assert!(budget.sqlite_heap.used() <= 16 * MIB);
    let small = dbs[2].execute("SELECT 1 + 1".into(), vec![]).await.unwrap();
    assert_eq!(small.rows[0].values, [Value::Integer(2)]);
    // Another instance has a budget of its own.
    let other = budget_of_a_fresh_instance(&context);
    assert!(fill(&other, 6).await.is_ok());
    // Closed, the databases give their memory back.
    drop(dbs);
    assert!(
        budget.sqlite_heap.used() < MIB,
        "{}",
        budget.sqlite_heap.used()
    );
}

fn budget_of_a_fresh_instance(context: &ComponentContext) -> Connection {
    context
        .open_database("default", &budget(small_heap(16 * MIB)))
        .unwrap()
}

/// Temporary tables live in SQLite's heap, counted by the budget, and a
/// component cannot move them back to files (`/tmp`, uncounted).
#[tokio::test]
async fn temporary_storage_is_charged_and_cannot_be_moved_to_files() {
    let context = context();
    let db = context
        .open_database("default", &budget(small_heap(8 * MIB)))
        .unwrap();
    let store = db
        .execute("PRAGMA temp_store".into(), vec![])
        .await
        .unwrap();
    assert_eq!(store.rows[0].values, [Value::Integer(2)], "MEMORY");
    for statement in [
        "PRAGMA temp_store = FILE",
        "PRAGMA temp_store = 1",
        "SELECT * FROM pragma_temp_store(1)",
    ] {
        let outcome = db.execute(statement.into(), vec![]).await;
        assert!(outcome.is_err(), "{statement}: {outcome:?}");
    }
    db.execute("CREATE TEMP TABLE tt(b)".into(), vec![])
        .await
        .unwrap();
    let outcome = db
        .execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 16) \
             INSERT INTO temp.tt SELECT randomblob(1048576) FROM n"
                .into(),
            vec![],
        )
        .await;
    assert!(out_of_memory(&outcome), "{outcome:?}");
}

/// Past `--max-sqlite-connections`, `open` is an `io` error naming it; a
/// connection dropped gives its place back.
#[tokio::test]
async fn connections_past_the_cap_are_refused_until_one_is_closed() {
    let context = context();
    let budget = budget(BudgetLimits {
        sqlite_connections: 2,
        ..BudgetLimits::default()
    });
    let first = context.open_database("default", &budget).unwrap();
    let _second = context.open_database("default", &budget).unwrap();
    let refused = context.open_database("default", &budget).err();
    assert!(
        matches!(&refused, Some(SqliteError::Io(m)) if m.contains("--max-sqlite-connections")),
        "{refused:?}"
    );
    drop(first);
    assert!(context.open_database("default", &budget).is_ok());
}

/// The rows the host holds for an instance count while they are read: a
/// result past `--max-held-memory` stops there; a statement past it is
/// refused before it runs.
#[tokio::test]
async fn results_and_statements_past_what_the_host_holds_are_refused() {
    let context = context();
    let budget = budget(BudgetLimits {
        held_bytes: MIB,
        ..BudgetLimits::default()
    });
    let db = context.open_database("default", &budget).unwrap();
    let large = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 64) \
                 SELECT randomblob(65536) FROM n";
    let outcome = db.execute(large.into(), vec![]).await;
    assert!(
        matches!(&outcome, Err(SqliteError::Io(m)) if m.contains("--max-held-memory")),
        "{outcome:?}"
    );
    let statement = format!("SELECT '{}'", "x".repeat(2 * MIB));
    let outcome = db.execute(statement, vec![]).await;
    assert!(
        matches!(&outcome, Err(SqliteError::Io(m)) if m.contains("--max-held-memory")),
        "{outcome:?}"
    );
    let small = db.execute("SELECT 1".into(), vec![]).await.unwrap();
    assert_eq!(small.rows.len(), 1);
    drop(db);
    assert_eq!(budget_held(&budget), 0);
}

fn budget_held(budget: &InstanceBudget) -> usize {
    budget.hold(0).map(|share| share.quota().used()).unwrap()
}
