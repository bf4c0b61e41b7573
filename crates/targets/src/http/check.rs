//! Checks on responses (k6's checks): conditions a response must meet, each counted passed or
//! failed per request in the table and the record, and — with `checks_fail` — failing the
//! request (`application`) when one does not hold. A check is a line:
//!
//! | check | holds when |
//! |---|---|
//! | `status in 200,201,3xx` | the status is one of these (a class `Nxx` for a hundred) |
//! | `status == 200`, `status != 500` | the status is, or is not, this one |
//! | `header NAME exists` | the response has the header (any case) |
//! | `header NAME == VALUE`, `header NAME contains TEXT` | its value is VALUE, or holds TEXT |
//! | `body contains TEXT` | the body holds TEXT |
//! | `json POINTER exists` | the body is JSON and RFC 6901's POINTER finds a value in it |
//! | `json POINTER == VALUE` | … and that value is VALUE (JSON, or else a string) |
//! | `size OP BYTES` | the body's size compares so (`<`, `<=`, `>`, `>=`, `==`; `4KiB` allowed) |
//!
//! A check on the body reads at most [`MAX_CHECKED_BODY`] of it; past that it fails, saying so.
//!
//! A **capture** takes a value from a response for the client's next requests
//! (`{{capture.NAME}}`): `NAME = json /POINTER`, `NAME = header NAME` or `NAME = regex PATTERN`
//! (its first group, else the whole match, in the body). It is counted as a check that holds
//! when the value was found (`capture NAME = …`); a client keeps its last value.

/// The most of a body kept for checks that read it.
pub const MAX_CHECKED_BODY: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq)]
enum Test {
    Exists,
    Eq(String),
    /// A JSON value's `== VALUE`: VALUE read once (as JSON, or else a string).
    JsonEq(serde_json::Value),
    Contains(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    /// Status ranges, inclusive; `negate` for `!=`.
    Status {
        ranges: Vec<(u16, u16)>,
        negate: bool,
    },
    Header {
        name: String,
        test: Test,
    },
    Body(String),
    Json {
        pointer: String,
        test: Test,
    },
    Size {
        op: &'static str,
        bytes: u64,
    },
    Capture {
        slot: usize,
        from: From,
    },
}

/// Where a capture takes its value.
#[derive(Debug, Clone)]
enum From {
    Json(String),
    Header(String),
    Regex(regex::bytes::Regex),
}

impl PartialEq for From {
    fn eq(&self, other: &From) -> bool {
        match (self, other) {
            (From::Json(a), From::Json(b)) | (From::Header(a), From::Header(b)) => a == b,
            (From::Regex(a), From::Regex(b)) => a.as_str() == b.as_str(),
            _ => false,
        }
    }
}

/// The values one response captured: by slot, and which slots it filled (bit per slot).
#[derive(Debug, Default)]
pub(crate) struct Captured {
    pub values: Vec<Vec<u8>>,
    pub got: u64,
}

impl Captured {
    fn set(&mut self, slot: usize, v: &[u8]) {
        if self.values.len() <= slot {
            self.values.resize_with(slot + 1, Vec::new);
        }
        self.values[slot].clear();
        self.values[slot].extend_from_slice(v);
        self.got |= 1 << slot;
    }
}

/// The checks of one request, as written and parsed.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Checks {
    list: Vec<(String, Kind)>,
    /// A check that fails fails the request.
    pub fail: bool,
}

/// The most checks one request may have (their results travel as the bits of a word).
pub const MAX_CHECKS: usize = 64;

impl Checks {
    /// The checks of `lines` (one per line) and the captures of `captures` (`NAME = …`, each
    /// given the slot of its name in `names`, added there when new); an error names the check.
    pub(crate) fn parse(
        lines: &[String],
        captures: &[String],
        fail: bool,
        names: &mut Vec<String>,
    ) -> Result<Checks, String> {
        let mut list = Vec::new();
        for line in lines.iter().map(|l| l.trim()).filter(|l| !l.is_empty()) {
            // A check written twice (the target's and a request's) is made once.
            if list.iter().any(|(n, _)| n == line) {
                continue;
            }
            list.push((
                line.to_string(),
                kind(line).map_err(|e| format!("check `{line}`: {e}"))?,
            ));
        }
        for line in captures.iter().map(|l| l.trim()).filter(|l| !l.is_empty()) {
            let k = capture(line, names).map_err(|e| format!("capture `{line}`: {e}"))?;
            list.push((format!("capture {line}"), k));
        }
        if list.len() > MAX_CHECKS {
            return Err(format!(
                "{} checks on one request: at most {MAX_CHECKS}",
                list.len()
            ));
        }
        Ok(Checks { list, fail })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.list.iter().map(|(n, _)| n.clone()).collect()
    }

