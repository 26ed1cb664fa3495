use super::*;
use wit_parser::Resolve;

const GREET: &str =
    "package test:greet@0.1.0;\ninterface greeter { greet: func(name: string) -> string; }\n";
const ENVIRONMENT: &str = "package wasi:cli@0.2.0;\ninterface environment { get-environment: func() -> list<tuple<string, string>>; }\n";

/// A component of a world importing `imports` and exporting `exports`.
fn component(imports: &[&str], exports: &[&str]) -> Vec<u8> {
    let mut resolve = Resolve::default();
    resolve.push_str("greet.wit", GREET).unwrap();
    resolve.push_str("cli.wit", ENVIRONMENT).unwrap();
    let body: String = imports
        .iter()
        .map(|name| format!("import {name};\n"))
        .chain(exports.iter().map(|name| format!("export {name};\n")))
        .collect();
    let app = resolve
        .push_str(
            "app.wit",
            &format!("package test:app;\nworld app {{\n{body}}}\n"),
        )
        .unwrap();
    let world = resolve.select_world(&[app], Some("app")).unwrap();
    let module = crate::capabilities::test_support::module_for(&resolve, world);
    prepare::componentized(&module).unwrap().into_owned()
}

fn primary() -> Vec<u8> {
    component(
        &["test:greet/greeter@0.1.0", "wasi:cli/environment@0.2.0"],
        &[],
    )
}

fn greeter() -> Vec<u8> {
    component(
        &["wasi:cli/environment@0.2.0"],
        &["test:greet/greeter@0.1.0"],
    )
}

fn resolved(name: &str, inherited: &Inherited) -> Resolved {
    Resolved {
        name: name.into(),
        bytes: deny(&greeter(), inherited).unwrap(),
        export: None,
    }
}

/// Its imports, without their versions (componentizing with the WASI
/// adapter moves WASI's to the adapter's 0.2.x).
fn imports(wasm: &[u8]) -> Vec<String> {
    let mut names: Vec<String> = prepare::imports_of(wasm)
        .unwrap()
        .into_iter()
        .map(|name| name.split('@').next().unwrap().to_string())
        .collect();
    names.sort();
    names
}

#[test]
fn a_dependency_satisfies_the_import_its_name_matches() {
    for name in [
        "test:greet/greeter@0.1.0",
        "test:greet/greeter",
        "test:greet",
    ] {
        let composed = compose(
            &primary(),
            "app",
            &[resolved(name, &Inherited::Some(vec![]))],
        )
        .unwrap();
        // The greeter import is gone; the dependency's own environment is
        // out of reach, the primary's is not.
        assert_eq!(
            imports(&composed),
            [
                "spinbench-denied:wasi-cli/environment",
                "wasi:cli/environment"
            ],
            "{name}"
        );
    }
}

#[test]
fn a_dependency_that_inherits_shares_its_parents_grants() {
    for inherited in [Inherited::All, Inherited::Some(vec!["environment".into()])] {
        let composed = compose(
            &primary(),
            "app",
            &[resolved("test:greet/greeter", &inherited)],
        )
        .unwrap();
        assert_eq!(imports(&composed), ["wasi:cli/environment"]);
    }
    // Another set does not reach this one.
    let other = Inherited::Some(vec!["variables".into()]);
    assert!(is_denied(&imports(&deny(&greeter(), &other).unwrap())[0]));
}

#[test]
fn unmatched_conflicting_and_missing_exports_are_refused_in_spins_words() {
    let error = compose(
        &primary(),
        "app",
        &[resolved("other:pkg/x", &Inherited::All)],
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        error,
        "dependency 'other:pkg/x' doesn't match any imports of component 'app'"
    );
    let error = compose(
        &primary(),
        "app",
        &[
            resolved("test:greet", &Inherited::All),
            resolved("test:greet/greeter", &Inherited::All),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("has dependency conflicts: import 'test:greet/greeter@0.1.0'"),
        "{error}"
    );
    let mut wrong = resolved("test:greet", &Inherited::All);
    wrong.export = Some("test:greet/other@0.1.0".into());
    let error = compose(&primary(), "app", &[wrong])
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("doesn't export 'test:greet/other@0.1.0'"),
        "{error}"
    );
}

#[test]
fn only_capability_imports_are_denied() {
    assert_eq!(
        capability_set("wasi:cli/environment@0.2.6"),
        Some("environment")
    );
    assert_eq!(
        capability_set("fermyon:spin/key-value@2.0.0"),
        Some("key_value_stores")
    );
    assert_eq!(capability_set("fermyon:spin/config"), Some("variables"));
    assert_eq!(
        capability_set("wasi:http/outgoing-handler@0.2.0"),
        Some("allowed_outbound_hosts")
    );
    assert_eq!(capability_set("wasi:cli/stdout@0.2.6"), None);
    assert_eq!(capability_set("wasi:http/types@0.2.6"), None);
    assert!(is_denied("spinbench-denied:wasi-cli/environment@0.2.0"));
    assert!(!is_denied("wasi:cli/environment@0.2.0"));
}
