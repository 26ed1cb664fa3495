use super::*;
use wit_parser::Resolve;

/// A WASI-like package at `version`: a resource, and a handler using it.
fn http_package(version: &str) -> String {
    format!(
        "package wasi:http@{version};\n\
         interface types {{ resource request; }}\n\
         interface handler {{ use types.{{request}}; handle: func(r: request); }}\n"
    )
}

/// A core module, as wit-bindgen leaves it, for a world of `app` importing
/// `imports` and exporting `exports`, with the packages `packages` available.
fn module(packages: &[String], imports: &[&str], exports: &[&str]) -> Vec<u8> {
    let mut resolve = Resolve::default();
    for (i, package) in packages.iter().enumerate() {
        resolve.push_str(format!("dep{i}.wit"), package).unwrap();
    }
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
    crate::capabilities::test_support::module_for(&resolve, world)
}

fn exports_of(component: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(component) {
        match payload.unwrap() {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) if depth > 0 => depth -= 1,
            Payload::ComponentExportSection(exports) if depth == 0 => {
                names.extend(
                    exports
                        .into_iter()
                        .map(|e| e.unwrap().name.name.to_string()),
                );
            }
            _ => {}
        }
    }
    names
}

#[test]
fn a_core_module_with_its_component_type_is_made_a_component() {
    let module = module(
        &[http_package("0.2.0")],
        &["wasi:http/types@0.2.0"],
        &["wasi:http/handler@0.2.0"],
    );
    let prepared = prepare(&module).unwrap();
    assert_eq!(prepared.adapted, ["componentized"]);
    assert_eq!(encoding(&prepared.wasm).unwrap(), Encoding::Component);
    assert_eq!(prepared.imports, ["wasi:http/types@0.2.0"]);
    assert_eq!(prepared.flavour, Flavour::P2);
}

#[test]
fn a_core_module_without_its_component_type_is_refused_with_what_to_do() {
    // `\0asm`, version 1: an empty core module, as a WAGI or Spin 1 module has no
    // `component-type` section either.
    let error = prepare(b"\0asm\x01\0\0\0").unwrap_err();
    assert!(
        format!("{error:#}").contains("spin-sdk 2 or later"),
        "{error:#}"
    );
}

#[test]
fn the_2026_03_15_candidate_is_served_as_wasi_0_3_0() {
    let rc = "0.3.0-rc-2026-03-15";
    let module = module(
        &[http_package(rc)],
        &[&format!("wasi:http/types@{rc}")],
        &[&format!("wasi:http/handler@{rc}")],
    );
    let prepared = prepare(&module).unwrap();
    assert_eq!(
        prepared.adapted,
        ["componentized", "WASI 0.3.0-rc-2026-03-15 served as 0.3.0"]
    );
    assert_eq!(prepared.imports, ["wasi:http/types@0.3.0"]);
    assert_eq!(exports_of(&prepared.wasm), ["wasi:http/handler@0.3.0"]);
    assert_eq!(prepared.flavour, Flavour::P3);
    // The result is a valid component.
    wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all())
        .validate_all(&prepared.wasm)
        .unwrap();
}

#[test]
fn the_2023_10_18_handler_is_called_as_wasi_0_2_0_s_and_its_imports_keep_their_names() {
    let rc = "0.2.0-rc-2023-10-18";
    let package = format!(
        "package wasi:http@{rc};\n\
         interface types {{ resource incoming-request; resource response-outparam; }}\n\
         interface incoming-handler {{\n\
           use types.{{incoming-request, response-outparam}};\n\
           handle: func(request: incoming-request, response-out: response-outparam);\n\
         }}\n"
    );
    let module = module(
        &[package],
        &[&format!("wasi:http/types@{rc}")],
        &[&format!("wasi:http/incoming-handler@{rc}")],
    );
    let prepared = prepare(&module).unwrap();
    assert_eq!(
        prepared.adapted,
        [
            "componentized",
            "wasi:http 0.2.0-rc-2023-10-18 handler called as 0.2.0's"
        ]
    );
    // Its types stay the candidate's, served by `capabilities::wasi_2023_10_18`.
    assert_eq!(prepared.imports, [format!("wasi:http/types@{rc}")]);
    assert_eq!(
        exports_of(&prepared.wasm),
        ["wasi:http/incoming-handler@0.2.0"]
    );
    assert_eq!(prepared.flavour, Flavour::P2);
    wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all())
        .validate_all(&prepared.wasm)
        .unwrap();
}

