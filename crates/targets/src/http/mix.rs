//! A target's mix of named, weighted requests: from the plan (`[[targets.NAME.requests]]`) or
//! from a requests file in vegeta's format (`requests_file`, `--requests-file`).
//!
//! A plan's request names what differs from the target: `path` (the URL's when left out),
//! `method`, `body` or `body_file` replace the target's; its `headers` come after the target's,
//! so a header every request needs is written once. vegeta's file lists requests apart:
//!
//! ```text
//! GET http://127.0.0.1:8080/items/1
//! X-Account: 7
//!
//! POST /orders
//! Content-Type: application/json
//! @order.json
//! ```
//!
//! a request line (`METHOD URL`, the URL on the target's own host and port, or a path), its
//! headers, `@FILE` for a body, a blank line between requests, `#` lines ignored. Each is
//! weighted 1 and named `METHOD PATH` (`#2`, `#3`… after a name met before).

use super::request::{self, Req};
use crate::options::Opts;
use engine::driver::ConfigError;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One request of a mix.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Named {
    pub name: String,
    pub weight: u32,
    pub req: Req,
}

/// The largest weight: a mix's weights sum well inside the 64-bit draw.
const MAX_WEIGHT: u32 = 1_000_000;
/// The most requests a mix holds (each keeps two histograms per load thread).
pub(crate) const MAX_REQUESTS: usize = 1_000;

/// The plan's requests, each over `base` (the target's resolved options) and `url_path`; their
/// keys are the plan's ([`engine::plan::keys::REQUEST`], checked where the plan is read). An
/// error says which request (its index) and which key.
pub(crate) fn from_plan(
    base: &BTreeMap<String, String>,
    url_path: &str,
    requests: &[BTreeMap<String, String>],
) -> Result<Vec<Named>, (usize, ConfigError)> {
    let mut out: Vec<Named> = Vec::with_capacity(requests.len());
    for (i, given) in requests.iter().enumerate() {
        let one = |e: ConfigError| (i, e);
        let key = |k: &str| given.get(k).map_or("", String::as_str);
        let mut merged: BTreeMap<String, String> = BTreeMap::new();
        let own_body = given.contains_key("body") || given.contains_key("body_file");
        for key in [
            "method",
            "headers",
            "body",
            "body_file",
            "checks",
            "checks_fail",
            "capture",
        ] {
            let inherited = base
                .get(key)
                .filter(|_| !own_body || !key.starts_with("body"));
            if let Some(v) = given.get(key).or(inherited) {
                merged.insert(key.to_string(), v.clone());
            }
        }
        for key in ["headers", "checks"] {
            if let (Some(theirs), Some(mine)) = (base.get(key), given.get(key)) {
                merged.insert(key.into(), format!("{theirs}\n{mine}"));
            }
        }
        let path = match key("path") {
            "" => url_path.to_string(),
            p => request::path(p, "path").map_err(one)?,
        };
        let spec = super::REQUEST_OPTIONS;
        let req =
            Req::from_opts(&Opts::new("http", &merged, spec).map_err(one)?, path).map_err(one)?;
        let weight = match key("weight") {
            "" => 1,
            w => weight(w).map_err(one)?,
        };
        let name = match key("name") {
            "" => unique(&out, format!("{} {}", req.method, req.path)),
            n => own_name(n, out.iter().map(|x| x.name.as_str())).map_err(one)?,
        };
        out.push(Named { name, weight, req });
    }
    // The mix as a whole: the target's, not one request's.
    check(&out).map_err(|e| (usize::MAX, e))?;
    Ok(out)
}

/// A request's `weight`: 0 to 1,000,000 (a mix's other drivers read theirs here too).
pub(crate) fn weight(w: &str) -> Result<u32, ConfigError> {
    (w.trim().parse::<u32>().ok())
        .filter(|w| *w <= MAX_WEIGHT)
        .ok_or_else(|| {
            ConfigError::option(
                "weight",
                format!("{w:?} is not a whole number of 0 to 1000000"),
            )
            .hint("write e.g. weight = 80")
        })
}

/// A request's own `name`, not one of the `earlier` ones.
pub(crate) fn own_name<'a>(
    n: &str,
    mut earlier: impl Iterator<Item = &'a str>,
) -> Result<String, ConfigError> {
    if n.trim() != n || n.len() > 100 || n.chars().any(char::is_control) {
        return Err(ConfigError::option(
            "name",
            format!(
                "{n:?}: a request's name is up to 100 characters, no line breaks or tabs, no spaces around it"
            ),
        ));
    }
    if earlier.any(|x| x == n) {
        return Err(
            ConfigError::option("name", format!("{n:?} names two requests"))
                .hint("give each request its own name"),
        );
    }
    Ok(n.to_string())
}

