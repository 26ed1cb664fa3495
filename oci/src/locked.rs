//! Spin's locked app (`spin.lock`): the fully resolved application that a
//! registry artifact carries, as spinframework/spin v4.0.2 writes and reads it
//! (`crates/locked-app/src/locked.rs`, `values.rs`; `spin-serde`'s base64 and
//! backward-compatible version). Content is named by reference: a `source`
//! URL, `inline` bytes (base64, no padding) or a `digest` (`sha256:<hex>`).
//!
//! Keys Spin does not define are ignored on read, as Spin ignores them; the
//! application's and components' `metadata` stay open maps, as in Spin.

use anyhow::{Result, bail};
use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The newest `spin_lock_version` Spin 4.0.2 reads (it writes 0 unless the
/// app has host requirements).
const NEWEST_VERSION: u32 = 1;

/// The host requirement of `*.spin.internal` service chaining (Spin 4.0).
pub const SERVICE_CHAINING: &str = "local_service_chaining";
/// The host requirement of HTTP middleware (Spin 4.1).
pub const MIDDLEWARE: &str = "middleware";
/// The host requirements Spin 4.1 to 4.3 know, which spinbench meets.
const KNOWN_REQUIREMENTS: &[&str] = &[SERVICE_CHAINING, MIDDLEWARE];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LockedApp {
    pub spin_lock_version: u32,
    /// Fields the host must process if present (`host_requirements`,
    /// `component_host_requirements`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub must_understand: Vec<String>,
    /// `name`, `version`, `description`, `authors`, `triggers` (each trigger
    /// type's application settings), `trigger` (the same, for a single type,
    /// with its `type`), `origin`.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub host_requirements: Map<String, Value>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, Variable>,
    pub triggers: Vec<LockedTrigger>,
    pub components: Vec<LockedComponent>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LockedComponent {
    pub id: String,
    /// `description`, `allowed_outbound_hosts`, `key_value_stores`,
    /// `databases`, `ai_models`, `build`.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    pub source: LockedSource,
    /// The environment (`wasi:cli/environment`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Files, each at `path` below the guest's `/`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ContentPath>,
    /// Component variables (the manifest's `variables` table).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config: BTreeMap<String, String>,
    /// Dependencies left uncomposed (`spin registry push --compose=false`),
    /// by dependency name; composed when the app is served.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dependencies: BTreeMap<String, LockedDependency>,
    /// Its trigger's dependencies (`middleware`: outermost first), moved
    /// from the trigger as Spin 4.1 moves them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub trigger_dependencies: BTreeMap<String, Vec<LockedDependency>>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub host_requirements: Map<String, Value>,
}

/// Spin's `LockedComponentDependency`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LockedDependency {
    pub source: LockedSource,
    /// The export satisfying the import, if not the import's own name.
    #[serde(default)]
    pub export: Option<String>,
    #[serde(default, skip_serializing_if = "LockedInherit::is_none")]
    pub inherit: LockedInherit,
}

/// Spin's `InheritConfiguration`: every grant, or the capability sets named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum LockedInherit {
    All,
    Some(Vec<String>),
}

impl Default for LockedInherit {
    fn default() -> Self {
        LockedInherit::Some(Vec::new())
    }
}

impl LockedInherit {
    fn is_none(&self) -> bool {
        *self == LockedInherit::Some(Vec::new())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LockedSource {
    /// `application/wasm`.
    pub content_type: String,
    #[serde(flatten)]
    pub content: ContentRef,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContentPath {
    #[serde(flatten)]
    pub content: ContentRef,
    /// Where the guest finds it, relative to `/`.
    pub path: String,
}

/// Content by URL, inline, or digest: at least one of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContentRef {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "base64_out",
        deserialize_with = "base64_in"
    )]
    pub inline: Option<Vec<u8>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LockedTrigger {
    pub id: String,
    pub trigger_type: String,
    /// The trigger's table: `route`, `component` (an id), `executor`, ...
    pub trigger_config: Value,
    /// Dependencies left on the trigger (Spin moves them to its component;
    /// one left here is refused rather than dropped: `unlock`).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub trigger_dependencies: Map<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variable {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Absent: the variable is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secret: bool,
}

impl LockedApp {
    /// Reads a locked app as Spin 4.1 reads one: a version above 1, or a
    /// host requirement other than service chaining and middleware, is an error.
    pub fn from_json(bytes: &[u8]) -> Result<Self> {
        let app: LockedApp = serde_json::from_slice(bytes)?;
        if app.spin_lock_version > NEWEST_VERSION {
            bail!(
                "spin_lock_version {} is newer than this reader ({NEWEST_VERSION})",
                app.spin_lock_version
            );
        }
        for key in app.host_requirements.keys().chain(
            app.components
                .iter()
                .flat_map(|c| c.host_requirements.keys()),
        ) {
            if !KNOWN_REQUIREMENTS.contains(&key.as_str()) {
                bail!("the app requires the host feature {key:?}, which Spin 4.3 does not know");
            }
        }
        Ok(app)
    }