/// `wasi:io` and `wasi:http` of one version: `io` with a resource, `http`
/// with types that use it and a handler.
fn candidate_packages(version: &str) -> [String; 2] {
    [
        format!("package wasi:io@{version};\ninterface streams {{ resource input-stream; }}\n"),
        format!(
            "package wasi:http@{version};\n\
             interface types {{\n\
               use wasi:io/streams@{version}.{{input-stream}};\n\
               resource incoming-request {{ body: func() -> input-stream; }}\n\
             }}\n\
             interface outgoing-handler {{ use types.{{incoming-request}}; handle: func(r: borrow<incoming-request>); }}\n\
             interface incoming-handler {{\n\
               use types.{{incoming-request}};\n\
               handle: func(request: incoming-request);\n\
             }}\n"
        ),
    ]
}

#[test]
fn the_2023_11_10_candidate_is_served_as_0_2_0_but_its_http_types() {
    let rc = "0.2.0-rc-2023-11-10";
    let module = module(
        &candidate_packages(rc),
        &[
            &format!("wasi:http/types@{rc}"),
            &format!("wasi:http/outgoing-handler@{rc}"),
        ],
        &[&format!("wasi:http/incoming-handler@{rc}")],
    );
    let prepared = prepare(&module).unwrap();
    assert_eq!(
        prepared.adapted,
        [
            "componentized",
            "WASI 0.2.0-rc-2023-11-10 served as 0.2.0 (its wasi:http/types by its own shim)"
        ]
    );
    assert_eq!(
        prepared.imports,
        [
            "wasi:io/streams@0.2.0".to_string(),
            format!("wasi:http/types@{rc}"),
            "wasi:http/outgoing-handler@0.2.0".to_string(),
        ]
    );
    assert_eq!(
        exports_of(&prepared.wasm),
        ["wasi:http/incoming-handler@0.2.0"]
    );
    assert_eq!(prepared.flavour, Flavour::P2);
    wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all())
        .validate_all(&prepared.wasm)
        .unwrap();
}

/// WASI interfaces at `version`, as wasmtime-wasi 48 provides them at 0.3.0
/// (a subset of each: a component may import only what it calls): a
/// function, and a resource.
fn wasi_0_3_packages(version: &str) -> [String; 2] {
    [
        format!(
            "package wasi:random@{version};\n\
             interface random {{ get-random-u64: func() -> u64; }}\n"
        ),
        format!(
            "package wasi:cli@{version};\n\
             interface terminal-input {{ resource terminal-input; }}\n"
        ),
    ]
}

/// What spin-sdk 5.0.0 for Python imports: every WASI 0.3 interface under
/// its 2026-03-15 candidate's name and its release's, side by side.
#[test]
fn a_candidate_beside_its_release_is_served_by_the_release_under_its_own_name() {
    let rc = "0.3.0-rc-2026-03-15";
    let packages: Vec<String> = wasi_0_3_packages(rc)
        .into_iter()
        .chain(wasi_0_3_packages("0.3.0"))
        .collect();
    let module = module(
        &packages,
        &[
            &format!("wasi:random/random@{rc}"),
            &format!("wasi:cli/terminal-input@{rc}"),
            "wasi:random/random@0.3.0",
            "wasi:cli/terminal-input@0.3.0",
        ],
        &[],
    );
    let prepared = prepare(&module).unwrap();
    assert_eq!(
        prepared.imports,
        [
            "wasi:random/random@0.3.0+rc-2026-03-15",
            "wasi:cli/terminal-input@0.3.0+rc-2026-03-15",
            "wasi:random/random@0.3.0",
            "wasi:cli/terminal-input@0.3.0",
        ]
    );
    assert_eq!(
        prepared.adapted,
        ["componentized", "WASI 0.3.0-rc-2026-03-15 served as 0.3.0"]
    );
    // wasmtime's linker gives both names the one 0.3.0 implementation.
    let mut config = wasmtime::Config::new();
    config.wasm_component_model_async(true);
    let engine = wasmtime::Engine::new(&config).unwrap();
    let component = wasmtime::component::Component::new(&engine, &prepared.wasm).unwrap();
    let mut linker =
        wasmtime::component::Linker::<crate::capabilities::test_support::LinkState>::new(&engine);
    let groups = crate::capabilities::groups_for(&prepared.imports).unwrap();
    assert_eq!(groups, [crate::capabilities::Group::WasiP3].into());
    crate::capabilities::link(&mut linker, &groups).unwrap();
    linker.instantiate_pre(&component).unwrap();
}

