//! The book, built with mdBook (pinned; `./scripts/test` installs it into `target/tools/`) as a
//! reader gets it: every internal link and anchor resolves, nothing is loaded from the network
//! (checked in the files, and in a real Chromium that opens the first page and the load
//! chapter). `DYNO_BOOK_SCREENSHOTS=DIR` keeps the browser's screenshots there.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use testkit::browser::Browser;

/// mdBook, found on the `PATH` (where `./scripts/test` puts `target/tools/bin`).
fn mdbook() -> Option<PathBuf> {
    let on_path: Vec<String> = std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| format!("{d}/mdbook"))
        .collect();
    let candidates: Vec<&str> = on_path.iter().map(String::as_str).collect();
    testkit::installed("mdbook", &candidates)
}

/// `docs/` built into a temporary directory; `None` when mdBook is not installed.
fn build() -> Option<tempfile::TempDir> {
    let mdbook = mdbook()?;
    let out = tempfile::tempdir().unwrap();
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let run = std::process::Command::new(mdbook)
        .arg("build")
        .arg(&docs)
        .arg("-d")
        .arg(out.path())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "mdbook build failed:\n{log}");
    // mdBook warns, without failing, of what it could not render as asked.
    assert!(
        !log.contains("WARN") && !log.contains("ERROR"),
        "mdbook:\n{log}"
    );
    Some(out)
}

/// Every file under `dir` with extension `ext`.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p, ext));
        } else if p.extension() == Some(ext.as_ref()) {
            out.push(p);
        }
    }
    out
}

/// The `(tag, attribute, value)` of every `href="…"` and `src="…"` in a page.
fn references(html: &str) -> Vec<(String, &'static str, String)> {
    let mut out = Vec::new();
    for (i, _) in html.match_indices('<') {
        let end = html[i..].find('>').map_or(html.len(), |e| i + e);
        let tag_text = &html[i + 1..end];
        let tag: String = tag_text
            .chars()
            .take_while(|c| c.is_alphanumeric())
            .collect();
        for attr in ["href", "src"] {
            let pat = format!(" {attr}=\"");
            if let Some(at) = tag_text.find(&pat) {
                let value = &tag_text[at + pat.len()..];
                let value = value.split('"').next().unwrap_or("");
                out.push((tag.to_lowercase(), attr, value.replace("&amp;", "&")));
            }
        }
    }
    out
}

/// The `id="…"` of a page.
fn ids(html: &str) -> Vec<String> {
    html.split(" id=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .map(str::to_string)
        .collect()
}

fn external(url: &str) -> bool {
    url.starts_with("http:") || url.starts_with("https:") || url.starts_with("//")
}

#[test]
fn the_book_builds_and_every_link_in_it_resolves_with_nothing_from_the_network() {
    let Some(out) = build() else { return };
    let root = out.path();
    let pages = files(root, "html");
    assert!(pages.len() >= 30, "{} pages", pages.len());
    let texts: HashMap<PathBuf, String> = (pages.iter())
        .map(|p| (p.clone(), std::fs::read_to_string(p).unwrap()))
        .collect();
    let (mut internal, mut outside, mut broken) = (0, 0, Vec::new());
    for (page, html) in &texts {
        let here = page.strip_prefix(root).unwrap().display().to_string();
        for (tag, attr, url) in references(html) {
            if external(&url) {
                // A link a reader may follow is fine; anything the page itself loads is not.
                if tag != "a" {
                    broken.push(format!(
                        "{here}: <{tag} {attr}> loads {url} from the network"
                    ));
                }
                outside += 1;
                continue;
            }
            if url.starts_with("mailto:") || url.starts_with("javascript:") {
                continue;
            }
            let (path, fragment) = url.split_once('#').unwrap_or((&url, ""));
            let target = match path {
                "" => page.clone(),
                p => page.parent().unwrap().join(p),
            };
            internal += 1;
            let Ok(target) = target.canonicalize() else {
                broken.push(format!("{here}: {url}: no such file"));
                continue;
            };
            if !fragment.is_empty() && target.extension() == Some("html".as_ref()) {
                let text = texts.get(&target).cloned().unwrap_or_default();
                if !ids(&text).iter().any(|id| id == fragment) {
                    broken.push(format!("{here}: {url}: no #{fragment} there"));
                }
            }
        }
    }
    for css in files(root, "css") {
        let text = std::fs::read_to_string(&css).unwrap();
        for load in text
            .split("url(")
            .skip(1)
            .chain(text.split("@import").skip(1))
        {
            let url = load.trim_start_matches(['\'', '"', ' ']);
            if external(url) {
                broken.push(format!("{}: loads {url:.60}", css.display()));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
    assert!(internal > 1000, "{internal} internal links checked");
    println!("{internal} internal links and anchors resolve; {outside} links lead outside");
}

#[test]
fn chromium_renders_the_first_page_and_the_load_chapter_from_the_files_alone() {
    let Some(out) = build() else { return };
    let Some(browser) = Browser::start(1280, 900) else {
        return;
    };
    let shots = std::env::var_os("DYNO_BOOK_SCREENSHOTS").map(PathBuf::from);
    for (page, title) in [
        ("index.html", "dyno"),
        ("guide/load.html", "Load on services"),
    ] {
        let url = format!("file://{}", out.path().join(page).display());
        browser.open(&url);
        let loaded = browser.eval(
            "return [document.title, document.querySelector('main h1').textContent, \
             document.styleSheets.length, \
             document.querySelectorAll('#sidebar a, .sidebar a').length, \
             typeof hljs];",
        );
        let doc_title = loaded[0].as_str().unwrap_or("");
        assert!(doc_title.contains(title), "{page}: title {doc_title:?}");
        assert!(
            loaded[1].as_str().unwrap_or("").contains(title),
            "{page}: {loaded}"
        );
        // Its styles applied, its chapter list and its scripts ran: the page works as a reader
        // sees it, from the files alone.
        assert!(
            loaded[2].as_u64().unwrap_or(0) >= 5,
            "{page}: styles {loaded}"
        );
        assert!(
            loaded[3].as_u64().unwrap_or(0) >= 30,
            "{page}: no chapter list"
        );
        assert_eq!(loaded[4], "object", "{page}: the highlighter did not load");
        let requests = browser.requests();
        assert!(requests.len() >= 5, "{page}: only {requests:?}");
        for r in &requests {
            let local = r.starts_with("file://") || r.starts_with("data:");
            assert!(local, "{page} asked for {r}");
        }
        let errors: Vec<_> = (browser.console().into_iter())
            .filter(|e| e.level == "SEVERE")
            .collect();
        assert!(errors.is_empty(), "{page}: {errors:?}");
        let shot = browser.screenshot();
        assert!(shot.starts_with(b"\x89PNG"), "{page}: no screenshot");
        if let Some(dir) = &shots {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join(page.replace('/', "-") + ".png"), shot).unwrap();
        }
    }
}
