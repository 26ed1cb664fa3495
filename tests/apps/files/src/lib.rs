//! Does with its mounted files what the request asks, and answers with what
//! came of it, so that tests/tests/files.rs can assert what the guest sees:
//!
//! - `/read?<path>`: `200` and the file's bytes, or `404` and `error=<error>`;
//! - `/list?<path>`: `200` and the directory's entries, sorted, one a line,
//!   directories ending in `/`; or `404` and `error=<error>`;
//! - `/write?<path>`: creates or truncates `<path>` and writes to it: `200
//!   wrote` if that worked (it must not: mounts are read-only), else `403` and
//!   `error=<error>`.
//!
//! Plain `std::fs`: wasi-libc finds the files through the host's preopens.

// `#[http_component]` expands to the component's exported ABI (`export_name`, unsafe
// blocks), which wit-bindgen generates from the WIT and the canonical ABI.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    use spin_sdk::http::{IntoResponse, Request, Response};
    use spin_sdk::http_component;

    #[http_component]
    async fn handle(req: Request) -> impl IntoResponse {
        let path = req.query().to_string();
        let (status, body) = match req.path() {
            "/read" => answer(std::fs::read(&path), 404),
            "/list" => answer(super::list(&path).map(String::into_bytes), 404),
            "/write" => answer(
                std::fs::write(&path, "written").map(|()| b"wrote".to_vec()),
                403,
            ),
            _ => (404, b"no such test".to_vec()),
        };
        Response::new(status, body)
    }

    fn answer(result: std::io::Result<Vec<u8>>, failed: u16) -> (u16, Vec<u8>) {
        match result {
            Ok(body) => (200, body),
            Err(error) => (failed, format!("error={error}").into_bytes()),
        }
    }
}

/// A directory's entries, sorted, one a line, directories ending in `/`.
pub fn list(path: &str) -> std::io::Result<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        let mut name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type()?.is_dir() {
            name.push('/');
        }
        names.push(name);
    }
    names.sort();
    Ok(names.join("\n"))
}
