//! `wasi:http/types` of 2023-11-10, answered by WASI 0.2's implementation over
//! the same host objects. Only two things differ from 0.2: `request-options`
//! names its timeouts `*-timeout-ms` (still a `duration` in nanoseconds, as
//! Spin passes them on), and `future-trailers.get` has one `result` layer
//! fewer (a second `get` after the trailers were taken, which 0.2 answers
//! with an error, traps: the candidate has no way to say it).

use super::v2023_11_10_http::types;
use latest::{
    ErrorCode, Fields, FutureIncomingResponse, FutureTrailers, HeaderError, IncomingBody,
    IncomingRequest, IncomingResponse, IoError, Method, OutgoingBody, OutgoingRequest,
    OutgoingResponse, RequestOptions, ResponseOutparam, Scheme,
};
use wasmtime::component::Resource;
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, DynPollable};
use wasmtime_wasi_http::WasiHttpCtxView;
use wasmtime_wasi_http::p2::HeaderResult;
use wasmtime_wasi_http::p2::bindings::http::types as latest;

impl types::Host for WasiHttpCtxView<'_> {
    fn http_error_code(&mut self, error: Resource<IoError>) -> wasmtime::Result<Option<ErrorCode>> {
        latest::Host::http_error_code(self, error)
    }
}

impl types::HostFields for WasiHttpCtxView<'_> {
    fn new(&mut self) -> wasmtime::Result<Resource<Fields>> {
        latest::HostFields::new(self)
    }

    fn from_list(
        &mut self,
        entries: Vec<(String, Vec<u8>)>,
    ) -> wasmtime::Result<Result<Resource<Fields>, HeaderError>> {
        let outcome = latest::HostFields::from_list(self, entries);
        header_result(self, outcome)
    }

    fn get(&mut self, fields: Resource<Fields>, name: String) -> wasmtime::Result<Vec<Vec<u8>>> {
        latest::HostFields::get(self, fields, name)
    }

    fn set(
        &mut self,
        fields: Resource<Fields>,
        name: String,
        values: Vec<Vec<u8>>,
    ) -> wasmtime::Result<Result<(), HeaderError>> {
        let outcome = latest::HostFields::set(self, fields, name, values);
        header_result(self, outcome)
    }

    fn delete(
        &mut self,
        fields: Resource<Fields>,
        name: String,
    ) -> wasmtime::Result<Result<(), HeaderError>> {
        let outcome = latest::HostFields::delete(self, fields, name);
        header_result(self, outcome)
    }

    fn append(
        &mut self,
        fields: Resource<Fields>,
        name: String,
        value: Vec<u8>,
    ) -> wasmtime::Result<Result<(), HeaderError>> {
        let outcome = latest::HostFields::append(self, fields, name, value);
        header_result(self, outcome)
    }

    fn entries(&mut self, fields: Resource<Fields>) -> wasmtime::Result<Vec<(String, Vec<u8>)>> {
        latest::HostFields::entries(self, fields)
    }

    fn clone(&mut self, fields: Resource<Fields>) -> wasmtime::Result<Resource<Fields>> {
        latest::HostFields::clone(self, fields)
    }

    fn drop(&mut self, fields: Resource<Fields>) -> wasmtime::Result<()> {
        latest::HostFields::drop(self, fields)
    }
}

