use spin_sdk::http::{IncomingRequest, ResponseOutparam};
use spin_sdk::http_component;

#[http_component]
async fn handle(req: IncomingRequest, out: ResponseOutparam) {
    glue::component::serve(&crate::ENDPOINT, req, out).await
}
