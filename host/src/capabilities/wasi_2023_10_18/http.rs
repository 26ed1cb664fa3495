//! `wasi:http` types and outgoing handler of 2023-10-18, answered by WASI
//! 0.2's implementation over the same host objects. Where the candidate's
//! shape differs from 0.2: `fields`, `outgoing-request` and
//! `outgoing-response` are built by one constructor where 0.2 has setters
//! (a value 0.2 refuses traps, as the candidate has no error to give);
//! `request-options` is a record of milliseconds; its one `error` variant
//! stands for 0.2's `error-code`; absent trailers are an empty `fields`.

use super::v2023_10_18_http::{outgoing_handler, types};
use latest::{
    ErrorCode, Fields, FutureIncomingResponse, FutureTrailers, IncomingBody, IncomingRequest,
    IncomingResponse, OutgoingBody, OutgoingRequest, OutgoingResponse, ResponseOutparam,
};
use types::{Error, Method, RequestOptions, Scheme};
use wasmtime::component::Resource;
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, DynPollable};
use wasmtime_wasi_http::WasiHttpCtxView;
use wasmtime_wasi_http::p2::bindings::http::{outgoing_handler as latest_handler, types as latest};

impl types::Host for WasiHttpCtxView<'_> {}

impl types::HostFields for WasiHttpCtxView<'_> {
    fn new(&mut self, entries: Vec<(String, Vec<u8>)>) -> wasmtime::Result<Resource<Fields>> {
        latest::HostFields::from_list(self, entries).map_err(trap)
    }

    fn get(&mut self, fields: Resource<Fields>, name: String) -> wasmtime::Result<Vec<Vec<u8>>> {
        latest::HostFields::get(self, fields, name)
    }

    fn set(
        &mut self,
        fields: Resource<Fields>,
        name: String,
        values: Vec<Vec<u8>>,
    ) -> wasmtime::Result<()> {
        latest::HostFields::set(self, fields, name, values).map_err(trap)
    }

    fn delete(&mut self, fields: Resource<Fields>, name: String) -> wasmtime::Result<()> {
        latest::HostFields::delete(self, fields, name).map_err(trap)
    }

    fn append(
        &mut self,
        fields: Resource<Fields>,
        name: String,
        value: Vec<u8>,
    ) -> wasmtime::Result<()> {
        latest::HostFields::append(self, fields, name, value).map_err(trap)
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
        latest::HostIncomingRequest::method(self, request).map(Method::from)
    }

    fn path_with_query(
        &mut self,
        request: Resource<IncomingRequest>,
    ) -> wasmtime::Result<Option<String>> {
        latest::HostIncomingRequest::path_with_query(self, request)
    }

    fn scheme(&mut self, request: Resource<IncomingRequest>) -> wasmtime::Result<Option<Scheme>> {
        latest::HostIncomingRequest::scheme(self, request).map(|scheme| scheme.map(Scheme::from))
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
    fn new(
        &mut self,
        method: Method,
        path_with_query: Option<String>,
        scheme: Option<Scheme>,
        authority: Option<String>,
        headers: Resource<Fields>,
    ) -> wasmtime::Result<Resource<OutgoingRequest>> {
        let headers = latest::HostFields::clone(self, headers)?;
        let request = latest::HostOutgoingRequest::new(self, headers)?;
        let at = || borrow(&request);
        let set = [
            (
                "method",
                latest::HostOutgoingRequest::set_method(self, at(), method.into())?,
            ),
            (
                "path-with-query",
                latest::HostOutgoingRequest::set_path_with_query(self, at(), path_with_query)?,
            ),
            (
                "scheme",
                latest::HostOutgoingRequest::set_scheme(self, at(), scheme.map(Into::into))?,
            ),
            (
                "authority",
                latest::HostOutgoingRequest::set_authority(self, at(), authority)?,
            ),
        ];
        if let Some((what, _)) = set.iter().find(|(_, outcome)| outcome.is_err()) {
            latest::HostOutgoingRequest::drop(self, request)?;
            wasmtime::bail!("outgoing-request: invalid {what}");
        }
        Ok(request)
    }

    fn write(
        &mut self,
        request: Resource<OutgoingRequest>,
    ) -> wasmtime::Result<Result<Resource<OutgoingBody>, ()>> {
        latest::HostOutgoingRequest::body(self, request)
    }

    fn drop(&mut self, request: Resource<OutgoingRequest>) -> wasmtime::Result<()> {
        latest::HostOutgoingRequest::drop(self, request)
    }
}