impl types::HostIncomingRequest for WasiHttpCtxView<'_> {
    fn method(&mut self, request: Resource<IncomingRequest>) -> wasmtime::Result<Method> {
        latest::HostIncomingRequest::method(self, request)
    }

    fn path_with_query(
        &mut self,
        request: Resource<IncomingRequest>,
    ) -> wasmtime::Result<Option<String>> {
        latest::HostIncomingRequest::path_with_query(self, request)
    }

    fn scheme(&mut self, request: Resource<IncomingRequest>) -> wasmtime::Result<Option<Scheme>> {
        latest::HostIncomingRequest::scheme(self, request)
    }

    fn authority(
        &mut self,
        request: Resource<IncomingRequest>,
    ) -> wasmtime::Result<Option<String>> {
        latest::HostIncomingRequest::authority(self, request)
    }

    fn headers(
        &mut self,
        request: Resource<IncomingRequest>,
    ) -> wasmtime::Result<Resource<Fields>> {
        latest::HostIncomingRequest::headers(self, request)
    }

    fn consume(
        &mut self,
        request: Resource<IncomingRequest>,
    ) -> wasmtime::Result<Result<Resource<IncomingBody>, ()>> {
        latest::HostIncomingRequest::consume(self, request)
    }

    fn drop(&mut self, request: Resource<IncomingRequest>) -> wasmtime::Result<()> {
        latest::HostIncomingRequest::drop(self, request)
    }
}

impl types::HostOutgoingRequest for WasiHttpCtxView<'_> {
    fn new(&mut self, headers: Resource<Fields>) -> wasmtime::Result<Resource<OutgoingRequest>> {
        latest::HostOutgoingRequest::new(self, headers)
    }

    fn body(
        &mut self,
        request: Resource<OutgoingRequest>,
    ) -> wasmtime::Result<Result<Resource<OutgoingBody>, ()>> {
        latest::HostOutgoingRequest::body(self, request)
    }

    fn method(&mut self, request: Resource<OutgoingRequest>) -> wasmtime::Result<Method> {
        latest::HostOutgoingRequest::method(self, request)
    }

    fn set_method(
        &mut self,
        request: Resource<OutgoingRequest>,
        method: Method,
    ) -> wasmtime::Result<Result<(), ()>> {
        latest::HostOutgoingRequest::set_method(self, request, method)
    }

    fn path_with_query(
        &mut self,
        request: Resource<OutgoingRequest>,
    ) -> wasmtime::Result<Option<String>> {
        latest::HostOutgoingRequest::path_with_query(self, request)
    }

    fn set_path_with_query(
        &mut self,
        request: Resource<OutgoingRequest>,
        path_with_query: Option<String>,
    ) -> wasmtime::Result<Result<(), ()>> {
        latest::HostOutgoingRequest::set_path_with_query(self, request, path_with_query)
    }

    fn scheme(&mut self, request: Resource<OutgoingRequest>) -> wasmtime::Result<Option<Scheme>> {
        latest::HostOutgoingRequest::scheme(self, request)
    }

    fn set_scheme(
        &mut self,
        request: Resource<OutgoingRequest>,
        scheme: Option<Scheme>,
    ) -> wasmtime::Result<Result<(), ()>> {
        latest::HostOutgoingRequest::set_scheme(self, request, scheme)
    }

    fn authority(
        &mut self,
        request: Resource<OutgoingRequest>,
    ) -> wasmtime::Result<Option<String>> {
        latest::HostOutgoingRequest::authority(self, request)
    }

    fn set_authority(
        &mut self,
        request: Resource<OutgoingRequest>,
        authority: Option<String>,
    ) -> wasmtime::Result<Result<(), ()>> {
        latest::HostOutgoingRequest::set_authority(self, request, authority)
    }

    fn headers(
        &mut self,
        request: Resource<OutgoingRequest>,
    ) -> wasmtime::Result<Resource<Fields>> {
        latest::HostOutgoingRequest::headers(self, request)
    }

    fn drop(&mut self, request: Resource<OutgoingRequest>) -> wasmtime::Result<()> {
        latest::HostOutgoingRequest::drop(self, request)
    }
}