    /// The app Spin runs for an artifact that is one wasm and no locked app
    /// (what `wkg oci push` writes): the one-component manifest of
    /// spinframework/spin 94a8fc8a `crates/loader/src/lib.rs` `from_wasm_file`
    /// (named for the wasm's file, which Spin keeps by digest; every path to
    /// its only component, `/...`, and nothing granted), normalized as Spin
    /// normalizes an inline component (`inline-component1`).
    pub fn for_wasm_package(digest: &str) -> Self {
        let id = "inline-component1";
        let mut metadata = Map::new();
        metadata.insert("name".into(), digest.into());
        Self {
            spin_lock_version: 0,
            must_understand: Vec::new(),
            metadata,
            host_requirements: Map::new(),
            variables: BTreeMap::new(),
            triggers: vec![LockedTrigger {
                id: format!("{id}-http-trigger"),
                trigger_type: "http".into(),
                trigger_config: serde_json::json!({ "component": id, "route": "/..." }),
                trigger_dependencies: Map::new(),
            }],
            components: vec![LockedComponent {
                id: id.into(),
                metadata: Map::new(),
                source: LockedSource {
                    content_type: "application/wasm".into(),
                    content: ContentRef {
                        digest: Some(digest.into()),
                        ..ContentRef::default()
                    },
                },
                env: BTreeMap::new(),
                files: Vec::new(),
                config: BTreeMap::new(),
                dependencies: BTreeMap::new(),
                trigger_dependencies: BTreeMap::new(),
                host_requirements: Map::new(),
            }],
        }
    }

    /// As Spin serializes it: version 0 without host requirements, else 1.
    pub fn to_json(&self) -> Result<Vec<u8>> {
        let mut app = self.clone();
        app.spin_lock_version =
            u32::from(!(app.must_understand.is_empty() && app.host_requirements.is_empty()));
        Ok(serde_json::to_vec(&app)?)
    }

    /// A string of the application's metadata (`name`, `version`, ...).
    pub fn metadata_str(&self, key: &str) -> Option<&str> {
        self.metadata.get(key).and_then(Value::as_str)
    }
}

impl LockedComponent {
    /// A string list of the component's metadata (`allowed_outbound_hosts`, ...).
    pub fn metadata_list(&self, key: &str) -> Vec<String> {
        self.metadata
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    }

    /// Whether the component (or, `required` given, the app) needs a host
    /// requirement to be met.
    pub fn requires(&self, key: &str) -> bool {
        requirement_is_required(&self.host_requirements, key)
    }
}

/// `required` (not `optional`, which Spin drops on read).
pub fn requirement_is_required(requirements: &Map<String, Value>, key: &str) -> bool {
    requirements
        .get(key)
        .is_some_and(|value| value.as_str() != Some("optional"))
}

/// Spin's base64 for inline content: standard alphabet, written without
/// padding; read with or without it.
fn base64_engine() -> base64::engine::GeneralPurpose {
    let config = base64::engine::GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent);
    base64::engine::GeneralPurpose::new(&base64::alphabet::STANDARD, config)
}

#[allow(clippy::ref_option, reason = "serde's serialize_with passes &Option")]
fn base64_out<S: Serializer>(bytes: &Option<Vec<u8>>, serializer: S) -> Result<S::Ok, S::Error> {
    match bytes {
        Some(bytes) => serializer.serialize_str(&base64_engine().encode(bytes)),
        None => serializer.serialize_none(),
    }
}

fn base64_in<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Vec<u8>>, D::Error> {
    Option::<String>::deserialize(deserializer)?
        .map(|text| {
            base64_engine()
                .decode(text)
                .map_err(serde::de::Error::custom)
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_content_is_base64_without_padding_and_read_with_or_without_it() {
        let content = ContentRef {
            inline: Some(b"hi".to_vec()),
            digest: Some("sha256:x".into()),
            ..ContentRef::default()
        };
        let json = serde_json::to_value(&content).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"inline": "aGk", "digest": "sha256:x"})
        );
        let padded: ContentRef = serde_json::from_str(r#"{"inline": "aGk="}"#).unwrap();
        assert_eq!(padded.inline.as_deref(), Some(&b"hi"[..]));
    }

    #[test]
    fn the_version_is_0_without_host_requirements_and_1_with_them() {
        let mut app: LockedApp =
            serde_json::from_str(r#"{"spin_lock_version": 1, "triggers": [], "components": []}"#)
                .unwrap();
        let json: Value = serde_json::from_slice(&app.to_json().unwrap()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"spin_lock_version": 0, "triggers": [], "components": []})
        );
        app.must_understand.push("host_requirements".into());
        app.host_requirements
            .insert(SERVICE_CHAINING.into(), "required".into());
        let json: Value = serde_json::from_slice(&app.to_json().unwrap()).unwrap();
        assert_eq!(json["spin_lock_version"], 1);
    }

    #[test]
    fn newer_versions_and_unknown_host_requirements_are_refused() {
        let newer = br#"{"spin_lock_version": 2, "triggers": [], "components": []}"#;
        assert!(
            LockedApp::from_json(newer)
                .unwrap_err()
                .to_string()
                .contains("newer")
        );
        let unknown = br#"{"spin_lock_version": 1, "host_requirements": {"gpu": "required"},
            "triggers": [], "components": []}"#;
        assert!(
            LockedApp::from_json(unknown)
                .unwrap_err()
                .to_string()
                .contains("\"gpu\"")
        );
    }
}
