//! A target's requests as templates (`{{seq}}`, `{{data.email}}`…, [`engine::template`]):
//! their path, header values and body parsed once, rendered at each request's start into the
//! connection's buffer. The options `templates`, `data_rows` and `data_order` say whether and
//! from what.

use super::request::Req;
use crate::options::Opts;
use engine::driver::{ConfigError, DriverError};
use engine::load::Render;
use engine::template::{Draw, Escape, Order, Rows, Shared, Template, TemplateError};
use std::sync::Arc;

/// The template options as given.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings {
    pub on: bool,
    pub rows: Option<(std::path::PathBuf, Order)>,
}

impl Settings {
    pub(crate) fn from_opts(o: &Opts) -> Result<Settings, ConfigError> {
        let order = o.choice("data_order", &Order::NAMES)?;
        let order = Order::parse(&order).expect("a listed order");
        let rows = match o.text("data_rows") {
            "" => None,
            f => Some((std::path::PathBuf::from(f), order)),
        };
        let on = o.bool("templates")?;
        if rows.is_some() && !on {
            return Err(ConfigError::option(
                "data_rows",
                "data rows are for templates, and templates=false",
            )
            .hint("leave templates on, or the data file out"));
        }
        Ok(Settings { on, rows })
    }

    /// The data file's rows, read now.
    fn shared(&self) -> Result<Shared, ConfigError> {
        let rows = match &self.rows {
            Some((f, order)) => {
                Some(Rows::read(f, *order).map_err(|e| ConfigError::option("data_rows", e))?)
            }
            None => None,
        };
        Ok(Shared::new(rows))
    }
}

/// An HTTP/1.1 request as a template: the request line's path, each header's value and the
/// body; the rest literal.
#[derive(Debug)]
pub(crate) struct H1 {
    method: Vec<u8>,
    path: Template,
    /// ` HTTP/1.1`, `Host` and `User-Agent`.
    fixed: Vec<u8>,
    headers: Vec<(Vec<u8>, Template)>,
    /// A method that says its body's length even when empty.
    sized: bool,
    close: bool,
    body: Template,
}

/// What `Http` renders from: the templates of each request and what they share.
#[derive(Debug)]
pub(crate) struct Rendered {
    pub shared: Arc<Shared>,
    pub requests: Vec<H1>,
}

impl Rendered {
    pub(crate) fn render(&self, which: usize, r: &mut Render, out: &mut Vec<u8>) {
        let t = &self.requests[which];
        let mut d = Draw::new(&self.shared, r.client, r.rng)
            .with_captures(r.captures)
            .in_shard(r.shard);
        r.scratch.clear();
        t.body.render(&mut d, r.scratch);
        out.extend_from_slice(&t.method);
        out.push(b' ');
        t.path.render(&mut d, out);
        out.extend_from_slice(&t.fixed);
        for (name, value) in &t.headers {
            out.extend_from_slice(name);
            value.render(&mut d, out);
            out.extend_from_slice(b"\r\n");
        }
        if t.sized || !r.scratch.is_empty() {
            out.extend_from_slice(b"Content-Length: ");
            out.extend_from_slice(itoa::Buffer::new().format(r.scratch.len()).as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        if t.close {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(r.scratch);
    }
}

/// `text`'s template, or its error placed in `option` (and, for a long text, its line).
fn parse(
    text: &str,
    escape: Escape,
    (rows, captures): (Option<&Rows>, &[String]),
    option: &str,
) -> Result<Template, ConfigError> {
    Template::parse_with(text, escape, rows, captures).map_err(|e: TemplateError| {
        let line = text[..e.offset].matches('\n').count() + 1;
        let col = text[..e.offset].rsplit('\n').next().map_or(0, str::len) + 1;
        let at = match line {
            1 => format!("at column {col}"),
            _ => format!("at line {line}, column {col}"),
        };
        let e2 = ConfigError::option(option, format!("{at}: {}", e.message));
        match e.hint {
            Some(h) => e2.hint(h),
            None => e2,
        }
    })
}

/// Where a refusal lies: in one request of a mix (its index), or in the target's options.
pub(crate) type Refusal = (Option<usize>, ConfigError);

/// The templates of `reqs` (their bodies given apart: a body file read), or `None` when
/// templates are off or none has a field.
pub(crate) fn compile(
    settings: &Settings,
    reqs: &[(&Req, &[u8])],
    captures: &[String],
    authority: &str,
    keepalive: bool,
) -> Result<Option<Rendered>, Refusal> {
    if !settings.on {
        return Ok(None);
    }
    let shared = settings.shared().map_err(|e| (None, e))?;
    let known = (shared.rows(), captures);
    let requests = (reqs.iter().enumerate())
        .map(|(i, (req, body))| {
            h1(req, body, known, (authority, keepalive)).map_err(|e| (Some(i), e))
        })
        .collect::<Result<Vec<H1>, Refusal>>()?;
    let fixed = requests.iter().all(|r| {
        r.path.is_fixed() && r.body.is_fixed() && r.headers.iter().all(|(_, v)| v.is_fixed())
    });
    if fixed && settings.rows.is_none() {
        return Ok(None);
    }
    Ok(Some(Rendered {
        shared: Arc::new(shared),
        requests,
    }))
}

/// One request's templates: its path, each header's value, its body.
fn h1(
    req: &Req,
    body: &[u8],
    known: (Option<&Rows>, &[String]),
    (authority, keepalive): (&str, bool),
) -> Result<H1, ConfigError> {
    let body_option = if req.body_file.is_some() {
        "body_file"
    } else {
        "body"
    };
    let body = match std::str::from_utf8(body) {
        Ok(text) => parse(text, Escape::None, known, body_option)?,
        // Not text, so no field in it: sent as it is.
        Err(_) => Template::literal(body),
    };
    let mut headers = Vec::with_capacity(req.headers.len());
    for (name, value) in &req.headers {
        headers.push((
            format!("{name}: ").into_bytes(),
            parse(value, Escape::Header, known, "headers")?,
        ));
    }
    Ok(H1 {
        method: req.method.clone().into_bytes(),
        path: parse(&req.path, Escape::Path, known, "path")?,
        fixed: format!(
            " HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: dyno/{}\r\n",
            env!("CARGO_PKG_VERSION")
        )
        .into_bytes(),
        headers,
        sized: matches!(req.method.as_str(), "POST" | "PUT" | "PATCH"),
        close: !keepalive,
        body,
    })
}

/// As [`compile`], for the run: a body file's bytes read now.
pub(crate) fn for_run(
    settings: &Settings,
    reqs: &[(&Req, &[u8])],
    captures: &[String],
    authority: &str,
    keepalive: bool,
) -> Result<Option<Rendered>, DriverError> {
    compile(settings, reqs, captures, authority, keepalive).map_err(|(i, e)| {
        let option = e.option.unwrap_or_default();
        let at = i.map_or(String::new(), |i| format!("request {}: ", i + 1));
        DriverError::new(format!("{at}{option}: {}", e.message))
    })
}
