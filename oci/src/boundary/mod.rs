//! The one boundary everything an app brings crosses before it touches the
//! host's disk or memory: the manifest and layers a registry sends, the
//! locked app, each name in it that could become a path.
//!
//! - [`limits`]: what an operator lets a pull hold: the manifest and the
//!   locked app (parsed whole, so capped), each layer (read only up to its
//!   descriptor's size, hashed as it streams), an archive's files and all it
//!   inflates, everything a pull writes, and its deadline;
//! - [`names`]: the locked app's names checked as Spin checks a manifest's
//!   (component ids, the ids triggers name, store labels, model names), its
//!   file paths as plain relative paths, its digests as digests;
//! - [`app_dir`]: the one writer of an app directory, beneath its root with
//!   descriptor-relative, no-follow, create-new calls (`cap-std`), naming
//!   nothing by an id: wasm by digest, each component's files by its index.
//!   Even a name the checks above missed cannot lead it out.

pub mod app_dir;
pub mod limits;
pub mod names;

pub use app_dir::AppDir;
pub use limits::{Budget, PullLimits};
pub use names::RelativePath;
