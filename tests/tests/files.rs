//! `files` and `exclude_files` as `spin up` (4.0.2) mounts them, through
//! tests/apps/files (plain `std::fs` in a spin-sdk 5 component): each form of
//! entry placed where Spin places it, an excluded file absent, the mount
//! read-only, a copy taken at start (a later change on the host is not seen),
//! nothing visible to a component without `files`, and a bad entry stopping
//! the start in one line.

use e2e::{Server, get, serve_until_exit, workspace_root};
use std::path::{Path, PathBuf};

const APP: &str = "tests/apps/files";
const WASM: &str = "target/wasm32-wasip2/release/files_app.wasm";

fn wasm() -> PathBuf {
    let wasm = workspace_root().join(WASM);
    assert!(wasm.exists(), "{WASM} is not built: run `make build` first");
    wasm
}

/// `status` and body of `GET <path>`.
fn ask(server: &Server, path: &str) -> (u16, String) {
    let answer = get(&server.url(path));
    (answer.status, answer.text())
}

/// A manifest in `dir` serving the test component with `component_lines`
/// (TOML) in its table.
fn manifest(dir: &Path, component_lines: &str) -> PathBuf {
    let path = dir.join("spin.toml");
    std::fs::write(
        &path,
        format!(
            "spin_manifest_version = 2\n[application]\nname = \"files\"\n\
             [[trigger.http]]\nroute = \"/...\"\ncomponent = \"files\"\n\
             [component.files]\nsource = {:?}\n{component_lines}\n",
            wasm().display().to_string()
        ),
    )
    .unwrap();
    path
}

#[test]
fn the_guest_reads_each_entry_where_spin_places_it() {
    wasm();
    let server = Server::runner_with(&workspace_root().join(APP).join("spin.toml"), &[]);
    for (path, content) in [
        // A glob: at the path from the manifest's directory.
        ("/static/hello.txt", "Hello from a mounted file\n"),
        ("/static/css/site.css", "body { margin: 0 }\n"),
        // A directory placed at `/data`, its subdirectory kept.
        ("/data/one.txt", "one\n"),
        ("/data/nested/two.txt", "two\n"),
        // One file placed.
        ("/readme.txt", "placed alone\n"),
    ] {
        assert_eq!(
            ask(&server, &format!("/read?{path}")),
            (200, content.to_string()),
            "{path}"
        );
    }
    assert_eq!(
        ask(&server, "/list?/"),
        (200, "data/\nreadme.txt\nstatic/".to_string())
    );
    // `exclude_files` dropped static/private/secret.txt: not even its directory.
    assert_eq!(
        ask(&server, "/list?/static"),
        (200, "css/\nhello.txt".to_string())
    );
    // What no entry names is not there: the manifest, the sources' own places.
    for path in [
        "/static/private/secret.txt",
        "/spin.toml",
        "/assets/one.txt",
        "/notes/readme.txt",
    ] {
        let (status, body) = ask(&server, &format!("/read?{path}"));
        assert_eq!(status, 404, "{path}: {body}");
    }
    // Nor can the guest climb out of its root.
    let (status, _) = ask(&server, "/read?/../../../../etc/hostname");
    assert_eq!(status, 404);
}

#[test]
fn mounted_files_are_read_only() {
    wasm();
    let app = workspace_root().join(APP);
    let server = Server::runner_with(&app.join("spin.toml"), &[]);
    for path in [
        "/static/hello.txt",
        "/static/new.txt",
        "/data/new.txt",
        "/new.txt",
    ] {
        let (status, body) = ask(&server, &format!("/write?{path}"));
        assert_eq!(status, 403, "{path}: {body}");
        assert!(body.starts_with("error="), "{path}: {body}");
    }
    // Nothing changed, for the guest or on the host.
    assert_eq!(
        ask(&server, "/read?/static/hello.txt"),
        (200, "Hello from a mounted file\n".to_string())
    );
    assert_eq!(ask(&server, "/read?/static/new.txt").0, 404);
    assert_eq!(
        std::fs::read_to_string(app.join("static/hello.txt")).unwrap(),
        "Hello from a mounted file\n"
    );
    assert!(!app.join("static/new.txt").exists());
}

#[test]
fn files_are_copied_at_start_as_spin_copies_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("page.html"), "first").unwrap();
    let path = manifest(dir.path(), "files = [\"*.html\"]");
    let server = Server::runner_with(&path, &[]);
    assert_eq!(ask(&server, "/read?/page.html"), (200, "first".to_string()));
    // The guest sees the copy taken at start, not the host file.
    std::fs::write(dir.path().join("page.html"), "changed").unwrap();
    std::fs::write(dir.path().join("late.html"), "late").unwrap();
    assert_eq!(ask(&server, "/read?/page.html"), (200, "first".to_string()));
    assert_eq!(ask(&server, "/read?/late.html").0, 404);
}

#[test]
fn a_component_without_files_sees_no_filesystem() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("page.html"), "not mounted").unwrap();
    let path = manifest(dir.path(), "");
    let server = Server::runner_with(&path, &[]);
    assert_eq!(ask(&server, "/list?/").0, 404);
    assert_eq!(ask(&server, "/read?/page.html").0, 404);
    assert_eq!(ask(&server, "/read?page.html").0, 404);
}

#[test]
fn a_bad_entry_stops_the_start_in_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("page.html"), "x").unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let outside = elsewhere.path().join("outside.txt");
    std::fs::write(&outside, "outside").unwrap();
    for (lines, says) in [
        (
            "files = [{ source = \"missing\", destination = \"/m\" }]".to_string(),
            "File or directory \"missing\" does not exist",
        ),
        (
            "files = [\"missing.html\"]".to_string(),
            "\"missing.html\" does not exist and doesn't appear to be a glob pattern",
        ),
        (
            format!("files = [{:?}]", outside.display().to_string()),
            "outside the application directory",
        ),
        (
            "files = [{ source = \"page.html\", destination = \"/\" }]".to_string(),
            "\"/\" is not a valid destination file name",
        ),
        (
            "files = [\"*.html\"]\nexclude_files = [\"[\"]".to_string(),
            "Invalid exclude_files glob pattern",
        ),
    ] {
        let path = manifest(dir.path(), &lines);
        let (status, output) = serve_until_exit(&path, &[]).expect("the runner exits");
        assert!(!status.success(), "{lines}: {output}");
        let line = output
            .lines()
            .find(|line| line.contains(says))
            .unwrap_or_else(|| panic!("{lines}: no line says {says:?}: {output}"));
        assert!(line.contains("component \"files\""), "{line}");
    }
}
