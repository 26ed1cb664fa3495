use super::v2023_10_18_http::types::{self as candidate, Error, Method, RequestOptions, Scheme};
use super::v2023_10_18_io::streams::{self, HostInputStream, HostOutputStream};
use super::*;
use crate::capabilities::test_support::with_http;
use wasmtime::component::Resource;
use wasmtime_wasi::p2::pipe::{MemoryInputPipe, MemoryOutputPipe};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, StreamError};
use wasmtime_wasi_http::p2::bindings::http::types::{self as latest, ErrorCode};

/// A table holding an input stream of `bytes` and an output stream, and the
/// output pipe to read what was written.
fn streams_with(
    bytes: &'static [u8],
) -> (
    ResourceTable,
    Resource<DynInputStream>,
    Resource<DynOutputStream>,
    MemoryOutputPipe,
) {
    let mut table = ResourceTable::new();
    let input: DynInputStream = Box::new(MemoryInputPipe::new(bytes));
    let output_pipe = MemoryOutputPipe::new(1 << 20);
    let output: DynOutputStream = Box::new(output_pipe.clone());
    let input = table.push(input).unwrap();
    let output = table.push(output).unwrap();
    (table, input, output, output_pipe)
}

fn borrowed<R: 'static>(resource: &Resource<R>) -> Resource<R> {
    Resource::new_borrow(resource.rep())
}

#[tokio::test]
async fn forward_moves_the_whole_source_and_drops_it() {
    let (mut table, input, output, pipe) = streams_with(b"every byte of the body");
    let rep = input.rep();
    let forwarded = HostOutputStream::forward(&mut table, borrowed(&output), input)
        .await
        .unwrap();
    assert_eq!(forwarded, 22);
    assert_eq!(&pipe.contents()[..], b"every byte of the body");
    // The source was taken by value: it is gone from the table.
    assert!(
        table
            .get(&Resource::<DynInputStream>::new_borrow(rep))
            .is_err()
    );
}

#[tokio::test]
async fn splice_takes_at_most_len_and_drops_its_source() {
    let (mut table, input, output, pipe) = streams_with(b"abcdef");
    let rep = input.rep();
    let spliced = HostOutputStream::blocking_splice(&mut table, borrowed(&output), input, 4)
        .await
        .unwrap();
    assert_eq!(spliced, 4);
    assert_eq!(&pipe.contents()[..], b"abcd");
    assert!(
        table
            .get(&Resource::<DynInputStream>::new_borrow(rep))
            .is_err()
    );
}

#[tokio::test]
async fn a_read_past_the_end_is_the_candidate_s_closed() {
    let (mut table, input, _output, _pipe) = streams_with(b"xy");
    let read = HostInputStream::blocking_read(&mut table, borrowed(&input), 10)
        .await
        .unwrap();
    assert_eq!(read, b"xy");
    let error = HostInputStream::blocking_read(&mut table, borrowed(&input), 10)
        .await
        .unwrap_err();
    assert!(matches!(error, StreamError::Closed));
    let converted = streams::Host::convert_stream_error(&mut table, error).unwrap();
    assert!(matches!(converted, streams::StreamError::Closed));
}

#[test]
fn an_outgoing_request_is_built_from_its_one_constructor() {
    with_http(|http| {
        let headers =
            candidate::HostFields::new(http, vec![("x-a".into(), b"1".to_vec())]).unwrap();
        let request = candidate::HostOutgoingRequest::new(
            http,
            Method::Post,
            Some("/p?q=1".into()),
            Some(Scheme::Https),
            Some("example.com:8443".into()),
            borrowed(&headers),
        )
        .unwrap();
        let at = || borrowed(&request);
        assert!(matches!(
            latest::HostOutgoingRequest::method(http, at()).unwrap(),
            latest::Method::Post
        ));
        assert_eq!(
            latest::HostOutgoingRequest::path_with_query(http, at())
                .unwrap()
                .as_deref(),
            Some("/p?q=1")
        );
        assert!(matches!(
            latest::HostOutgoingRequest::scheme(http, at()).unwrap(),
            Some(latest::Scheme::Https)
        ));
        assert_eq!(
            latest::HostOutgoingRequest::authority(http, at())
                .unwrap()
                .as_deref(),
            Some("example.com:8443")
        );
        let copied = latest::HostOutgoingRequest::headers(http, at()).unwrap();
        assert_eq!(
            latest::HostFields::get(http, copied, "x-a".into()).unwrap(),
            [b"1".to_vec()]
        );
    });
}