impl types::HostResponseOutparam for WasiHttpCtxView<'_> {
    fn set(
        &mut self,
        param: Resource<ResponseOutparam>,
        response: Result<Resource<OutgoingResponse>, Error>,
    ) -> wasmtime::Result<()> {
        let response = response.map_err(|error| ErrorCode::InternalError(Some(error.to_string())));
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
    ) -> wasmtime::Result<Option<Result<Resource<Fields>, Error>>> {
        Ok(match latest::HostFutureTrailers::get(self, trailers)? {
            None => None,
            Some(Ok(Ok(Some(trailers)))) => Some(Ok(trailers)),
            // The candidate cannot say "no trailers": it gets empty ones.
            Some(Ok(Ok(None))) => Some(Ok(latest::HostFields::new(self)?)),
            Some(Ok(Err(error))) => Some(Err(error.into())),
            Some(Err(())) => wasmtime::bail!("future-trailers: already taken"),
        })
    }

    fn drop(&mut self, trailers: Resource<FutureTrailers>) -> wasmtime::Result<()> {
        latest::HostFutureTrailers::drop(self, trailers)
    }
}

impl types::HostOutgoingResponse for WasiHttpCtxView<'_> {
    fn new(
        &mut self,
        status: u16,
        headers: Resource<Fields>,
    ) -> wasmtime::Result<Resource<OutgoingResponse>> {
        let headers = latest::HostFields::clone(self, headers)?;
        let response = latest::HostOutgoingResponse::new(self, headers)?;
        if latest::HostOutgoingResponse::set_status_code(self, borrow(&response), status)?.is_err()
        {
            latest::HostOutgoingResponse::drop(self, response)?;
            wasmtime::bail!("outgoing-response: invalid status code {status}");
        }
        Ok(response)
    }

    fn write(
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
    ) -> wasmtime::Result<()> {
        latest::HostOutgoingBody::finish(self, body, trailers).map_err(trap)
    }

    fn drop(&mut self, body: Resource<OutgoingBody>) -> wasmtime::Result<()> {
        latest::HostOutgoingBody::drop(self, body)
    }
}

impl types::HostFutureIncomingResponse for WasiHttpCtxView<'_> {
    fn get(
        &mut self,
        response: Resource<FutureIncomingResponse>,
    ) -> wasmtime::Result<Option<Result<Result<Resource<IncomingResponse>, Error>, ()>>> {
        latest::HostFutureIncomingResponse::get(self, response)
            .map(|got| got.map(|taken| taken.map(|response| response.map_err(Error::from))))
    }

    fn subscribe(
        &mut self,
        response: Resource<FutureIncomingResponse>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        latest::HostFutureIncomingResponse::subscribe(self, response)
    }

    fn drop(&mut self, response: Resource<FutureIncomingResponse>) -> wasmtime::Result<()> {
        latest::HostFutureIncomingResponse::drop(self, response)
    }
}

impl outgoing_handler::Host for WasiHttpCtxView<'_> {
    fn handle(
        &mut self,
        request: Resource<OutgoingRequest>,
        options: Option<RequestOptions>,
    ) -> wasmtime::Result<Result<Resource<FutureIncomingResponse>, Error>> {
        let options = options
            .map(|options| self.request_options(options))
            .transpose()?;
        match latest_handler::Host::handle(self, request, options) {
            Ok(response) => Ok(Ok(response)),
            Err(error) => Ok(Err(error.downcast()?.into())),
        }
    }
}

pub(super) trait RequestOptionsExt {
    fn request_options(
        &mut self,
        options: RequestOptions,
    ) -> wasmtime::Result<Resource<latest::RequestOptions>>;
}