    /// Whether a check reads the body (which is then kept).
    pub(crate) fn reads_body(&self) -> bool {
        (self.list.iter()).any(|(_, k)| match k {
            Kind::Body(_) | Kind::Json { .. } => true,
            Kind::Capture { from, .. } => !matches!(from, From::Header(_)),
            _ => false,
        })
    }

    /// The checks the head decides (its captures from headers into `got`): the failed ones'
    /// bits.
    pub(crate) fn on_head(
        &self,
        status: u16,
        headers: &[httparse::Header],
        got: &mut Captured,
    ) -> u64 {
        let mut failed = 0;
        for (i, (_, k)) in self.list.iter().enumerate() {
            let holds = match k {
                Kind::Status { ranges, negate } => {
                    ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&status)) != *negate
                }
                Kind::Header { name, test } => {
                    let value = (headers.iter()).find(|h| h.name.eq_ignore_ascii_case(name));
                    match (value, test) {
                        (None, _) => false,
                        (Some(_), Test::Exists) => true,
                        (Some(h), Test::Eq(v)) => h.value.trim_ascii() == v.as_bytes(),
                        (Some(_), Test::JsonEq(_)) => false,
                        (Some(h), Test::Contains(t)) => contains(h.value, t.as_bytes()),
                    }
                }
                Kind::Capture {
                    slot,
                    from: From::Header(name),
                } => match (headers.iter()).find(|h| h.name.eq_ignore_ascii_case(name)) {
                    Some(h) => {
                        got.set(*slot, h.value.trim_ascii());
                        true
                    }
                    None => false,
                },
                _ => continue,
            };
            failed |= u64::from(!holds) << i;
        }
        failed
    }

    /// The checks the body decides (`body` as kept, `size` its whole length; its captures
    /// into `got`): the failed ones' bits.
    pub(crate) fn on_body(&self, body: &[u8], size: u64, got: &mut Captured) -> u64 {
        let whole = size as usize <= body.len();
        let mut json: Option<Option<serde_json::Value>> = None;
        let mut failed = 0;
        for (i, (_, k)) in self.list.iter().enumerate() {
            let holds = match k {
                Kind::Body(text) => whole && contains(body, text.as_bytes()),
                Kind::Json { pointer, test } => {
                    let doc = json.get_or_insert_with(|| serde_json::from_slice(body).ok());
                    match (whole, doc.as_ref().and_then(|d| d.pointer(pointer))) {
                        (false, _) | (_, None) => false,
                        (true, Some(v)) => json_holds(v, test),
                    }
                }
                Kind::Size { op, bytes } => compare(size, op, *bytes),
                Kind::Capture {
                    slot,
                    from: From::Json(pointer),
                } => {
                    let doc = json.get_or_insert_with(|| serde_json::from_slice(body).ok());
                    match doc
                        .as_ref()
                        .and_then(|d| d.pointer(pointer))
                        .filter(|_| whole)
                    {
                        // A string as its text; anything else as JSON writes it.
                        Some(serde_json::Value::String(s)) => {
                            got.set(*slot, s.as_bytes());
                            true
                        }
                        Some(v) => {
                            got.set(*slot, v.to_string().as_bytes());
                            true
                        }
                        None => false,
                    }
                }
                Kind::Capture {
                    slot,
                    from: From::Regex(re),
                } => match re.captures(body) {
                    Some(c) => {
                        let m = c
                            .get(1)
                            .or_else(|| c.get(0))
                            .map_or(&[][..], |m| m.as_bytes());
                        got.set(*slot, m);
                        true
                    }
                    None => false,
                },
                _ => continue,
            };
            failed |= u64::from(!holds) << i;
        }
        failed
    }

    /// The first failed check's text, for a request failed by it.
    pub(crate) fn first(&self, failed: u64) -> &str {
        let i = failed.trailing_zeros() as usize;
        self.list.get(i).map_or("", |(n, _)| n.as_str())
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

fn compare(a: u64, op: &str, b: u64) -> bool {
    match op {
        "<" => a < b,
        "<=" => a <= b,
        ">" => a > b,
        ">=" => a >= b,
        _ => a == b,
    }
}

/// Whether JSON value `v` passes `test`: `== VALUE` compares with VALUE read as JSON (a bare
/// word as a string); `contains` with a string's text.
fn json_holds(v: &serde_json::Value, test: &Test) -> bool {
    match test {
        Test::Exists => true,
        Test::Eq(want) => v.as_str() == Some(want.as_str()),
        Test::JsonEq(want) => v == want,
        Test::Contains(t) => v.as_str().map_or_else(
            || v.to_string().contains(t.as_str()),
            |s| s.contains(t.as_str()),
        ),
    }
}

/// RFC 6901: empty, or `/`-separated tokens in which `~` is only `~0` or `~1`.
pub(crate) fn pointer(p: &str) -> Result<String, String> {
    if !p.is_empty() && !p.starts_with('/') {
        return Err(format!(
            "{p:?} is not a JSON pointer: it starts with / (e.g. /user/id)"
        ));
    }
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(format!(
                "{p:?} is not a JSON pointer: ~ is written ~0, and / inside a name ~1"
            ));
        }
    }
    Ok(p.to_string())
}

