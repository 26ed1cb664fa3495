//! Component dependencies, as Spin's manifest writes them
//! (spinframework/spin main at 94a8fc8a, `crates/manifest/src/schema/v2.rs`:
//! `ComponentDependency`, `TriggerDependency`, `InheritConfiguration`;
//! `crates/manifest/src/normalize.rs`): what a `[component.x.dependencies]`
//! entry, or an HTTP trigger's `dependencies.middleware` entry, names, and
//! what of its parent's grants it inherits. `instance::compose` composes them.

use anyhow::{Result, bail};
use serde::Deserialize;

/// `"a:b/c@1.0.0" = ...` in `[component.x.dependencies]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum Dependency {
    /// `= ">= 0.1.0"`: a package of the default registry.
    Version(String),
    /// `= { version = "0.1.0", registry = "...", package = "..." }`.
    Package {
        version: String,
        registry: Option<String>,
        package: Option<String>,
        export: Option<String>,
        inherit_configuration: Option<Inherit>,
    },
    /// `= { path = "dep.wasm" }`, relative to the manifest's directory.
    Local {
        path: String,
        export: Option<String>,
        inherit_configuration: Option<Inherit>,
    },
    /// `= { url = "https://...", digest = "sha256:..." }`.
    Http {
        url: String,
        digest: String,
        export: Option<String>,
        inherit_configuration: Option<Inherit>,
    },
    /// `= { component = "id" }`: that component's source.
    AppComponent {
        component: String,
        export: Option<String>,
        inherit_configuration: Option<Inherit>,
    },
}

/// One entry of a trigger's `dependencies.<kind>` list (the HTTP trigger's
/// only kind is `middleware`): like a [`Dependency`], without `export`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum TriggerDependency {
    Package {
        version: String,
        registry: Option<String>,
        package: String,
        inherit_configuration: Option<Inherit>,
    },
    Local {
        path: String,
        inherit_configuration: Option<Inherit>,
    },
    Http {
        url: String,
        digest: String,
        inherit_configuration: Option<Inherit>,
    },
    AppComponent {
        component: String,
        inherit_configuration: Option<Inherit>,
    },
}

/// `inherit_configuration = true | false | ["allowed_outbound_hosts", ...]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Inherit {
    All(bool),
    Some(Vec<String>),
}

/// What of its parent's grants a composed component may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inherited {
    All,
    /// These capability sets (`allowed_outbound_hosts`, `key_value_stores`,
    /// ...); none when empty.
    Some(Vec<String>),
}

impl Inherited {
    /// Spin's `locked_inherit`: `true` is all, a list is those, `false` or
    /// nothing is none; the component's `dependencies_inherit_configuration
    /// = true` stands for `true` on each.
    pub fn of(inherit: Option<&Inherit>, component_level: Option<bool>) -> Self {
        match (inherit, component_level) {
            (Some(Inherit::All(true)), _) | (None, Some(true)) => Inherited::All,
            (Some(Inherit::Some(keys)), _) => Inherited::Some(keys.clone()),
            (Some(Inherit::All(false)) | None, _) => Inherited::Some(Vec::new()),
        }
    }
}

impl Dependency {
    pub fn inherit_configuration(&self) -> Option<&Inherit> {
        match self {
            Dependency::Version(_) => None,
            Dependency::Package {
                inherit_configuration,
                ..
            }
            | Dependency::Local {
                inherit_configuration,
                ..
            }
            | Dependency::Http {
                inherit_configuration,
                ..
            }
            | Dependency::AppComponent {
                inherit_configuration,
                ..
            } => inherit_configuration.as_ref(),
        }
    }

    /// The export named to satisfy the import, if not the import's own name.
    pub fn export(&self) -> Option<&str> {
        match self {
            Dependency::Version(_) => None,
            Dependency::Package { export, .. }
            | Dependency::Local { export, .. }
            | Dependency::Http { export, .. }
            | Dependency::AppComponent { export, .. } => export.as_deref(),
        }
    }
}

impl TriggerDependency {
    /// The same source as a component's dependency.
    pub fn as_dependency(&self) -> Dependency {
        match self.clone() {
            TriggerDependency::Package {
                version,
                registry,
                package,
                inherit_configuration,
            } => Dependency::Package {
                version,
                registry,
                package: Some(package),
                export: None,
                inherit_configuration,
            },
            TriggerDependency::Local {
                path,
                inherit_configuration,
            } => Dependency::Local {
                path,
                export: None,
                inherit_configuration,
            },
            TriggerDependency::Http {
                url,
                digest,
                inherit_configuration,
            } => Dependency::Http {
                url,
                digest,
                export: None,
                inherit_configuration,
            },
            TriggerDependency::AppComponent {
                component,
                inherit_configuration,
            } => Dependency::AppComponent {
                component,
                export: None,
                inherit_configuration,
            },
        }
    }
}

/// A dependency's name: a plain kebab name, or a package with an optional
/// interface and version (`a:b`, `a:b/c`, `a:b@1.0.0`, `a:b/c@1.0.0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DependencyName {
    Plain(String),
    Package {
        package: String,
        interface: Option<String>,
        version: Option<semver::Version>,
    },
}

