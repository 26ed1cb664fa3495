//! Reports as one page to open in a browser: `report.html` beside
//! `report.md` (`compare`, `load`), and `spinbench diff --html` for two runs.
//! Self-contained and static: the style and the charts (SVG) inline, no
//! script, nothing fetched, so it reads the same offline, attached to a mail
//! or from a CI artifact. Every text from a report is escaped.
//!
//! A page is its headline table first, then its charts, its warnings, its
//! full tables and how the run was made.

mod compare;
mod diff;

pub use compare::report;
pub use diff::diff;

use std::fmt::Write as _;

/// The page's style: readable on a laptop and when printed, charts scaled to fit.
const STYLE: &str = "
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #222; }
h1 { margin-bottom: 0.2rem; }
.subtitle { color: #555; margin-top: 0; }
.quick { background: #fff4ce; padding: 0.4rem 0.8rem; border-left: 4px solid #e0a800; }
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.92rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: right; white-space: nowrap; }
th { background: #f2f2f2; }
td.label, th.label { text-align: left; }
figure.chart { margin: 1.2rem 0; }
figure.chart svg { display: block; max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { color: #555; font-size: 0.9rem; margin-top: 0.3rem; }
ul.warnings li { margin-bottom: 0.4rem; }
ul.notes { color: #555; font-size: 0.88rem; }
dl.how { display: grid; grid-template-columns: max-content auto; gap: 0.25rem 1rem; }
dl.how dt { font-weight: 600; }
dl.how dd { margin: 0; }
code { background: #f4f4f4; padding: 0 0.2rem; }
";

/// `text` safe as HTML text and as a quoted attribute value.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A page being written: its sections in order.
struct Page {
    body: String,
}

impl Page {
    fn new(title: &str, subtitle: &str) -> Page {
        let mut body = String::new();
        let _ = write!(
            body,
            "<h1>{}</h1>\n<p class=\"subtitle\">{}</p>\n",
            escape(title),
            escape(subtitle)
        );
        Page { body }
    }

    /// A paragraph of `class` (e.g. `quick`).
    fn note(&mut self, class: &str, text: &str) {
        let _ = writeln!(self.body, "<p class=\"{class}\">{}</p>", escape(text));
    }

    fn section(&mut self, id: &str, title: &str) {
        let _ = writeln!(self.body, "<h2 id=\"{id}\">{}</h2>", escape(title));
    }

    fn heading(&mut self, title: &str) {
        let _ = writeln!(self.body, "<h3>{}</h3>", escape(title));
    }

    fn paragraph(&mut self, text: &str) {
        let _ = writeln!(self.body, "<p>{}</p>", escape(text));
    }

    /// A table; the first `labels` columns are text (left-aligned), the rest figures.
    fn table(&mut self, header: &[String], rows: &[Vec<String>], labels: usize) {
        let class = |i: usize| if i < labels { " class=\"label\"" } else { "" };
        self.body.push_str("<table>\n<tr>");
        for (i, h) in header.iter().enumerate() {
            let _ = write!(self.body, "<th{}>{}</th>", class(i), escape(h));
        }
        self.body.push_str("</tr>\n");
        for row in rows {
            self.body.push_str("<tr>");
            for (i, cell) in row.iter().enumerate() {
                let _ = write!(self.body, "<td{}>{}</td>", class(i), escape(cell));
            }
            self.body.push_str("</tr>\n");
        }
        self.body.push_str("</table>\n");
    }

    /// A list of `class` (`warnings`, `notes`).
    fn list(&mut self, class: &str, items: &[String]) {
        let _ = writeln!(self.body, "<ul class=\"{class}\">");
        for item in items {
            let _ = writeln!(self.body, "<li>{}</li>", escape(item));
        }
        self.body.push_str("</ul>\n");
    }

    /// A chart: its SVG inline (plotters escapes its texts), its title below.
    /// The figure's id is its file's stem (`chart-load-throughput`).
    fn chart(&mut self, file: &str, title: &str, svg: &str) {
        let stem = file.strip_suffix(".svg").unwrap_or(file);
        let _ = write!(
            self.body,
            "<figure class=\"chart\" id=\"chart-{}\">\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
            escape(stem),
            svg.trim(),
            escape(title)
        );
    }

    /// Term and description pairs.
    fn definitions(&mut self, pairs: &[(&str, String)]) {
        self.body.push_str("<dl class=\"how\">\n");
        for (term, description) in pairs {
            let _ = writeln!(
                self.body,
                "<dt>{}</dt><dd>{}</dd>",
                escape(term),
                escape(description)
            );
        }
        self.body.push_str("</dl>\n");
    }

    /// The whole document.
    fn finish(self, title: &str) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
            escape(title),
            self.body
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text from a report cannot become markup: a host's stderr line in a
    /// skip reason stays text.
    #[test]
    fn text_is_escaped() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"y\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;y&quot;"
        );
        let mut page = Page::new("t", "s");
        page.list("warnings", &["<img src=x onerror=alert(1)>".into()]);
        page.table(&["<b>".into()], &[vec!["<i>".into()]], 1);
        let html = page.finish("<title>");
        assert!(!html.contains("<img") && !html.contains("<b>") && !html.contains("<i>"));
        assert!(html.contains("<title>&lt;title&gt;</title>"));
    }
}