#[test]
fn a_component_exporting_a_candidate_and_its_release_is_refused_as_spin_refuses_it() {
    let rc = "0.3.0-rc-2026-03-15";
    let module = module(
        &[http_package(rc), http_package("0.3.0")],
        &[],
        &[
            &format!("wasi:http/handler@{rc}"),
            "wasi:http/handler@0.3.0",
        ],
    );
    let error = prepare(&module).unwrap_err();
    assert!(
        format!("{error:#}").contains("exports multiple different handlers"),
        "{error:#}"
    );
}

#[test]
fn other_prereleases_and_other_namespaces_keep_their_names() {
    assert_eq!(
        renamed("wasi:http/types@0.3.0-rc-2026-03-15").as_deref(),
        Some("wasi:http/types@0.3.0")
    );
    assert_eq!(renamed("wasi:http/types@0.3.0-rc-2026-01-06"), None);
    // The one 2023-11-10 interface a shim serves under its own name.
    assert_eq!(renamed("wasi:http/types@0.2.0-rc-2023-11-10"), None);
    assert_eq!(
        renamed("wasi:http/outgoing-handler@0.2.0-rc-2023-11-10").as_deref(),
        Some("wasi:http/outgoing-handler@0.2.0")
    );
    assert_eq!(renamed("wasi:http/types@0.2.0-rc-2023-10-18"), None);
    assert_eq!(renamed("acme:http/types@0.3.0-rc-2026-03-15"), None);
    assert_eq!(renamed("wasi:http/types@0.3.0"), None);
}

#[test]
fn a_component_that_needs_nothing_is_left_as_it_is() {
    let module = module(&[http_package("0.2.0")], &["wasi:http/types@0.2.0"], &[]);
    let component = prepare(&module).unwrap().wasm.into_owned();
    let prepared = prepare(&component).unwrap();
    assert!(prepared.adapted.is_empty());
    assert!(matches!(prepared.wasm, Cow::Borrowed(_)));
}

#[test]
fn a_wagi_module_is_made_a_wasi_command_and_needs_a_start() {
    // A core module exporting `_start` and its memory, importing nothing.
    let command = command_module(true);
    let prepared = prepare_wagi(&command).unwrap();
    assert_eq!(prepared.flavour, Flavour::Wagi);
    assert_eq!(prepared.adapted, ["componentized as a WASI command"]);
    assert!(
        exports_of(&prepared.wasm)
            .iter()
            .any(|name| name.starts_with("wasi:cli/run@0.2")),
        "{:?}",
        exports_of(&prepared.wasm)
    );
    let no_start = command_module(false);
    let error = prepare_wagi(&no_start).unwrap_err();
    assert!(format!("{error:#}").contains("_start"), "{error:#}");
}

/// A core module exporting its memory and, if `with_start`, an empty
/// `_start`: the smallest WASI command, importing nothing.
fn command_module(with_start: bool) -> Vec<u8> {
    let mut module = wasm_encoder::Module::new();
    let mut types = wasm_encoder::TypeSection::new();
    types.ty().function([], []);
    let mut functions = wasm_encoder::FunctionSection::new();
    let mut memories = wasm_encoder::MemorySection::new();
    memories.memory(wasm_encoder::MemoryType {
        minimum: 1,
        maximum: None,
        memory64: false,
        shared: false,
        page_size_log2: None,
    });
    let mut exports = wasm_encoder::ExportSection::new();
    exports.export("memory", wasm_encoder::ExportKind::Memory, 0);
    let mut code = wasm_encoder::CodeSection::new();
    if with_start {
        functions.function(0);
        exports.export("_start", wasm_encoder::ExportKind::Func, 0);
        let mut body = wasm_encoder::Function::new([]);
        body.instructions().end();
        code.function(&body);
    }
    module.section(&types);
    if with_start {
        module.section(&functions);
    }
    module.section(&memories);
    module.section(&exports);
    if with_start {
        module.section(&code);
    }
    module.finish()
}