/// The candidate's `*-timeout-ms` names for 0.2's timeouts, same values.
impl types::HostRequestOptions for WasiHttpCtxView<'_> {
    fn new(&mut self) -> wasmtime::Result<Resource<RequestOptions>> {
        latest::HostRequestOptions::new(self)
    }

    fn connect_timeout_ms(
        &mut self,
        options: Resource<RequestOptions>,
    ) -> wasmtime::Result<Option<u64>> {
        latest::HostRequestOptions::connect_timeout(self, options)
    }

    fn set_connect_timeout_ms(
        &mut self,
        options: Resource<RequestOptions>,
        duration: Option<u64>,
    ) -> wasmtime::Result<Result<(), ()>> {
        latest::HostRequestOptions::set_connect_timeout(self, options, duration)
    }

    fn first_byte_timeout_ms(
        &mut self,
        options: Resource<RequestOptions>,
    ) -> wasmtime::Result<Option<u64>> {
        latest::HostRequestOptions::first_byte_timeout(self, options)
    }

    fn set_first_byte_timeout_ms(
        &mut self,
        options: Resource<RequestOptions>,
        duration: Option<u64>,
    ) -> wasmtime::Result<Result<(), ()>> {
        latest::HostRequestOptions::set_first_byte_timeout(self, options, duration)
    }

    fn between_bytes_timeout_ms(
        &mut self,
        options: Resource<RequestOptions>,
    ) -> wasmtime::Result<Option<u64>> {
        latest::HostRequestOptions::between_bytes_timeout(self, options)
    }

    fn set_between_bytes_timeout_ms(
        &mut self,
        options: Resource<RequestOptions>,
        duration: Option<u64>,
    ) -> wasmtime::Result<Result<(), ()>> {
        latest::HostRequestOptions::set_between_bytes_timeout(self, options, duration)
    }

    fn drop(&mut self, options: Resource<RequestOptions>) -> wasmtime::Result<()> {
        latest::HostRequestOptions::drop(self, options)
    }
}

impl types::HostResponseOutparam for WasiHttpCtxView<'_> {
    fn set(
        &mut self,
        param: Resource<ResponseOutparam>,
        response: Result<Resource<OutgoingResponse>, ErrorCode>,
    ) -> wasmtime::Result<()> {
        latest::HostResponseOutparam::set(self, param, response)
    }

    fn drop(&mut self, param: Resource<ResponseOutparam>) -> wasmtime::Result<()> {
        latest::HostResponseOutparam::drop(self, param)
    }
}

impl types::HostIncomingResponse for WasiHttpCtxView<'_> {
    fn status(&mut self, response: Resource<IncomingResponse>) -> wasmtime::Result<u16> {
        latest::HostIncomingResponse::status(self, response)
    }

    fn headers(
        &mut self,
        response: Resource<IncomingResponse>,
    ) -> wasmtime::Result<Resource<Fields>> {
        latest::HostIncomingResponse::headers(self, response)
    }

    fn consume(
        &mut self,
        response: Resource<IncomingResponse>,
    ) -> wasmtime::Result<Result<Resource<IncomingBody>, ()>> {
        latest::HostIncomingResponse::consume(self, response)
    }

    fn drop(&mut self, response: Resource<IncomingResponse>) -> wasmtime::Result<()> {
        latest::HostIncomingResponse::drop(self, response)
    }
}

impl types::HostIncomingBody for WasiHttpCtxView<'_> {
    fn stream(
        &mut self,
        body: Resource<IncomingBody>,
    ) -> wasmtime::Result<Result<Resource<DynInputStream>, ()>> {
        latest::HostIncomingBody::stream(self, body)
    }

    fn finish(
        &mut self,
        body: Resource<IncomingBody>,
    ) -> wasmtime::Result<Resource<FutureTrailers>> {
        latest::HostIncomingBody::finish(self, body)
    }

    fn drop(&mut self, body: Resource<IncomingBody>) -> wasmtime::Result<()> {
        latest::HostIncomingBody::drop(self, body)
    }
}