/// What follows the first `n` words of `line`, its inner spaces as written.
fn after_words(line: &str, n: usize) -> &str {
    let mut rest = line;
    for _ in 0..n {
        rest = rest.trim_start();
        rest = &rest[rest.find(char::is_whitespace).unwrap_or(rest.len())..];
    }
    rest.trim()
}

/// `== VALUE`, `contains TEXT` or `exists` after a subject.
fn test(rest: &[&str], line: &str) -> Result<Test, String> {
    // The value is the rest of the line as written (its inner spaces kept).
    let value = || after_words(line, 3).to_string();
    match rest {
        ["exists"] => Ok(Test::Exists),
        ["==", _, ..] => Ok(Test::Eq(value())),
        ["contains", _, ..] => Ok(Test::Contains(value())),
        _ => Err("write `exists`, `== VALUE` or `contains TEXT` after it".into()),
    }
}

fn kind(line: &str) -> Result<Kind, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["status", op @ ("in" | "==" | "!="), list] => {
            let ranges = list
                .split(',')
                .map(status_range)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Kind::Status {
                ranges,
                negate: *op == "!=",
            })
        }
        ["status", ..] => {
            Err("write `status in 200,201,3xx`, `status == 200` or `status != 500`".into())
        }
        ["header", name, rest @ ..] => Ok(Kind::Header {
            name: name.to_string(),
            test: test(rest, line)?,
        }),
        ["body", "contains", _, ..] => Ok(Kind::Body(after_words(line, 2).to_string())),
        ["body", ..] => Err("write `body contains TEXT`".into()),
        ["json", p, rest @ ..] => Ok(Kind::Json {
            pointer: pointer(p)?,
            test: match test(rest, line)? {
                Test::Eq(want) => Test::JsonEq(
                    serde_json::from_str(&want).unwrap_or(serde_json::Value::String(want)),
                ),
                other => other,
            },
        }),
        ["size", op @ ("<" | "<=" | ">" | ">=" | "=="), n] => {
            let bytes = engine::units::parse_size(n).map_err(|e| e.to_string())?;
            Ok(Kind::Size {
                op: match *op {
                    "<" => "<",
                    "<=" => "<=",
                    ">" => ">",
                    ">=" => ">=",
                    _ => "==",
                },
                bytes,
            })
        }
        ["size", ..] => Err("write `size < 4KiB` (or <=, >, >=, ==)".into()),
        [other, ..] => Err(format!(
            "{}a check starts with status, header, body, json or size",
            engine::suggest::did_you_mean(
                other,
                ["status", "header", "body", "json", "size"].into_iter()
            )
        )),
        [] => Err("empty".into()),
    }
}

