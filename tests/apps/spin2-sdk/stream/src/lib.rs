//! The streaming component of the spin2-sdk app: spin-sdk 2.2's low-level
//! handler (`IncomingRequest`, `ResponseOutparam`), which Spin 2 users wrote to
//! stream bodies. `/stream` answers `200` at once and then, as each chunk of
//! the request body arrives, writes it back uppercased (ASCII), so that every
//! read waits on a `wasi:io` pollable and every write on the output stream's.

use futures::{SinkExt, StreamExt};
use spin_sdk::http::{Fields, IncomingRequest, OutgoingResponse, ResponseOutparam};
use spin_sdk::http_component;

#[http_component]
async fn handle_spin2_stream(req: IncomingRequest, out: ResponseOutparam) {
    let headers = Fields::new(&[
        ("content-type".to_string(), b"text/plain".to_vec()),
        ("x-spin2-stream".to_string(), b"chunks".to_vec()),
    ]);
    let response = OutgoingResponse::new(200, &headers);
    let mut body = response.take_body();
    out.set(response);
    let mut chunks = req.into_body_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(error) => {
                eprintln!("reading the request body: {error}");
                return;
            }
        };
        if let Err(error) = body.send(chunk.to_ascii_uppercase()).await {
            eprintln!("writing the response body: {error}");
            return;
        }
    }
}
