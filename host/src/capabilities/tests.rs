use super::*;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(ToString::to_string).collect()
}

#[test]
fn names_are_taken_apart() {
    let name = Name::parse("fermyon:spin/key-value@2.0.0").unwrap();
    assert_eq!(name.package, "fermyon:spin");
    assert_eq!(name.interface, "key-value");
    assert_eq!(name.version, Some(Version::new(2, 0, 0)));
    let unversioned = Name::parse("fermyon:spin/config").unwrap();
    assert_eq!(unversioned.version, None);
    assert_eq!(Name::parse("plain-function"), None);
    assert_eq!(Name::parse("no-package/x@1.0.0"), None);
    assert_eq!(Name::parse("a:b/c@not-a-version"), None);
}

#[test]
fn versions_match_as_wasmtimes_linker_matches_them() {
    let provided = |p: &str, w: &str| Name::parse(p).unwrap().satisfies(&Name::parse(w).unwrap());
    assert!(provided(
        "spin:postgres/postgres@4.2.0",
        "spin:postgres/postgres@4.0.0"
    ));
    assert!(provided(
        "spin:sqlite/sqlite@3.1.0",
        "spin:sqlite/sqlite@3.0.0"
    ));
    assert!(!provided(
        "spin:sqlite/sqlite@3.1.0",
        "spin:sqlite/sqlite@3.2.0"
    ));
    assert!(!provided(
        "spin:postgres/postgres@4.2.0",
        "spin:postgres/postgres@3.0.0"
    ));
    assert!(provided("a:b/c@0.2.12", "a:b/c@0.2.0"));
    assert!(!provided("a:b/c@0.3.0", "a:b/c@0.2.0"));
    assert!(!provided("a:b/c@0.2.0-draft2", "a:b/c@0.2.0"));
    assert!(provided("a:b/c@0.2.0-draft2", "a:b/c@0.2.0-draft2"));
    assert!(!provided("a:b/c", "a:b/c@1.0.0"));
    assert!(provided("fermyon:spin/config", "fermyon:spin/config"));
    assert!(!provided("fermyon:spin/config", "fermyon:spin/variables"));
}

#[test]
fn wasi_and_spin_variables_are_provided() {
    let imports = names(&[
        "wasi:io/error@0.2.0",
        "wasi:cli/environment@0.2.3",
        "wasi:http/outgoing-handler@0.2.12",
        "fermyon:spin/variables@2.0.0",
        "spin:variables/variables@3.0.0",
        "wasi:config/store@0.2.0-draft-2024-09-27",
        "fermyon:spin/config",
    ]);
    let groups = groups_for(&imports).unwrap();
    assert_eq!(
        groups.into_iter().collect::<Vec<_>>(),
        [
            Group::WasiP2,
            Group::VariablesV2,
            Group::VariablesV3,
            Group::ConfigV1,
            Group::WasiConfig
        ]
    );
}

#[test]
fn the_first_unprovided_import_is_named() {
    let imports = names(&["wasi:io/error@0.2.0", "acme:thing/widget@1.0.0", "x:y/z"]);
    assert_eq!(
        groups_for(&imports),
        Err(Unprovided("acme:thing/widget@1.0.0".into()))
    );
}

#[test]
fn only_async_groups_need_a_concurrent_engine() {
    assert!(Group::WasiP3.concurrent());
    assert!(Group::VariablesV3.concurrent());
    assert!(!Group::WasiP2.concurrent());
    assert!(!Group::VariablesV2.concurrent());
}

#[test]
fn key_value_and_sqlite_are_provided_under_spin_2_and_spin_4_names() {
    let imports = names(&[
        "fermyon:spin/key-value@2.0.0",
        "spin:key-value/key-value@3.0.0",
        "fermyon:spin/sqlite@2.0.0",
        "spin:sqlite/sqlite@3.0.0",
        "spin:sqlite/sqlite@3.1.0",
    ]);
    let groups = groups_for(&imports).unwrap();
    assert_eq!(
        groups.into_iter().collect::<Vec<_>>(),
        [
            Group::KeyValueV2,
            Group::KeyValueV3,
            Group::SqliteV2,
            Group::SqliteV3
        ]
    );
    // 3.x's async functions need the async ABI; 2.0.0's are synchronous.
    assert!(Group::KeyValueV3.concurrent() && Group::SqliteV3.concurrent());
    assert!(!Group::KeyValueV2.concurrent() && !Group::SqliteV2.concurrent());
    assert_eq!(group_of("spin:sqlite/sqlite@3.2.0"), None);
    assert_eq!(group_of("fermyon:spin/key-value"), None);
}

#[test]
fn llm_is_linked() {
    assert_eq!(group_of("fermyon:spin/llm@2.0.0"), Some(Group::LlmV2));
}

#[test]
fn the_2023_10_18_candidate_is_provided_for_what_spin_sdk_2_imports() {
    for candidate in [
        "wasi:http/types@0.2.0-rc-2023-10-18",
        "wasi:http/outgoing-handler@0.2.0-rc-2023-10-18",
        "wasi:io/poll@0.2.0-rc-2023-10-18",
        "wasi:io/streams@0.2.0-rc-2023-10-18",
    ] {
        assert_eq!(
            group_of(candidate),
            Some(Group::WasiRc2023_10_18),
            "{candidate}"
        );
    }
    // Its other interfaces (what a component built with the candidate's own
    // adapter imports) are not; a pre-release is matched exactly.
    for unprovided in [
        "wasi:cli/environment@0.2.0-rc-2023-10-18",
        "wasi:http/types@0.2.0-rc-2023-10-17",
        "wasi:http/types@0.2.0-rc-2023-12-05",
    ] {
        assert_eq!(group_of(unprovided), None, "{unprovided}");
    }
}

#[test]
fn of_the_2023_11_10_candidate_only_its_http_types_is_provided_under_its_name() {
    assert_eq!(
        group_of("wasi:http/types@0.2.0-rc-2023-11-10"),
        Some(Group::WasiRc2023_11_10)
    );
    // The rest is renamed to 0.2.0 at load (`instance::prepare`) before this
    // table is read.
    assert_eq!(group_of("wasi:io/streams@0.2.0-rc-2023-11-10"), None);
    assert_eq!(group_of("wasi:io/streams@0.2.0"), Some(Group::WasiP2));
}