/// `NAME = json /POINTER`, `NAME = header NAME` or `NAME = regex PATTERN`.
fn capture(line: &str, names: &mut Vec<String>) -> Result<Kind, String> {
    let (name, source) = line
        .split_once('=')
        .ok_or("write `NAME = json /POINTER`, `NAME = header NAME` or `NAME = regex PATTERN`")?;
    let name = name.trim();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(format!("{name:?} is not a name (letters, digits, _)"));
    }
    let source = source.trim();
    let (how, what) = source
        .split_once(char::is_whitespace)
        .unwrap_or((source, ""));
    let what = what.trim();
    let from = match how {
        "json" => From::Json(pointer(what)?),
        "header" if !what.is_empty() => From::Header(what.to_string()),
        "regex" => {
            From::Regex(regex::bytes::Regex::new(what).map_err(|e| format!("the pattern: {e}"))?)
        }
        _ => {
            return Err(format!(
                "{source:?}: take it from `json /POINTER`, `header NAME` or `regex PATTERN`"
            ));
        }
    };
    let slot = match names.iter().position(|n| n == name) {
        Some(i) => i,
        None if names.len() < MAX_CHECKS => {
            names.push(name.to_string());
            names.len() - 1
        }
        None => return Err(format!("more than {MAX_CHECKS} names captured")),
    };
    Ok(Kind::Capture { slot, from })
}

/// `200`, or `2xx` for 200 to 299.
fn status_range(s: &str) -> Result<(u16, u16), String> {
    let bad = || format!("{s:?} is not a status (e.g. 200) or a class (e.g. 2xx)");
    if let Some(d) = s.strip_suffix("xx").and_then(|d| d.parse::<u16>().ok()) {
        return (1..=5)
            .contains(&d)
            .then_some((d * 100, d * 100 + 99))
            .ok_or_else(bad);
    }
    let n: u16 = s.parse().map_err(|_| bad())?;
    (100..=599).contains(&n).then_some((n, n)).ok_or_else(bad)
}

/// Each request's checks and captures, and the names captured (their slots, in order).
pub(crate) type Compiled = (std::sync::Arc<[Checks]>, Vec<String>);

