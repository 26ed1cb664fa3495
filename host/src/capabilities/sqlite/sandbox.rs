//! What a component's SQL may do on a connection, set with SQLite's own
//! mechanisms when the connection opens, never by reading the SQL text:
//!
//! - the **authorizer** (consulted by SQLite's parser for every action it
//!   compiles): `ATTACH` is allowed only of a temporary (`''`) or in-memory
//!   (`':memory:'`) database unless the runtime config grants
//!   `allow_attach_file`; an `ATTACH` whose name is an expression, a bound
//!   parameter or a function's result reaches the authorizer without a name
//!   (SQLite passes a name only for a string literal) and is refused the same
//!   way, as is the `ATTACH` that `VACUUM INTO` runs. The functions
//!   `load_extension` and `fts3_tokenizer` (a pointer-revealing and
//!   memory-corrupting primitive) are refused, and so are the pragmas whose
//!   setting is the whole process's rather than the connection's.
//! - **db config**: defensive mode (no `writable_schema`, no writes to shadow
//!   tables or `sqlite_dbpage`), untrusted schema, the FTS3 tokenizer and
//!   extension loading off.
//! - **limits**: no value or statement longer than a query result may be
//!   ([`MAX_RESULT_BYTES`]), and no helper threads.
//! - **temporary storage in memory**: temporary tables and indices, `ATTACH
//!   ''` databases and sorts that would spill are kept in SQLite's heap
//!   (`temp_store = MEMORY`), which the instance's heap budget counts, and
//!   setting `temp_store` is refused. On SQLite's default (files in `/tmp`,
//!   deleted as soon as opened) they were neither counted nor bounded, and
//!   `/tmp` is memory wherever it is a tmpfs.
//!
//! Spin 4.0.2 (`crates/sqlite-inproc`) refuses `ATTACH` of a literal file name
//! only; everything else here is stricter than Spin (docs/security.md).

use super::MAX_RESULT_BYTES;
use rusqlite::Connection;
use rusqlite::config::DbConfig;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;

/// Whether `ATTACH` may open files (Spin's `allow_attach_file`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attach {
    /// Only temporary and in-memory databases.
    MemoryOnly,
    /// Any file the host can open: granted by the runtime config.
    Files,
}

/// SQL functions no component may call.
const REFUSED_FUNCTIONS: &[&str] = &["load_extension", "fts3_tokenizer"];

/// Pragmas that set something for the whole process (every connection of
/// every component), or where SQLite writes its temporary files.
const REFUSED_PRAGMAS: &[&str] = &[
    "hard_heap_limit",
    "soft_heap_limit",
    "temp_store_directory",
    "data_store_directory",
];

/// Pragmas a component may read but not set: the connection's are chosen here.
const FIXED_PRAGMAS: &[&str] = &["temp_store"];

/// The SQLite limits every connection gets, beside SQLite's defaults.
fn limits() -> [(Limit, i32); 3] {
    let result = i32::try_from(MAX_RESULT_BYTES).expect("the result limit fits SQLite's int");
    [
        (Limit::SQLITE_LIMIT_LENGTH, result),
        (Limit::SQLITE_LIMIT_SQL_LENGTH, result),
        (Limit::SQLITE_LIMIT_WORKER_THREADS, 0),
    ]
}

/// Database configuration every connection gets.
const DB_CONFIG: &[(DbConfig, bool)] = &[
    (DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true),
    (DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false),
    (DbConfig::SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, false),
];

/// Confines a freshly opened connection before any component SQL runs on it.
pub fn confine(connection: &Connection, attach: Attach) -> rusqlite::Result<()> {
    for &(setting, on) in DB_CONFIG {
        connection.set_db_config(setting, on)?;
    }
    for (limit, value) in limits() {
        connection.set_limit(limit, value)?;
    }
    connection.pragma_update(None, "temp_store", "MEMORY")?;
    connection.authorizer(Some(move |context: AuthContext<'_>| {
        authorize(&context, attach)
    }))
}

fn authorize(context: &AuthContext<'_>, attach: Attach) -> Authorization {
    let allowed = match context.action {
        AuthAction::Attach { filename } => {
            attach == Attach::Files || matches!(filename, "" | ":memory:")
        }
        // No literal name: an expression, parameter or function result.
        AuthAction::Unknown {
            code: rusqlite::ffi::SQLITE_ATTACH,
            ..
        } => attach == Attach::Files,
        AuthAction::Function { function_name } => !REFUSED_FUNCTIONS
            .iter()
            .any(|refused| function_name.eq_ignore_ascii_case(refused)),
        AuthAction::Pragma {
            pragma_name,
            pragma_value,
        } => {
            let named = |list: &[&str]| list.iter().any(|p| pragma_name.eq_ignore_ascii_case(p));
            let sets_a_fixed_one = pragma_value.is_some() && named(FIXED_PRAGMAS);
            !(named(REFUSED_PRAGMAS) || sets_a_fixed_one)
        }
        _ => true,
    };
    if allowed {
        Authorization::Allow
    } else {
        Authorization::Deny
    }
}