#[test]
fn a_header_0_2_refuses_traps_where_the_candidate_has_no_error() {
    with_http(|http| {
        assert!(
            candidate::HostFields::new(http, vec![("bad header".into(), b"1".to_vec())]).is_err()
        );
        let fields = candidate::HostFields::new(http, vec![]).unwrap();
        assert!(
            candidate::HostFields::append(
                http,
                borrowed(&fields),
                "bad header".into(),
                b"1".to_vec()
            )
            .is_err()
        );
    });
}

#[test]
fn an_invalid_status_traps_and_a_valid_one_is_kept() {
    with_http(|http| {
        let headers = candidate::HostFields::new(http, vec![]).unwrap();
        assert!(candidate::HostOutgoingResponse::new(http, 1000, borrowed(&headers)).is_err());
        let response = candidate::HostOutgoingResponse::new(http, 201, borrowed(&headers)).unwrap();
        assert_eq!(
            latest::HostOutgoingResponse::status_code(http, response).unwrap(),
            201
        );
    });
}

#[test]
fn request_options_in_milliseconds_become_0_2_s_nanoseconds() {
    use super::http::RequestOptionsExt;
    with_http(|http| {
        let options = http
            .request_options(RequestOptions {
                connect_timeout_ms: Some(1500),
                first_byte_timeout_ms: None,
                between_bytes_timeout_ms: Some(1),
            })
            .unwrap();
        let at = || borrowed(&options);
        assert_eq!(
            latest::HostRequestOptions::connect_timeout(http, at()).unwrap(),
            Some(1_500_000_000)
        );
        assert_eq!(
            latest::HostRequestOptions::first_byte_timeout(http, at()).unwrap(),
            None
        );
        assert_eq!(
            latest::HostRequestOptions::between_bytes_timeout(http, at()).unwrap(),
            Some(1_000_000)
        );
    });
}

#[test]
fn error_codes_keep_0_2_s_words_in_the_candidate_s_four_kinds() {
    let words = |error: Error| match error {
        Error::InvalidUrl(w) => ("invalid-url", w),
        Error::TimeoutError(w) => ("timeout-error", w),
        Error::ProtocolError(w) => ("protocol-error", w),
        Error::UnexpectedError(w) => ("unexpected-error", w),
    };
    let (kind, text) = words(ErrorCode::HttpRequestDenied.into());
    assert_eq!(kind, "unexpected-error");
    assert!(text.contains("HttpRequestDenied"), "{text}");
    assert_eq!(
        words(ErrorCode::HttpRequestUriInvalid.into()).0,
        "invalid-url"
    );
    assert_eq!(
        words(ErrorCode::ConnectionTimeout.into()).0,
        "timeout-error"
    );
    assert_eq!(
        words(ErrorCode::HttpProtocolError.into()).0,
        "protocol-error"
    );
}

#[test]
fn it_links_beside_wasi_0_2() {
    let engine = wasmtime::Engine::default();
    let mut linker = Linker::<crate::capabilities::test_support::LinkState>::new(&engine);
    let groups = [
        crate::capabilities::Group::WasiP2,
        crate::capabilities::Group::WasiRc2023_10_18,
    ];
    crate::capabilities::link(&mut linker, &groups.into_iter().collect()).unwrap();
}