/// The checks and captures of each of `reqs`, and the names captured, or `None` when none has
/// any.
pub(crate) fn compile(
    reqs: &[&super::request::Req],
) -> Result<Option<Compiled>, (usize, engine::driver::ConfigError)> {
    let mut names = Vec::new();
    let mut all = Vec::with_capacity(reqs.len());
    for (i, r) in reqs.iter().enumerate() {
        let option = if r.captures.is_empty() {
            "checks"
        } else {
            "capture"
        };
        let c = Checks::parse(&r.checks, &r.captures, r.checks_fail, &mut names)
            .map_err(|e| (i, engine::driver::ConfigError::option(option, e)))?;
        all.push(c);
    }
    Ok((!all.iter().all(Checks::is_empty)).then(|| (all.into(), names)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checks(lines: &[&str]) -> Checks {
        let lines: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        Checks::parse(&lines, &[], false, &mut Vec::new()).unwrap()
    }

    fn header<'a>(name: &'a str, value: &'a [u8]) -> httparse::Header<'a> {
        httparse::Header { name, value }
    }

    #[test]
    fn each_check_holds_or_fails_on_what_it_reads() {
        let c = checks(&[
            "status in 200,3xx",
            "header Content-Type contains json",
            "header x-token exists",
            "body contains \"ok\": true",
            "json /user/id == 7",
            "json /user/name == Ann Lee",
            "json /missing exists",
            "size < 1KiB",
        ]);
        assert!(c.reads_body());
        let h = [
            header("content-type", b"application/json"),
            header("X-Token", b"t"),
        ];
        assert_eq!(c.on_head(200, &h, &mut Captured::default()), 0);
        assert_eq!(
            c.on_head(302, &h[..1], &mut Captured::default()),
            0b100,
            "only the token is missing"
        );
        assert_eq!(c.on_head(404, &h, &mut Captured::default()) & 1, 1);
        let body = br#"{"ok": true, "user": {"id": 7, "name": "Ann Lee"}}"#;
        assert_eq!(
            c.on_body(body, body.len() as u64, &mut Captured::default()),
            1 << 6,
            "only /missing fails"
        );
        assert_eq!(c.first(1 << 6), "json /missing exists");
        // A body longer than what was kept fails the checks that read it.
        assert_eq!(
            c.on_body(&body[..10], 5000, &mut Captured::default()) & (0b111 << 3 | 1 << 7),
            0b111 << 3 | 1 << 7
        );
        assert_eq!(
            c.on_body(b"not json", 8, &mut Captured::default()) & (1 << 4),
            1 << 4
        );
    }

    #[test]
    fn a_bad_check_is_named() {
        let bad =
            |l: &str| Checks::parse(&[l.to_string()], &[], false, &mut Vec::new()).unwrap_err();
        assert!(bad("stauts in 200").contains("did you mean \"status\"?"));
        assert!(bad("status in 200,6xx").contains("\"6xx\" is not a status"));
        assert!(bad("json user/id exists").contains("starts with /"));
        assert!(bad("json /a~2b exists").contains("~ is written ~0"));
        assert!(bad("header X").contains("write `exists`"));
        assert!(bad("size ~ 3").contains("write `size < 4KiB`"));
        assert!(bad("size < lots").starts_with("check `size < lots`: "));
        // Aligned columns: the value is what follows the words, its inner spaces kept.
        let c = checks(&[
            "header  X-A   ==   a  b",
            "json   /n    ==    7",
            "body    contains   x  y",
        ]);
        let h = [header("x-a", b"a  b")];
        assert_eq!(c.on_head(200, &h, &mut Captured::default()), 0);
        let body = br#"{"n": 7, "t": "x  y"}"#;
        assert_eq!(
            c.on_body(body, body.len() as u64, &mut Captured::default()),
            0
        );
        let capture = |l: &str| Checks::parse(&[], &[l.to_string()], false, &mut Vec::new());
        assert!(
            capture("token = json token")
                .unwrap_err()
                .contains("not a JSON pointer")
        );
        assert!(
            capture("token = regex (")
                .unwrap_err()
                .contains("the pattern")
        );
        assert!(
            capture("to ken = header X")
                .unwrap_err()
                .contains("is not a name")
        );
        assert!(
            capture("token = cookie x")
                .unwrap_err()
                .contains("take it from")
        );
    }

    #[test]
    fn captures_take_their_values_or_count_as_missed() {
        let mut names = vec!["earlier".to_string()];
        let caps = [
            "token = json /token".to_string(),
            "session = header Set-Session".to_string(),
            "id = regex id=([0-9]+)".to_string(),
        ];
        let c = Checks::parse(&["status == 200".into()], &caps, false, &mut names).unwrap();
        assert_eq!(names, ["earlier", "token", "session", "id"]);
        assert_eq!(c.names()[1], "capture token = json /token");
        let mut got = Captured::default();
        assert_eq!(
            c.on_head(200, &[header("set-session", b" abc ")], &mut got),
            0
        );
        let body = br#"{"token": "s3cret", "next": "id=42"}"#;
        assert_eq!(c.on_body(body, body.len() as u64, &mut got), 0);
        assert_eq!(got.got, 0b1110);
        assert_eq!(got.values[1], b"s3cret");
        assert_eq!(got.values[2], b"abc");
        assert_eq!(got.values[3], b"42");
        let mut none = Captured::default();
        let missed = c.on_head(200, &[], &mut none) | c.on_body(b"{}", 2, &mut none);
        assert_eq!(
            missed, 0b1110,
            "each capture that found nothing fails as a check"
        );
        assert_eq!(none.got, 0);
    }

    proptest::proptest! {
        /// Any line is a check or a named refusal; any response (status, header, body) is
        /// judged without panicking, its verdict bits only those of its checks.
        #[test]
        fn any_check_and_any_response_are_judged_or_refused(
            line in "(status|header|body|json|size|capture)? ?[ -~]{0,30}",
            cap in "[a-z]{1,5} = (json|header|regex) [ -~]{0,12}",
            status in 0u16..700,
            value in proptest::collection::vec(proptest::num::u8::ANY, 0..40),
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
        ) {
            let mut names = Vec::new();
            let Ok(c) = Checks::parse(&[line], &[cap], false, &mut names) else { return Ok(()) };
            let mut got = Captured::default();
            let h = [header("x-a", &value)];
            let bits = c.on_head(status, &h, &mut got) | c.on_body(&body, body.len() as u64, &mut got);
            proptest::prop_assert!(bits >> c.names().len() == 0);
            proptest::prop_assert!(got.got >> names.len() == 0);
        }
    }
}