impl RequestOptionsExt for WasiHttpCtxView<'_> {
    /// The candidate's record of milliseconds as 0.2's resource of nanoseconds.
    fn request_options(
        &mut self,
        options: RequestOptions,
    ) -> wasmtime::Result<Resource<latest::RequestOptions>> {
        let made = latest::HostRequestOptions::new(self)?;
        let nanos = |ms: Option<u32>| ms.map(|ms| u64::from(ms) * 1_000_000);
        let set = [
            latest::HostRequestOptions::set_connect_timeout(
                self,
                borrow(&made),
                nanos(options.connect_timeout_ms),
            )?,
            latest::HostRequestOptions::set_first_byte_timeout(
                self,
                borrow(&made),
                nanos(options.first_byte_timeout_ms),
            )?,
            latest::HostRequestOptions::set_between_bytes_timeout(
                self,
                borrow(&made),
                nanos(options.between_bytes_timeout_ms),
            )?,
        ];
        if set.iter().any(Result::is_err) {
            latest::HostRequestOptions::drop(self, made)?;
            wasmtime::bail!("request-options: a timeout out of range");
        }
        Ok(made)
    }
}

impl From<latest::Method> for Method {
    fn from(method: latest::Method) -> Self {
        use latest::Method as M;
        match method {
            M::Get => Method::Get,
            M::Head => Method::Head,
            M::Post => Method::Post,
            M::Put => Method::Put,
            M::Delete => Method::Delete,
            M::Connect => Method::Connect,
            M::Options => Method::Options,
            M::Trace => Method::Trace,
            M::Patch => Method::Patch,
            M::Other(other) => Method::Other(other),
        }
    }
}

impl From<Method> for latest::Method {
    fn from(method: Method) -> Self {
        use latest::Method as M;
        match method {
            Method::Get => M::Get,
            Method::Head => M::Head,
            Method::Post => M::Post,
            Method::Put => M::Put,
            Method::Delete => M::Delete,
            Method::Connect => M::Connect,
            Method::Options => M::Options,
            Method::Trace => M::Trace,
            Method::Patch => M::Patch,
            Method::Other(other) => M::Other(other),
        }
    }
}

impl From<latest::Scheme> for Scheme {
    fn from(scheme: latest::Scheme) -> Self {
        match scheme {
            latest::Scheme::Http => Scheme::Http,
            latest::Scheme::Https => Scheme::Https,
            latest::Scheme::Other(other) => Scheme::Other(other),
        }
    }
}

impl From<Scheme> for latest::Scheme {
    fn from(scheme: Scheme) -> Self {
        match scheme {
            Scheme::Http => latest::Scheme::Http,
            Scheme::Https => latest::Scheme::Https,
            Scheme::Other(other) => latest::Scheme::Other(other),
        }
    }
}

/// 0.2's error codes in the candidate's four kinds, each with 0.2's words
/// (`HTTP-request-denied`, ...), so a guest sees what went wrong.
impl From<ErrorCode> for Error {
    fn from(code: ErrorCode) -> Self {
        let words = code.to_string();
        match code {
            ErrorCode::HttpRequestUriInvalid | ErrorCode::HttpRequestUriTooLong => {
                Error::InvalidUrl(words)
            }
            ErrorCode::ConnectionTimeout
            | ErrorCode::ConnectionReadTimeout
            | ErrorCode::ConnectionWriteTimeout => Error::TimeoutError(words),
            ErrorCode::HttpProtocolError => Error::ProtocolError(words),
            _ => Error::UnexpectedError(words),
        }
    }
}

/// A 0.2 error the candidate has no way to return: the guest traps.
fn trap(error: impl std::fmt::Display) -> wasmtime::Error {
    wasmtime::format_err!("{error}")
}

/// A borrow of an owned handle, for a 0.2 function that takes one.
fn borrow<R: 'static>(resource: &Resource<R>) -> Resource<R> {
    Resource::new_borrow(resource.rep())
}
