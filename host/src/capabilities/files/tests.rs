//! How `files` and `exclude_files` resolve, case by case as Spin 4.0.2 resolves
//! them (`crates/loader/src/local.rs`), on a small application directory.

use super::*;
use std::collections::BTreeSet;
use std::fs;

/// `<tmp>/app` holding a manifest, a file, and `static/` with a subdirectory
/// and a secret; `<tmp>/sibling/s.txt` beside it, outside the app.
struct App {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
}

fn app() -> App {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("app");
    for (path, text) in [
        ("spin.toml", "manifest"),
        ("single.txt", "single"),
        ("static/a.txt", "a"),
        ("static/b.css", "b"),
        ("static/sub/c.txt", "c"),
        ("static/secret/key.pem", "key"),
        ("static/empty/.keep", ""),
        ("../sibling/s.txt", "sibling"),
    ] {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    App { _tmp: tmp, dir }
}

fn pattern(p: &str) -> FilesMount {
    FilesMount::Pattern(p.to_string())
}

fn placement(source: &str, destination: &str) -> FilesMount {
    FilesMount::Placement {
        source: source.to_string(),
        destination: destination.to_string(),
    }
}

impl App {
    fn resolve(&self, files: &[FilesMount], exclude: &[&str]) -> Result<Vec<Entry>> {
        let exclude: Vec<String> = exclude.iter().map(ToString::to_string).collect();
        resolve(&Boundary::new(&self.dir, None)?, files, &exclude)
    }

    /// The files placed: (source from the app directory, destination).
    fn placed(&self, files: &[FilesMount], exclude: &[&str]) -> BTreeSet<(String, String)> {
        self.resolve(files, exclude)
            .unwrap()
            .into_iter()
            .filter_map(|entry| match entry {
                Entry::File {
                    source,
                    destination,
                    ..
                } => Some((
                    source
                        .strip_prefix(&self.dir)
                        .unwrap()
                        .display()
                        .to_string(),
                    destination.display().to_string(),
                )),
                Entry::Dir(_) => None,
            })
            .collect()
    }

    fn error(&self, files: &[FilesMount], exclude: &[&str]) -> String {
        format!("{:#}", self.resolve(files, exclude).unwrap_err())
    }
}

fn set(pairs: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    pairs
        .iter()
        .map(|(s, d)| ((*s).to_string(), (*d).to_string()))
        .collect()
}

#[test]
fn a_file_named_alone_is_placed_at_its_own_path() {
    let app = app();
    assert_eq!(
        app.placed(&[pattern("single.txt"), pattern("static/sub/c.txt")], &[]),
        set(&[
            ("single.txt", "single.txt"),
            ("static/sub/c.txt", "static/sub/c.txt")
        ])
    );
}

#[test]
fn a_glob_places_each_file_it_matches_and_may_match_nothing() {
    let app = app();
    assert_eq!(
        app.placed(&[pattern("static/*.txt")], &[]),
        set(&[("static/a.txt", "static/a.txt")])
    );
    assert_eq!(
        app.placed(&[pattern("static/**/*.txt")], &[]),
        set(&[
            ("static/a.txt", "static/a.txt"),
            ("static/sub/c.txt", "static/sub/c.txt")
        ])
    );
    // Matching nothing is no error in Spin: the guest just has no such files.
    assert_eq!(
        app.resolve(&[pattern("nothing/*.txt")], &[]).unwrap(),
        vec![Entry::Dir(PathBuf::new())]
    );
}

#[test]
fn a_directory_named_alone_lands_where_spin_4_0_2_puts_it() {
    // v4.0.2's copy_glob_or_path joins the destination to the pattern and
    // then to the path from the app root: `static/a.txt` at `/static/static/a.txt`.
    let app = app();
    let placed = app.placed(&[pattern("static")], &[]);
    assert!(
        placed.contains(&("static/a.txt".into(), "static/static/a.txt".into())),
        "{placed:?}"
    );
    assert!(placed.contains(&("static/sub/c.txt".into(), "static/static/sub/c.txt".into())));
}

#[test]
fn a_placed_directory_goes_under_its_destination() {
    let app = app();
    let placed = app.placed(&[placement("static/sub", "/assets")], &[]);
    assert_eq!(placed, set(&[("static/sub/c.txt", "assets/c.txt")]));
    let at_root = app.placed(&[placement("static", "/")], &[]);
    assert!(at_root.contains(&("static/a.txt".into(), "a.txt".into())));
    assert!(at_root.contains(&("static/sub/c.txt".into(), "sub/c.txt".into())));
    // The destination directory exists even when nothing lands in it.
    let entries = app
        .resolve(&[placement("static/sub", "/assets")], &["**/*"])
        .unwrap();
    assert_eq!(entries, vec![Entry::Dir("assets".into())]);
}

#[test]
fn a_placed_file_goes_to_its_destination_which_must_name_a_file() {
    let app = app();
    assert_eq!(
        app.placed(&[placement("single.txt", "/data/one.txt")], &[]),
        set(&[("single.txt", "data/one.txt")])
    );
    for destination in ["/", "/data/", "."] {
        let error = app.error(&[placement("single.txt", destination)], &[]);
        assert!(
            error.contains(&format!(
                "{destination:?} is not a valid destination file name"
            )),
            "{error}"
        );
    }
}

#[test]
fn exclude_files_drops_matches_from_globs_and_directories_only() {
    let app = app();
    let exclude = &["static/secret/*", "**/*.css"];
    let placed = app.placed(&[pattern("static/**/*")], exclude);
    assert_eq!(
        placed,
        set(&[
            ("static/a.txt", "static/a.txt"),
            ("static/empty/.keep", "static/empty/.keep"),
            ("static/sub/c.txt", "static/sub/c.txt")
        ])
    );
    // Matched against the path from the app directory, not from the source.
    let placed = app.placed(&[placement("static", "/")], exclude);
    assert!(!placed.iter().any(|(source, _)| source.contains("secret")));
    // A file named alone is copied even if excluded, as in Spin.
    assert_eq!(
        app.placed(&[pattern("static/secret/key.pem")], exclude),
        set(&[("static/secret/key.pem", "static/secret/key.pem")])
    );
}

#[test]
fn what_spin_refuses_is_refused_in_one_line_with_its_words() {
    let app = app();
    let sibling = app.dir.parent().unwrap().join("sibling");
    let absolute = sibling.join("s.txt").display().to_string();
    let cases = [
        (
            vec![pattern("missing.txt")],
            "\"missing.txt\" does not exist and doesn't appear to be a glob pattern",
        ),
        (
            vec![placement("missing", "/m")],
            "File or directory \"missing\" does not exist",
        ),
        (
            vec![pattern("static/..")],
            "can't end in a parent directory path",
        ),
        (vec![pattern("..")], "can't end in a parent directory path"),
        (
            vec![pattern("static/.")],
            "can't end in a current directory path",
        ),
        (
            vec![pattern(&absolute)],
            "outside the application directory",
        ),
        (
            vec![pattern(&format!("{}/*", sibling.display()))],
            "outside the application directory",
        ),
        (
            vec![placement(&absolute, "/s.txt")],
            "outside the application directory",
        ),
        (
            vec![pattern("../sibling/*")],
            "outside the application directory",
        ),
        (
            vec![placement("static", "/../up")],
            "outside the application directory",
        ),
        (vec![pattern("static/[")], "Failed to resolve glob pattern"),
    ];
    for (files, expected) in cases {
        let error = app.error(&files, &[]);
        assert!(error.contains(expected), "{files:?}: {error}");
        assert!(!error.contains('\n'), "one line: {error}");
    }
    let error = app.error(&[pattern("single.txt")], &["["]);
    assert!(
        error.contains("Invalid exclude_files glob pattern \"[\""),
        "{error}"
    );
}

#[test]
fn a_source_that_climbs_out_of_the_app_is_refused_wherever_it_leads() {
    // Spin checks the joined path as written (`app/../sibling/s.txt` starts
    // with `app`), so `spin up` mounts all of these; the app's directory is
    // the boundary here.
    let app = app();
    let sibling = app.dir.parent().unwrap().join("sibling");
    let climbs = "../".repeat(app.dir.components().count());
    for source in [
        "../sibling".to_string(),
        "static/../../sibling".to_string(),
        format!("{climbs}etc"),
        format!("{climbs}etc/hostname"),
        "/etc".to_string(),
        sibling.display().to_string(),
    ] {
        let error = app.error(&[placement(&source, "/x")], &[]);
        assert!(
            error.contains("outside the application directory") && error.contains("--files-root"),
            "{source}: {error}"
        );
    }
    // `..` that stays inside is only a spelling.
    assert_eq!(
        app.placed(&[placement("static/../static/sub", "/s")], &[]),
        set(&[("static/sub/c.txt", "s/c.txt")])
    );
}

#[test]
fn a_files_root_allows_spins_sibling_layout_and_nothing_beyond_it() {
    use std::os::unix::fs::symlink;
    let app = app();
    let root = app.dir.parent().unwrap().to_path_buf();
    let boundary = Boundary::new(&app.dir, Some(&root)).unwrap();
    let files = [placement("../sibling", "/sibling")];
    let entries = resolve(&boundary, &files, &[]).unwrap();
    assert!(entries.iter().any(|entry| matches!(
        entry,
        Entry::File { source, destination, .. }
            if *source == root.join("sibling/s.txt") && destination == Path::new("sibling/s.txt")
    )));
    let mount = Mount::for_component(&app.dir, &files, &[], Some(&root))
        .unwrap()
        .unwrap();
    assert_eq!(
        fs::read_to_string(mount.root().join("sibling/s.txt")).unwrap(),
        "sibling"
    );
    // Above the root: refused as before.
    let error = resolve(&boundary, &[placement("../..", "/up")], &[]).unwrap_err();
    assert!(
        format!("{error}").contains("outside the application directory"),
        "{error}"
    );
    // A link in the sibling that leads above the root: refused at the copy.
    symlink("/etc/hostname", root.join("sibling/host")).unwrap();
    let error = Mount::for_component(&app.dir, &files, &[], Some(&root)).unwrap_err();
    assert!(format!("{error:#}").contains("leads outside"), "{error:#}");
    // The sibling itself a link out of the root: refused as well.
    let outer = tempfile::tempdir().unwrap();
    fs::write(outer.path().join("o.txt"), "outer").unwrap();
    symlink(outer.path(), root.join("elsewhere")).unwrap();
    let files = [placement("../elsewhere", "/e")];
    let error = Mount::for_component(&app.dir, &files, &[], Some(&root)).unwrap_err();
    assert!(format!("{error:#}").contains("lead"), "{error:#}");
}

#[test]
fn the_copy_holds_each_file_at_its_destination() {
    let app = app();
    assert!(
        Mount::for_component(&app.dir, &[], &["x".into()], None)
            .unwrap()
            .is_none()
    );
    let files = [pattern("single.txt"), placement("static", "/assets")];
    let mount = Mount::for_component(&app.dir, &files, &["static/secret/*".into()], None)
        .unwrap()
        .unwrap();
    let read = |path: &str| fs::read_to_string(mount.root().join(path)).unwrap();
    assert_eq!(read("single.txt"), "single");
    assert_eq!(read("assets/a.txt"), "a");
    assert_eq!(read("assets/sub/c.txt"), "c");
    assert!(!mount.root().join("assets/secret").exists());
    let root = mount.root().to_path_buf();
    drop(mount);
    assert!(!root.exists(), "the copy is removed with the application");
}

#[test]
fn each_store_opens_the_copy_and_fails_if_it_is_gone() {
    let app = app();
    let mount = Mount::for_component(&app.dir, &[pattern("single.txt")], &[], None)
        .unwrap()
        .unwrap();
    mount.preopen(&mut WasiCtxBuilder::new()).unwrap();
    // Opened per store: a copy removed from under the server fails that
    // store (a 500 for its request), never serves an empty root.
    fs::remove_dir_all(mount.root()).unwrap();
    assert!(mount.preopen(&mut WasiCtxBuilder::new()).is_err());
}

#[test]
fn links_are_followed_only_while_they_stay_inside_the_application() {
    use std::os::unix::fs::symlink;
    let app = app();
    let outside = app.dir.parent().unwrap().join("sibling/s.txt");
    symlink(&outside, app.dir.join("static/out.txt")).unwrap();
    symlink("/etc", app.dir.join("static/etc")).unwrap();
    let error =
        Mount::for_component(&app.dir, &[pattern("static/out.txt")], &[], None).unwrap_err();
    assert!(format!("{error:#}").contains("leads outside"), "{error:#}");
    for files in [[pattern("static/**/*")], [placement("static", "/")]] {
        let error = Mount::for_component(&app.dir, &files, &[], None).unwrap_err();
        assert!(
            format!("{error:#}").contains("outside"),
            "{files:?}: {error:#}"
        );
    }
    // A link that stays inside is served, as Spin serves it.
    fs::remove_file(app.dir.join("static/out.txt")).unwrap();
    fs::remove_file(app.dir.join("static/etc")).unwrap();
    symlink("../single.txt", app.dir.join("static/in.txt")).unwrap();
    let mount = Mount::for_component(&app.dir, &[pattern("static/**/*")], &[], None)
        .unwrap()
        .unwrap();
    assert_eq!(
        fs::read_to_string(mount.root().join("static/in.txt")).unwrap(),
        "single"
    );
    assert!(!mount.root().join("static/in.txt").is_symlink());
}

#[test]
fn a_file_with_a_hard_link_outside_the_application_is_refused() {
    let app = app();
    let outside = app.dir.parent().unwrap().join("sibling/s.txt");
    fs::hard_link(&outside, app.dir.join("static/linked.txt")).unwrap();
    let error = Mount::for_component(&app.dir, &[pattern("static/*.txt")], &[], None).unwrap_err();
    assert!(format!("{error:#}").contains("hard links"), "{error:#}");
    // Both names inside: served.
    fs::remove_file(app.dir.join("static/linked.txt")).unwrap();
    fs::hard_link(app.dir.join("single.txt"), app.dir.join("static/twin.txt")).unwrap();
    let mount = Mount::for_component(&app.dir, &[pattern("static/*.txt")], &[], None)
        .unwrap()
        .unwrap();
    assert_eq!(
        fs::read_to_string(mount.root().join("static/twin.txt")).unwrap(),
        "single"
    );
}