impl types::HostFutureTrailers for WasiHttpCtxView<'_> {
    fn subscribe(
        &mut self,
        trailers: Resource<FutureTrailers>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        latest::HostFutureTrailers::subscribe(self, trailers)
    }

    fn get(
        &mut self,
        trailers: Resource<FutureTrailers>,
    ) -> wasmtime::Result<Option<Result<Option<Resource<Fields>>, ErrorCode>>> {
        match latest::HostFutureTrailers::get(self, trailers)? {
            None => Ok(None),
            Some(Ok(trailers)) => Ok(Some(trailers)),
            Some(Err(())) => {
                wasmtime::bail!("future-trailers.get: the trailers were already taken")
            }
        }
    }

    fn drop(&mut self, trailers: Resource<FutureTrailers>) -> wasmtime::Result<()> {
        latest::HostFutureTrailers::drop(self, trailers)
    }
}

impl types::HostOutgoingResponse for WasiHttpCtxView<'_> {
    fn new(&mut self, headers: Resource<Fields>) -> wasmtime::Result<Resource<OutgoingResponse>> {
        latest::HostOutgoingResponse::new(self, headers)
    }

    fn status_code(&mut self, response: Resource<OutgoingResponse>) -> wasmtime::Result<u16> {
        latest::HostOutgoingResponse::status_code(self, response)
    }

    fn set_status_code(
        &mut self,
        response: Resource<OutgoingResponse>,
        status: u16,
    ) -> wasmtime::Result<Result<(), ()>> {
        latest::HostOutgoingResponse::set_status_code(self, response, status)
    }

    fn headers(
        &mut self,
        response: Resource<OutgoingResponse>,
    ) -> wasmtime::Result<Resource<Fields>> {
        latest::HostOutgoingResponse::headers(self, response)
    }

    fn body(
        &mut self,
        response: Resource<OutgoingResponse>,
    ) -> wasmtime::Result<Result<Resource<OutgoingBody>, ()>> {
        latest::HostOutgoingResponse::body(self, response)
    }

    fn drop(&mut self, response: Resource<OutgoingResponse>) -> wasmtime::Result<()> {
        latest::HostOutgoingResponse::drop(self, response)
    }
}

impl types::HostOutgoingBody for WasiHttpCtxView<'_> {
    fn write(
        &mut self,
        body: Resource<OutgoingBody>,
    ) -> wasmtime::Result<Result<Resource<DynOutputStream>, ()>> {
        latest::HostOutgoingBody::write(self, body)
    }

    fn finish(
        &mut self,
        body: Resource<OutgoingBody>,
        trailers: Option<Resource<Fields>>,
    ) -> wasmtime::Result<Result<(), ErrorCode>> {
        match latest::HostOutgoingBody::finish(self, body, trailers) {
            Ok(()) => Ok(Ok(())),
            Err(error) => latest::Host::convert_error_code(self, error).map(Err),
        }
    }

    fn drop(&mut self, body: Resource<OutgoingBody>) -> wasmtime::Result<()> {
        latest::HostOutgoingBody::drop(self, body)
    }
}

impl types::HostFutureIncomingResponse for WasiHttpCtxView<'_> {
    fn subscribe(
        &mut self,
        response: Resource<FutureIncomingResponse>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        latest::HostFutureIncomingResponse::subscribe(self, response)
    }

    fn get(
        &mut self,
        response: Resource<FutureIncomingResponse>,
    ) -> wasmtime::Result<Option<Result<Result<Resource<IncomingResponse>, ErrorCode>, ()>>> {
        latest::HostFutureIncomingResponse::get(self, response)
    }

    fn drop(&mut self, response: Resource<FutureIncomingResponse>) -> wasmtime::Result<()> {
        latest::HostFutureIncomingResponse::drop(self, response)
    }
}

/// 0.2's trappable header error as the value the candidate returns (a trap stays one).
fn header_result<T>(
    view: &mut WasiHttpCtxView<'_>,
    outcome: HeaderResult<T>,
) -> wasmtime::Result<Result<T, HeaderError>> {
    match outcome {
        Ok(value) => Ok(Ok(value)),
        Err(error) => latest::Host::convert_header_error(view, error).map(Err),
    }
}
