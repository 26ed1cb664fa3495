//! WAGI (`executor = { type = "wagi" }`): a WASI command module run once per
//! request as a CGI script, as Spin 4.0.2 runs it (spinframework/spin v4.0.2
//! `crates/trigger-http/src/wagi.rs`): made a component with the WASI preview1
//! *command* adapter at load (`prepare`), given the request as its command
//! line, environment and stdin (`cgi`), its stdout read back as the response.
//! The whole body is read before the program starts (CGI has no streaming),
//! into one buffer as it arrives, and the program's stdin is that buffer;
//! its stdout is kept up to `--max-wagi-output` and the response's body is
//! that buffer's own bytes: each is held once (both were copied three times
//! before). The store, its limits and its deadline are a fresh WASIp2
//! request's.

mod cgi;

use super::Body;
use super::invoke::Failure;
use super::state::{Cgi, RequestState, StoreRecipe, new_cgi_store};
use bytes::{Bytes, BytesMut};
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use wasmtime::component::InstancePre;
use wasmtime_wasi::p2::bindings::CommandPre;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;

/// A WAGI component, ready to run per request.
pub struct Wagi {
    pre: CommandPre<RequestState>,
    /// The trigger's `argv` template.
    argv: String,
}

impl Wagi {
    pub fn new(pre: InstancePre<RequestState>, argv: String) -> wasmtime::Result<Self> {
        Ok(Self {
            pre: CommandPre::new(pre)?,
            argv,
        })
    }

    /// Runs the program on `request` (its `spin-*` headers set) in a fresh store.
    pub async fn handle<B>(
        &self,
        request: Request<B>,
        recipe: &StoreRecipe,
    ) -> Result<Response<Body>, Failure>
    where
        B: hyper::body::Body<Data = Bytes> + Send + 'static,
    {
        let limit = recipe.limits.timeout;
        let max_output = recipe.limits.guest.max_wagi_output;
        let (parts, body) = request.into_parts();
        // A body past its limit or stalled is reported by the front (its fault cell).
        let body = tokio::time::timeout(limit, read_body(body))
            .await
            .map_err(|_| Failure::Timeout(limit))?
            .ok_or(Failure::NoResponse)?;
        // One byte past the cap tells a program that wrote too much from one
        // that wrote exactly as much.
        let stdout = MemoryOutputPipe::new(max_output.saturating_add(1));
        let cgi = Cgi {
            arguments: cgi::arguments(&self.argv, &parts.uri),
            environment: cgi::environment(&parts, body.len()),
            stdin: body,
            stdout: stdout.clone(),
        };
        let mut store = new_cgi_store(self.pre.engine(), recipe, cgi).map_err(Failure::Trapped)?;
        let command = self
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| Failure::from_wasmtime(e, limit))?;
        match command.wasi_cli_run().call_run(&mut store).await {
            // `Err(())` is the program's exit status 1: Spin answers from its
            // output all the same.
            Ok(_) => {}
            Err(error) if exited_successfully(&error) => {}
            Err(error) => return Err(Failure::from_wasmtime(error, limit)),
        }
        drop(store);
        let output = stdout.try_into_inner().unwrap_or_default();
        if output.len() > max_output {
            return Err(Failure::Trapped(wasmtime::format_err!(
                "the WAGI program wrote more than {max_output} bytes to stdout (--max-wagi-output)"
            )));
        }
        let response = cgi::response(output).map_err(|error| match error {
            cgi::CgiError::NoOutput => Failure::NoResponse,
            cgi::CgiError::InvalidHeader(text) => {
                Failure::Trapped(wasmtime::format_err!("invalid CGI header {text}"))
            }
        })?;
        Ok(response.map(|body| {
            Full::new(body)
                .map_err(|never| match never {})
                .boxed_unsync()
        }))
    }
}

/// The whole body, each frame copied once into one buffer as it arrives;
/// `None` if it failed (the front knows why).
async fn read_body<B: hyper::body::Body<Data = Bytes>>(body: B) -> Option<Bytes> {
    let mut body = std::pin::pin!(body);
    let mut buffer =
        BytesMut::with_capacity(usize::try_from(body.size_hint().lower()).unwrap_or(0));
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.ok()?.into_data() {
            buffer.extend_from_slice(&data);
        }
    }
    Some(buffer.freeze())
}

/// Whether the program ended by `exit(0)`, which wasmtime reports as an error.
fn exited_successfully(error: &wasmtime::Error) -> bool {
    error
        .downcast_ref::<wasmtime_wasi::I32Exit>()
        .is_some_and(|exit| exit.0 == 0)
}
