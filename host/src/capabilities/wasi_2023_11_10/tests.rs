use super::v2023_11_10_http::types as candidate;
use super::*;
use crate::capabilities::Group;
use crate::capabilities::test_support::with_http;
use crate::capabilities::test_support::{LinkState, module_for};
use crate::instance::prepare::prepare;
use wasmtime::component::{Component, Resource};
use wasmtime_wasi_http::p2::bindings::http::types::{self as latest, HeaderError};
use wasmtime_wasi_http::p2::body::HostFutureTrailers;
use wit_parser::Resolve;

fn borrowed<R: 'static>(resource: &Resource<R>) -> Resource<R> {
    Resource::new_borrow(resource.rep())
}

#[test]
fn timeouts_named_in_milliseconds_are_0_2_s_durations_unchanged() {
    with_http(|http| {
        let options = candidate::HostRequestOptions::new(http).unwrap();
        let at = || borrowed(&options);
        candidate::HostRequestOptions::set_connect_timeout_ms(http, at(), Some(1_500))
            .unwrap()
            .unwrap();
        candidate::HostRequestOptions::set_between_bytes_timeout_ms(http, at(), Some(7))
            .unwrap()
            .unwrap();
        assert_eq!(
            latest::HostRequestOptions::connect_timeout(http, at()).unwrap(),
            Some(1_500)
        );
        assert_eq!(
            candidate::HostRequestOptions::between_bytes_timeout_ms(http, at()).unwrap(),
            Some(7)
        );
        assert_eq!(
            candidate::HostRequestOptions::first_byte_timeout_ms(http, at()).unwrap(),
            None
        );
    });
}

#[test]
fn a_header_0_2_refuses_is_the_candidate_s_header_error_not_a_trap() {
    with_http(|http| {
        let refused =
            candidate::HostFields::from_list(http, vec![("bad header".into(), b"1".to_vec())])
                .unwrap();
        assert!(matches!(refused, Err(HeaderError::InvalidSyntax)));
        let fields = candidate::HostFields::new(http).unwrap();
        let appended =
            candidate::HostFields::append(http, borrowed(&fields), "x-a".into(), b"1".to_vec())
                .unwrap();
        assert!(appended.is_ok());
        assert_eq!(
            candidate::HostFields::get(http, borrowed(&fields), "x-a".into()).unwrap(),
            [b"1".to_vec()]
        );
    });
}

#[test]
fn trailers_are_got_with_one_result_layer_fewer_and_a_second_get_traps() {
    with_http(|http| {
        let mut trailers = ::http::HeaderMap::new();
        trailers.insert("x-checksum", "abc".parse().unwrap());
        let future = http
            .table
            .push(HostFutureTrailers::Done(Ok(Some(trailers))))
            .unwrap();
        let got = candidate::HostFutureTrailers::get(http, borrowed(&future)).unwrap();
        let Some(Ok(Some(fields))) = got else {
            panic!("trailers expected, got {got:?}");
        };
        assert_eq!(
            latest::HostFields::get(http, fields, "x-checksum".into()).unwrap(),
            [b"abc".to_vec()]
        );
        assert!(candidate::HostFutureTrailers::get(http, borrowed(&future)).is_err());
    });
}

/// A component importing every function of the candidate's `wasi:http/types`,
/// as wit-bindgen leaves one (then made a component as at load).
fn component_of_the_candidate(engine: &wasmtime::Engine) -> Component {
    let mut resolve = Resolve::default();
    let package = resolve
        .push_file(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/wit/wasi-2023-11-10.wit"
        ))
        .unwrap();
    let world = resolve
        .select_world(&[package], Some("types-only"))
        .unwrap();
    let module = module_for(&resolve, world);
    let prepared = prepare(&module).unwrap();
    assert!(prepared.imports.iter().any(|name| name == HTTP_TYPES));
    Component::new(engine, &prepared.wasm).unwrap()
}

fn linker_of(engine: &wasmtime::Engine, groups: &[Group]) -> Linker<LinkState> {
    let mut linker = Linker::<LinkState>::new(engine);
    crate::capabilities::link(&mut linker, &groups.iter().copied().collect()).unwrap();
    linker
}

#[test]
fn every_function_of_the_candidate_links_with_its_type() {
    let engine = wasmtime::Engine::default();
    let component = component_of_the_candidate(&engine);
    let linked = linker_of(&engine, &[Group::WasiP2, Group::WasiRc2023_11_10]);
    linked.instantiate_pre(&component).unwrap();
    // And it is this shim that provides them: WASI 0.2 alone does not.
    let error = linker_of(&engine, &[Group::WasiP2])
        .instantiate_pre(&component)
        .err()
        .expect("the candidate's types need the shim");
    assert!(format!("{error:#}").contains(HTTP_TYPES), "{error:#}");
}

#[test]
fn the_socket_methods_0_2_0_dropped_still_link() {
    let rc = "0.2.0-rc-2023-11-10";
    let mut resolve = Resolve::default();
    let package = resolve
        .push_str(
            "sockets.wit",
            &format!(
                "package wasi:sockets@{rc};\n\
                 interface tcp {{\n\
                   enum error-code {{ unknown }}\n\
                   resource tcp-socket {{\n\
                     ipv6-only: func() -> result<bool, error-code>;\n\
                     set-ipv6-only: func(value: bool) -> result<_, error-code>;\n\
                   }}\n\
                 }}\n\
                 world app {{ import tcp; }}\n"
            ),
        )
        .unwrap();
    let world = resolve.select_world(&[package], Some("app")).unwrap();
    let module = module_for(&resolve, world);
    let prepared = prepare(&module).unwrap();
    assert_eq!(prepared.imports, ["wasi:sockets/tcp@0.2.0"]);
    let engine = wasmtime::Engine::default();
    let component = Component::new(&engine, &prepared.wasm).unwrap();
    linker_of(&engine, &[Group::WasiP2])
        .instantiate_pre(&component)
        .unwrap();
}