/// `name`, or `name #2`, `#3`… when an earlier request has it.
fn unique(earlier: &[Named], name: String) -> String {
    if earlier.iter().all(|x| x.name != name) {
        return name;
    }
    (2..)
        .map(|k| format!("{name} #{k}"))
        .find(|n| earlier.iter().all(|x| &x.name != n))
        .expect("some number is free")
}

/// A mix as a whole: not too many requests, and some weight to draw from.
fn check(mix: &[Named]) -> Result<(), ConfigError> {
    weighed(&mix.iter().map(|n| n.weight).collect::<Vec<_>>())
}

/// A mix's weights as a whole: not too many requests, and some weight to draw from.
pub(crate) fn weighed(weights: &[u32]) -> Result<(), ConfigError> {
    if weights.len() > MAX_REQUESTS {
        return Err(ConfigError::option(
            "requests",
            format!(
                "{} requests: a mix holds at most {MAX_REQUESTS}",
                weights.len()
            ),
        ));
    }
    if !weights.is_empty() && weights.iter().all(|w| *w == 0) {
        return Err(ConfigError::option("weight", "every request's weight is 0")
            .hint("give at least one request a weight above 0"));
    }
    Ok(())
}

/// The requests of a vegeta-format file, on the target at `authority` (`scheme` its URL's).
pub(crate) fn from_file(
    file: &Path,
    scheme: &str,
    authority: &str,
) -> Result<Vec<Named>, ConfigError> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| ConfigError::option("requests_file", format!("{}: {e}", file.display())))?;
    let at = |line: usize, why: String| {
        ConfigError::option("requests_file", format!("{}:{line}: {why}", file.display()))
    };
    let mut out: Vec<Named> = Vec::new();
    let mut current: Option<Named> = None;
    let (reserved, why) = request::reserved();
    for (n, raw) in text.lines().enumerate() {
        let (n, line) = (n + 1, raw.trim());
        if line.starts_with('#') {
            continue;
        }
        if line.is_empty() {
            out.extend(current.take());
            continue;
        }
        // A request line starts a request, after a blank line or right after the last one
        // (as vegeta reads them).
        if current.is_none() || looks_like_request(line) {
            out.extend(current.take());
            current = Some(request_line(line, scheme, authority, &out).map_err(|w| at(n, w))?);
            continue;
        }
        let Some(named) = current.as_mut() else {
            continue;
        };
        if let Some(body) = line.strip_prefix('@') {
            if named.req.body_file.is_some() {
                return Err(at(n, "a second body for one request".into()));
            }
            named.req.body_file = Some(PathBuf::from(body.trim()));
            continue;
        }
        let h = request::header_line(line, reserved, why).map_err(|r| {
            let hint = r.hint.map_or(String::new(), |h| format!(" ({h})"));
            at(n, format!("{}{hint}; a request's lines are its headers, then @FILE for its body, then a blank line", r.message))
        })?;
        named.req.headers.push(h);
    }
    out.extend(current.take());
    if out.is_empty() {
        return Err(ConfigError::option(
            "requests_file",
            format!("{}: no request in it", file.display()),
        )
        .hint("write one per paragraph, e.g. `GET http://127.0.0.1:8080/items/1`"));
    }
    check(&out)?;
    Ok(out)
}

/// Whether `line` is `METHOD URL` or `METHOD /path` (a header's name has no space before its
/// colon, so no header line is).
fn looks_like_request(line: &str) -> bool {
    let Some((method, target)) = line.split_once(char::is_whitespace) else {
        return false;
    };
    let target = target.trim_start();
    !method.is_empty()
        && method.bytes().all(|b| b.is_ascii_uppercase())
        && (target.starts_with('/') || target.contains("://"))
}

