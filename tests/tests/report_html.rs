//! The report as a person opens it: `report.html` of a `compare` run and the
//! page of `spinbench diff --html`, rendered by a real browser (headless
//! Chromium, Debian's `chromium`, which .ci/run installs). Each page must be
//! self-contained and static (no script, nothing fetched); the browser's DOM
//! after rendering must hold its sections in order (headline, charts,
//! warnings, how the run was made); and in a screenshot of the page every
//! chart must have drawn: its box on the page holds the chart's axes, text
//! and coloured series, not a blank.
//!
//! Where each chart is on the page is read from a copy of the page with a
//! script added (the test's, never the report's); the screenshot is of the
//! page itself, at the same width, so the boxes are the same.

use e2e::{compare_into, on_path, workspace_root};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long one Chromium run may take before it counts as hung.
const CHROMIUM_WITHIN: Duration = Duration::from_secs(90);
/// The page's width in the browser, in CSS pixels (one pixel each in the screenshot).
const WIDTH: u32 = 1280;
/// The tallest screenshot taken (a page taller is cut; its charts must be above the cut).
const MAX_HEIGHT: u32 = 16_000;

/// Chromium's program, if installed.
fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find_map(on_path)
}

/// Runs Chromium headless on `page` with `args` (a fresh profile, nothing
/// from the network: the machine may have none, and the page must need none),
/// killed with everything it started if it takes longer than [`CHROMIUM_WITHIN`].
fn run_chromium(program: &Path, page: &Path, args: &[String]) -> Output {
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(program);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .args(args)
    .arg(format!("file://{}", page.display()))
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .process_group(0);
    let child = cmd.spawn().expect("chromium starts");
    let pgid = child.id();
    // The output is read on a thread so that a full pipe cannot stall the browser.
    let waiter = std::thread::spawn(move || child.wait_with_output());
    let started = Instant::now();
    while !waiter.is_finished() {
        if started.elapsed() > CHROMIUM_WITHIN {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{pgid}")])
                .status();
            let _ = waiter.join();
            panic!(
                "chromium {args:?} on {} took over {CHROMIUM_WITHIN:?}",
                page.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = waiter.join().unwrap().expect("chromium's output");
    assert!(
        output.status.success(),
        "chromium {args:?}: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The page's DOM after the browser rendered it, as text.
fn rendered_dom(program: &Path, page: &Path) -> String {
    let out = run_chromium(
        program,
        page,
        &[format!("--window-size={WIDTH},900"), "--dump-dom".into()],
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A chart's box on the page, in CSS pixels from the document's top left.
#[derive(Debug)]
struct Placed {
    id: String,
    x: u32,
    y: u32,
    width: u32,
    height: u32,
}

/// Where each chart's SVG is on the page, and the page's height: read from
/// a copy of the page with the test's script added at the end of its body.
fn layout(program: &Path, page: &Path) -> (Vec<Placed>, u32) {
    const SCRIPT: &str = r"<pre id='spinbench-layout'></pre><script>
const boxes = [...document.querySelectorAll('figure.chart')].map(f => {
  const r = f.querySelector('svg').getBoundingClientRect();
  return [f.id, Math.round(r.left + scrollX), Math.round(r.top + scrollY), Math.round(r.width), Math.round(r.height)].join(' ');
});
boxes.push('height ' + Math.ceil(document.documentElement.getBoundingClientRect().height));
document.getElementById('spinbench-layout').textContent = boxes.join(';');
</script>";
    let html = std::fs::read_to_string(page).unwrap();
    let probed = page.with_extension("layout.html");
    std::fs::write(
        &probed,
        html.replace("</body>", &format!("{SCRIPT}</body>")),
    )
    .unwrap();
    let dom = rendered_dom(program, &probed);
    std::fs::remove_file(&probed).unwrap();
    let text = dom
        .split("<pre id=\"spinbench-layout\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_else(|| panic!("no layout in the probed page's DOM:\n{dom}"));
    let mut height = 0;
    let mut placed = Vec::new();
    for entry in text.split(';') {
        let words: Vec<&str> = entry.split(' ').collect();
        if let ["height", h] = words[..] {
            height = h.parse().unwrap();
            continue;
        }
        let n = |i: usize| -> u32 { words[i].parse().unwrap() };
        placed.push(Placed {
            id: words[0].to_string(),
            x: n(1),
            y: n(2),
            width: n(3),
            height: n(4),
        });
    }
    (placed, height)
}

/// A screenshot of the whole page (up to [`MAX_HEIGHT`]), decoded to RGB rows.
fn screenshot(program: &Path, page: &Path, height: u32, keep: &Path) -> Image {
    let height = height.clamp(600, MAX_HEIGHT);
    run_chromium(
        program,
        page,
        &[
            format!("--window-size={WIDTH},{height}"),
            format!("--screenshot={}", keep.display()),
        ],
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(keep).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    let channels = info.color_type.samples();
    assert!(channels >= 3, "a colour screenshot: {:?}", info.color_type);
    Image {
        width: info.width,
        height: info.height,
        channels,
        pixels,
    }
}

struct Image {
    width: u32,
    height: u32,
    channels: usize,
    pixels: Vec<u8>,
}

impl Image {
    fn rgb(&self, x: u32, y: u32) -> [u8; 3] {
        let at = (y as usize * self.width as usize + x as usize) * self.channels;
        [self.pixels[at], self.pixels[at + 1], self.pixels[at + 2]]
    }

    /// In the box: the share of pixels that are not white, and how many are
    /// clearly coloured (a series, not black text or grey grid lines).
    fn ink(&self, b: &Placed) -> (f64, usize) {
        let (mut inked, mut coloured, mut all) = (0usize, 0usize, 0usize);
        for y in b.y..(b.y + b.height).min(self.height) {
            for x in b.x..(b.x + b.width).min(self.width) {
                let [r, g, bl] = self.rgb(x, y);
                all += 1;
                if r.min(g).min(bl) < 235 {
                    inked += 1;
                }
                if r.max(g).max(bl) - r.min(g).min(bl) > 80 {
                    coloured += 1;
                }
            }
        }
        (inked as f64 / all.max(1) as f64, coloured)
    }
}

/// The page needs nothing but itself: no script, no external resource.
fn assert_self_contained(html: &str, page: &Path) {
    let lower = html.to_ascii_lowercase();
    for banned in [
        "<script",
        "src=\"http",
        "href=\"http",
        "url(",
        "@import",
        "<link",
        "<iframe",
        "<img",
    ] {
        assert!(
            !lower.contains(banned),
            "{} has {banned:?}: not self-contained",
            page.display()
        );
    }
}

/// The page in the browser: its sections in order, each expected text
/// there, and every chart drawn in its screenshot (kept beside the page).
fn assert_renders(page: &Path, charts: usize, texts: &[&str]) {
    let Some(program) = chromium() else {
        eprintln!("skipped: chromium is not on PATH (.ci/run installs Debian's chromium)");
        return;
    };
    let html = std::fs::read_to_string(page).unwrap();
    assert_self_contained(&html, page);

    let dom = rendered_dom(&program, page);
    let at = |text: &str| {
        dom.find(text)
            .unwrap_or_else(|| panic!("{text:?} not in the rendered page {}", page.display()))
    };
    let sections = [
        "id=\"headline\"",
        "id=\"charts\"",
        "id=\"warnings\"",
        "id=\"how\"",
    ];
    let order: Vec<usize> = sections.iter().map(|s| at(s)).collect();
    assert!(
        order.is_sorted(),
        "sections out of order: {sections:?} at {order:?}"
    );
    for text in texts {
        at(text);
    }

    let (placed, height) = layout(&program, page);
    assert_eq!(placed.len(), charts, "charts on the page: {placed:?}");
    // A long page (a diff lists every figure of both runs) is shot down to
    // MAX_HEIGHT: the charts come before the full tables, and each must be in it.
    let image = screenshot(&program, page, height, &page.with_extension("png"));
    for chart in &placed {
        assert!(
            chart.width >= 300 && chart.height >= 150,
            "{} laid out at {}x{}",
            chart.id,
            chart.width,
            chart.height
        );
        assert!(
            chart.y + chart.height <= image.height,
            "{} below the screenshot",
            chart.id
        );
        let (ink, coloured) = image.ink(chart);
        assert!(
            ink > 0.02 && coloured > 50,
            "{} did not draw: {:.1} % of its box inked, {coloured} coloured pixels (screenshot: {})",
            chart.id,
            ink * 100.0,
            page.with_extension("png").display()
        );
    }
}

/// A quick run of hello and io on native and wasm: every kind of chart
/// (instance cold start distributions, memory per instance, load relative
/// to native) in one page with the headline, warnings and how it was made.
#[test]
fn a_compare_report_renders_in_a_browser_with_every_chart() {
    let results = workspace_root().join(format!(
        "target/e2e-results/report-html-{}",
        std::process::id()
    ));
    let (_, json) = compare_into(
        &results,
        &[
            "--quick",
            "--functions",
            "hello,io",
            "--hosts",
            "native,wasm",
        ],
    );
    let dir = json.parent().unwrap();
    let page = dir.join("report.html");
    let svgs = std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "svg")
        })
        .count();
    // hello's and io's cold starts, memory per instance, three load charts.
    assert_eq!(svgs, 6, "charts in {}", dir.display());
    assert_renders(
        &page,
        svgs,
        &[
            "Headline",
            "server CPU per request (us)",
            "fresh instance, in process (us)",
            "hello: instance cold start",
            "memory per live instance",
            "How the run was made",
            "hosts.log",
            "--functions hello,io",
        ],
    );
}

/// `spinbench diff --html` of two committed runs: what moved, its chart,
/// and how both runs were made.
#[test]
fn a_diff_of_two_runs_renders_in_a_browser() {
    let root = workspace_root();
    let old = root.join("docs/results/20261202-200812/report.json");
    let new = root.join("docs/results/20261204-145955/report.json");
    let out = tempfile::tempdir().unwrap();
    let page = out.path().join("diff.html");
    let run = Command::new(e2e::artifact("release/spinbench"))
        .args(["diff"])
        .args([&old, &new])
        .arg("--html")
        .arg(&page)
        .output()
        .expect("spinbench diff runs");
    assert!(run.status.success(), "{run:?}");
    assert!(
        String::from_utf8_lossy(&run.stdout).contains(&format!("open: {}", page.display())),
        "{run:?}"
    );
    assert_renders(
        &page,
        1,
        &[
            "what moved beyond both runs",
            "% worse",
            "% better",
            "20261202-200812",
            "How the runs were made",
            "target/release/spinbench compare",
        ],
    );
}

/// The check itself: a page whose chart is a blank SVG of a chart's size
/// fails it (the same page check as above, on a page made to fail).
#[test]
fn a_chart_that_did_not_draw_fails_the_check() {
    if chromium().is_none() {
        eprintln!("skipped: chromium is not on PATH (.ci/run installs Debian's chromium)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("blank.html");
    std::fs::write(
        &page,
        "<!doctype html><html><body><h2 id=\"headline\">Headline</h2>\
         <h2 id=\"charts\">Charts</h2><figure class=\"chart\" id=\"blank\">\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"800\" height=\"400\"></svg></figure>\
         <h2 id=\"warnings\">Warnings</h2><h2 id=\"how\">How</h2></body></html>",
    )
    .unwrap();
    let failed = std::panic::catch_unwind(|| assert_renders(&page, 1, &["Headline"]))
        .expect_err("a blank chart passed the check");
    let message = failed.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("blank did not draw"), "{message}");
}
