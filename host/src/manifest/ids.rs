//! Names an app gives its parts, checked as Spin checks them
//! (spinframework/spin v4.0.2, `crates/serde/src/id.rs`, the `Id<DELIM,
//! LOWER>` type behind `KebabId`, `SnakeId` and `LowerSnakeId`, and
//! `crates/manifest/src/schema/v2.rs`, which applies them): a component id
//! and the id a trigger names are kebab-case, a key-value store or SQLite
//! database label either kebab- or snake_case (variable names are checked by
//! `variables`).
//! Spin gives `ai_models` no rule; a model name is looked up as a directory
//! (Spin's local engine joins it to its model registry), so here it must be
//! one plain path segment ([`model_name`]).
//!
//! The same rules apply to a manifest on disk and to a locked app from a
//! registry (`spinbench_oci::unlock`), which Spin does not check again. None
//! of these names is ever made a host path: where one would be, an index or a
//! digest is used instead.

use anyhow::{Result, bail};

/// What a name is, for messages and for its rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    /// `[component.<id>]` and a trigger's `component`: Spin's `KebabId`.
    Component,
    /// `key_value_stores`, `sqlite_databases`: `KebabId` or `SnakeId`.
    Label,
}

impl IdKind {
    fn describe(self) -> &'static str {
        match self {
            IdKind::Component => "component id",
            IdKind::Label => "store label",
        }
    }
}

/// Checks `id` by the rule of `kind`; the error names it and says why.
pub fn check(kind: IdKind, id: &str) -> Result<()> {
    let verdict = match kind {
        IdKind::Component => spin_id(id, '-'),
        IdKind::Label => spin_id(id, '-').or_else(|kebab| {
            spin_id(id, '_').map_err(|_| format!("{kebab}; nor is it snake_case"))
        }),
    };
    match verdict {
        Ok(()) => Ok(()),
        Err(why) => bail!("{} {id:?} is not valid: {why}", kind.describe()),
    }
}

/// Spin's `Id<DELIM, false>::try_from`: words of ASCII letters and digits,
/// each starting with a letter, all lower- or all upper-case, separated by
/// `delim`.
fn spin_id(id: &str, delim: char) -> Result<(), String> {
    if id.is_empty() {
        return Err("empty".into());
    }
    let wrong = if delim == '-' { '_' } else { '-' };
    if id.contains(wrong) {
        return Err(format!(
            "words must be separated with {delim:?}, not {wrong:?}"
        ));
    }
    for word in id.split(delim) {
        let mut chars = word.chars();
        let Some(first) = chars.next() else {
            return Err(format!("{delim:?}-separated words must not be empty"));
        };
        if !first.is_ascii_alphabetic() {
            return Err(format!(
                "{delim:?}-separated words must start with an ASCII letter; got {first:?}"
            ));
        }
        let upper = first.is_ascii_uppercase();
        for ch in chars {
            if ch.is_ascii_digit() {
                continue;
            }
            if !ch.is_ascii_alphanumeric() {
                return Err(format!(
                    "{delim:?}-separated words may only contain alphanumeric ASCII; got {ch:?}"
                ));
            }
            if ch.is_ascii_uppercase() != upper {
                return Err(format!(
                    "{delim:?}-separated words must be all lowercase or all UPPERCASE; got {word:?}"
                ));
            }
        }
    }
    Ok(())
}

/// An `ai_models` name: one plain path segment (no `/`, `\`, NUL, not `.` or
/// `..`, not empty, at most 255 bytes), since the model is looked up as a
/// directory of that name.
pub fn model_name(name: &str) -> Result<()> {
    let plain = !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0']);
    if !plain {
        bail!("ai model {name:?} is not valid: a model is named by one plain path segment");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn component_ids_follow_spins_kebab_rule() {
        for id in ["hello", "hello-world", "a1-b2", "HELLO-world", "x"] {
            check(IdKind::Component, id).unwrap();
        }
        for (id, why) in [
            ("", "empty"),
            ("bad_id", "not '_'"),
            ("1-2-3", "start with an ASCII letter"),
            ("a--b", "must not be empty"),
            ("-a", "must not be empty"),
            ("hello.world", "alphanumeric"),
            ("../x", "start with an ASCII letter"),
            ("/etc", "start with an ASCII letter"),
            ("a/b", "alphanumeric"),
            ("Hello", "all lowercase or all UPPERCASE"),
            ("h\u{e9}llo", "alphanumeric"),
        ] {
            let error = check(IdKind::Component, id).unwrap_err().to_string();
            assert!(error.contains(why), "{id:?}: {error}");
            assert!(error.contains("component id"), "{error}");
        }
    }

    #[test]
    fn labels_are_kebab_or_snake() {
        for label in ["default", "my-store", "my_store", "MY_STORE"] {
            check(IdKind::Label, label).unwrap();
        }
        for label in ["my-store_2", "../db", "", "a b"] {
            assert!(check(IdKind::Label, label).is_err(), "{label:?}");
        }
    }

    #[test]
    fn a_model_name_is_one_plain_segment() {
        for name in ["llama2-chat", "all-minilm-l6-v2", "codellama.instruct"] {
            model_name(name).unwrap();
        }
        for name in ["", ".", "..", "../../etc", "a/b", "/abs", "a\\b", "a\0b"] {
            assert!(model_name(name).is_err(), "{name:?}");
        }
    }
}