/// `METHOD URL` (or `METHOD /path`): a new request of weight 1.
fn request_line(
    line: &str,
    scheme: &str,
    authority: &str,
    earlier: &[Named],
) -> Result<Named, String> {
    let (method, target) = line
        .split_once(char::is_whitespace)
        .ok_or_else(|| format!("{line:?} is not `METHOD URL`, e.g. `GET http://{authority}/`"))?;
    let method = request::method(method).map_err(|e| e.message)?;
    let target = target.trim();
    let path = match target.split_once("://") {
        None => target.to_string(),
        Some((s, rest)) => {
            let (auth, path) = rest
                .find('/')
                .map_or((rest, "/"), |i| (&rest[..i], &rest[i..]));
            if !s.eq_ignore_ascii_case(scheme) || auth != authority {
                return Err(format!(
                    "{target} is not on the target's {scheme}://{authority}: dyno sends a target's requests to its one address (give each server a target of its own)"
                ));
            }
            path.to_string()
        }
    };
    let path = request::path(&path, "path").map_err(|e| e.message)?;
    let name = unique(earlier, format!("{method} {path}"));
    Ok(Named {
        name,
        weight: 1,
        req: Req {
            method,
            path,
            headers: Vec::new(),
            body: None,
            body_file: None,
            checks: Vec::new(),
            checks_fail: false,
            captures: Vec::new(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_plan_request_replaces_what_it_names_and_adds_its_headers() {
        let base = map(&[
            ("method", "GET"),
            ("headers", "Authorization: t"),
            ("body", ""),
        ]);
        let mix = from_plan(
            &base,
            "/",
            &[
                map(&[("path", "/items/1"), ("weight", "8")]),
                map(&[
                    ("method", "POST"),
                    ("path", "/orders"),
                    ("body", "{}"),
                    ("headers", "Content-Type: application/json"),
                ]),
                map(&[("name", "again"), ("path", "/items/1")]),
                map(&[("path", "/items/1")]),
            ],
        )
        .unwrap();
        let names: Vec<&str> = mix.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(
            names,
            ["GET /items/1", "POST /orders", "again", "GET /items/1 #2"]
        );
        assert_eq!(mix[0].weight, 8);
        assert_eq!(mix[1].req.body.as_deref(), Some(&b"{}"[..]));
        assert_eq!(
            mix[1].req.headers,
            [
                ("Authorization".to_string(), "t".to_string()),
                ("Content-Type".to_string(), "application/json".to_string())
            ]
        );
        assert_eq!(mix[0].req.headers.len(), 1);
    }

    #[test]
    fn a_bad_plan_request_is_named_with_its_key() {
        let base = map(&[("method", "GET")]);
        let bad = |r: &[(&str, &str)]| {
            from_plan(&base, "/", &[map(&[("path", "/a")]), map(r)]).unwrap_err()
        };
        let (i, e) = bad(&[("weight", "-1")]);
        assert_eq!((i, e.option.as_deref()), (1, Some("weight")));
        let (_, e) = bad(&[("path", "items")]);
        assert!(e.message.contains("is not a path"), "{}", e.message);
        let (_, e) = bad(&[("method", "get")]);
        assert_eq!(e.option.as_deref(), Some("method"));
        let (_, e) = bad(&[("headers", "Host: x")]);
        assert!(e.message.contains("set by dyno"));
        let zero = from_plan(
            &base,
            "/",
            &[map(&[("weight", "0")]), map(&[("weight", "0")])],
        );
        assert!(
            zero.unwrap_err()
                .1
                .message
                .contains("every request's weight is 0")
        );
    }

    #[test]
    fn a_vegeta_file_reads_with_its_lines_located() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("targets.txt");
        std::fs::write(
            &f,
            "# the shop\nGET http://127.0.0.1:8080/items/1\nX-Account: 7\n\n\nPOST /orders\nContent-Type: application/json\n@order.json\n\nGET http://127.0.0.1:8080/items/1\n",
        )
        .unwrap();
        let mix = from_file(&f, "http", "127.0.0.1:8080").unwrap();
        let names: Vec<&str> = mix.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["GET /items/1", "POST /orders", "GET /items/1 #2"]);
        // vegeta's own examples: one request a line, no blank line between.
        std::fs::write(&f, "GET http://127.0.0.1:8080/a\nX-A: 1\nGET /b\nHEAD /c\n").unwrap();
        let mix = from_file(&f, "http", "127.0.0.1:8080").unwrap();
        let names: Vec<&str> = mix.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["GET /a", "GET /b", "HEAD /c"]);
        assert_eq!(mix[0].req.headers.len(), 1);
        std::fs::write(&f, "GET http://127.0.0.1:8080/items/1\nX-Account: 7\n\n\nPOST /orders\nContent-Type: application/json\n@order.json\n\nGET http://127.0.0.1:8080/items/1\n").unwrap();
        let mix = from_file(&f, "http", "127.0.0.1:8080").unwrap();
        assert_eq!(mix[0].req.headers[0].1, "7");
        assert_eq!(mix[1].req.body_file, Some(PathBuf::from("order.json")));
        assert!(mix.iter().all(|n| n.weight == 1));

        let bad = |text: &str| {
            std::fs::write(&f, text).unwrap();
            from_file(&f, "http", "127.0.0.1:8080").unwrap_err().message
        };
        let other = bad("GET http://127.0.0.1:8080/\n\nGET http://10.0.0.1/x\n");
        assert!(
            other.contains("targets.txt:3: http://10.0.0.1/x is not on the target's"),
            "{other}"
        );
        let header = bad("GET /\nnot a header\n");
        assert!(
            header.contains("targets.txt:2: \"not a header\" is not `Name: value`"),
            "{header}"
        );
        assert!(bad("GET\n").contains(":1:"));
        assert!(bad("# nothing\n\n").contains("no request in it"));
        assert!(bad("GET /\n@a\n@b\n").contains(":3: a second body"));
    }
}