impl DependencyName {
    pub fn parse(name: &str) -> Result<Self> {
        if !name.contains(':') {
            if name.is_empty() || name.contains(['/', '@']) {
                bail!("dependency name {name:?} is neither a kebab-case name nor a package name");
            }
            return Ok(DependencyName::Plain(name.to_string()));
        }
        let (path, version) = match name.split_once('@') {
            Some((path, version)) => (
                path,
                Some(semver::Version::parse(version).map_err(|e| {
                    anyhow::anyhow!("dependency name {name:?}: version {version:?}: {e}")
                })?),
            ),
            None => (name, None),
        };
        let (package, interface) = match path.split_once('/') {
            Some((package, interface)) => (package, Some(interface.to_string())),
            None => (path, None),
        };
        Ok(DependencyName::Package {
            package: package.to_string(),
            interface,
            version,
        })
    }

    /// Spin's `matches_import`: whether an import of this name satisfies
    /// `import` (`pkg:name/interface@version`, or a plain name).
    pub fn matches_import(&self, import: &str) -> bool {
        match self {
            DependencyName::Plain(name) => name == import,
            DependencyName::Package {
                package,
                interface,
                version,
            } => {
                let Some((path, import_version)) = split_version(import) else {
                    return false;
                };
                let Some((import_package, import_interface)) = path.split_once('/') else {
                    return false;
                };
                import_package == package
                    && interface.as_deref().is_none_or(|i| i == import_interface)
                    && version
                        .as_ref()
                        .is_none_or(|v| import_version.as_ref() == Some(v))
            }
        }
    }
}

/// `a:b/c@1.0.0` as `(a:b/c, Some(1.0.0))`; `None` for a plain name or a bad version.
fn split_version(import: &str) -> Option<(&str, Option<semver::Version>)> {
    if !import.contains(':') {
        return None;
    }
    match import.split_once('@') {
        Some((path, version)) => Some((path, Some(semver::Version::parse(version).ok()?))),
        None => Some((import, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_imports_as_spins_do() {
        for (name, imports) in [
            ("foo:bar/baz@0.1.0", &["foo:bar/baz@0.1.0"][..]),
            ("foo:bar/baz", &["foo:bar/baz@0.1.0", "foo:bar/baz"]),
            ("foo:bar", &["foo:bar/baz@0.1.0", "foo:bar/baz"]),
            ("foo:bar@0.1.0", &["foo:bar/baz@0.1.0"]),
            ("foo-bar", &["foo-bar"]),
        ] {
            let name = DependencyName::parse(name).unwrap();
            for import in imports {
                assert!(name.matches_import(import), "{name:?} {import}");
            }
        }
        for (name, imports) in [
            ("foo:bar/baz@0.1.0", &["foo:bar/baz"][..]),
            ("foo:bar/baz", &["foo:bar/bub", "foo:bar/bub@0.1.0"]),
            ("foo:bar", &["foo:bub/bib"]),
            ("foo:bar@0.1.0", &["foo:bar/baz"]),
            ("foo:bar/baz", &["foo:bar/baz-bub", "foo-bar"]),
        ] {
            let name = DependencyName::parse(name).unwrap();
            for import in imports {
                assert!(!name.matches_import(import), "{name:?} {import}");
            }
        }
    }

    #[test]
    fn inheritance_is_none_unless_asked_for() {
        assert_eq!(Inherited::of(None, None), Inherited::Some(vec![]));
        assert_eq!(
            Inherited::of(Some(&Inherit::All(false)), None),
            Inherited::Some(vec![])
        );
        assert_eq!(
            Inherited::of(Some(&Inherit::All(true)), None),
            Inherited::All
        );
        assert_eq!(Inherited::of(None, Some(true)), Inherited::All);
        let some = Inherit::Some(vec!["variables".into()]);
        assert_eq!(
            Inherited::of(Some(&some), None),
            Inherited::Some(vec!["variables".into()])
        );
    }

    #[test]
    fn every_form_parses() {
        let table: std::collections::BTreeMap<String, Dependency> = toml::from_str(
            r#"
            "a:b/c" = "1.0.0"
            "a:b/d" = { version = "1.0.0", registry = "r.io" }
            "a:b/e" = { path = "e.wasm", export = "a:b/x" }
            "a:b/f" = { url = "https://example.com/f.wasm", digest = "sha256:00" }
            "a:b/g" = { component = "g", inherit_configuration = ["variables"] }
            "#,
        )
        .unwrap();
        assert!(matches!(table["a:b/c"], Dependency::Version(_)));
        assert!(matches!(table["a:b/d"], Dependency::Package { .. }));
        assert_eq!(table["a:b/e"].export(), Some("a:b/x"));
        assert!(matches!(table["a:b/f"], Dependency::Http { .. }));
        assert!(matches!(table["a:b/g"], Dependency::AppComponent { .. }));
        assert!(
            toml::from_str::<std::collections::BTreeMap<String, Dependency>>(
                "\"x\" = { path = \"e\", typo = 1 }"
            )
            .is_err()
        );
    }
}
