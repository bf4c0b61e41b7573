//! A headless Chromium driven through ChromeDriver (both from the distribution's packages), for
//! tests of pages dyno writes: open a file, read the browser's console log, run a script, take a
//! screenshot. The WebDriver wire protocol is JSON over HTTP/1.1 on loopback; the few calls
//! needed here are made with a plain `TcpStream`.

use crate::{Running, installed, on_a_free_port, quiet};
use base64::Engine as _;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// How long one WebDriver call may take (starting Chromium is the slowest, about a second).
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// One browser session; ended, with its ChromeDriver, when dropped.
pub struct Browser {
    port: u16,
    session: String,
    _driver: Running,
}

/// One entry of the browser's console log.
#[derive(Debug, Clone)]
pub struct ConsoleEntry {
    /// `SEVERE` (errors, failed loads), `WARNING`, `INFO` or `DEBUG`.
    pub level: String,
    pub message: String,
}

/// Why a WebDriver call failed.
#[derive(Debug, thiserror::Error)]
enum CallError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("ChromeDriver's reply: {0}")]
    Reply(&'static str),
    #[error("{error}: {head}")]
    Json {
        error: serde_json::Error,
        head: String,
    },
    #[error("{0}: {1}")]
    WebDriver(Value, Value),
}

/// One `read`, again when a signal meant for another thread of the test process interrupted it.
fn read_some(s: &mut TcpStream, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match s.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// Makes one WebDriver call and returns its `value`; a WebDriver error is an `Err` with its
/// message.
fn call(port: u16, method: &str, path: &str, body: Option<&Value>) -> Result<Value, CallError> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(CALL_TIMEOUT))?;
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    // ChromeDriver keeps the connection open after its reply: read by Content-Length.
    let mut raw = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let (split, head) = loop {
        let n = read_some(&mut s, &mut chunk)?;
        if n == 0 {
            return Err(CallError::Reply("the connection closed mid-reply"));
        }
        raw.extend_from_slice(&chunk[..n]);
        if let Some(p) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break (p, String::from_utf8_lossy(&raw[..p]).to_ascii_lowercase());
        }
    };
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok());
    loop {
        let body = &raw[split + 4..];
        let complete = match length {
            Some(n) => body.len() >= n,
            None => body.ends_with(b"0\r\n\r\n"),
        };
        if complete {
            break;
        }
        let n = read_some(&mut s, &mut chunk)?;
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&chunk[..n]);
    }
    let mut payload = raw[split + 4..].to_vec();
    if length.is_none() && head.contains("transfer-encoding: chunked") {
        payload = dechunk(&payload).map_err(CallError::Reply)?;
    }
    let v: Value =
        serde_json::from_slice(&payload).map_err(|error| CallError::Json { error, head })?;
    let value = v.get("value").cloned().unwrap_or(Value::Null);
    match value.get("error") {
        Some(err) => Err(CallError::WebDriver(err.clone(), value["message"].clone())),
        None => Ok(value),
    }
}

/// The body of a chunked reply; `Err` says what was wrong with it.
fn dechunk(mut b: &[u8]) -> Result<Vec<u8>, &'static str> {
    let mut out = Vec::new();
    loop {
        let eol = b
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("a chunk without its size line")?;
        let size = std::str::from_utf8(&b[..eol])
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok())
            .ok_or("a bad chunk size")?;
        if size == 0 {
            return Ok(out);
        }
        let data = b.get(eol + 2..eol + 2 + size).ok_or("a short chunk")?;
        out.extend_from_slice(data);
        b = b.get(eol + 4 + size..).ok_or("a short chunk")?;
    }
}

impl Browser {
    /// Starts ChromeDriver and a headless Chromium with a window of `width` × `height`, or
    /// returns `None` (a panic under `DYNO_REQUIRE_SERVERS`) when they are not installed.
    pub fn start(width: u32, height: u32) -> Option<Browser> {
        let driver = installed("chromedriver", &["/usr/bin/chromedriver"])?;
        let chromium = installed("chromium", &["/usr/bin/chromium"])?;
        let (port, running) = on_a_free_port("chromedriver", |port| {
            let child = quiet(&driver).arg(format!("--port={port}")).spawn().ok()?;
            let mut r = Running {
                child,
                stop_signal: libc::SIGTERM,
                _dir: tempfile::tempdir().ok()?,
            };
            let ready = || {
                call(port, "GET", "/status", None)
                    .map(|v| v["ready"] == json!(true))
                    .unwrap_or(false)
            };
            r.ready(Duration::from_secs(10), ready).then_some(r)
        });
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--hide-scrollbars",
                         format!("--window-size={width},{height}")]
            },
            "goog:loggingPrefs": {"browser": "ALL", "performance": "ALL"}
        }}});
        let session = call(port, "POST", "/session", Some(&caps))
            .unwrap_or_else(|e| panic!("starting a Chromium session: {e}"));
        let session = session["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string();
        Some(Browser {
            port,
            session,
            _driver: running,
        })
    }

    fn call(&self, method: &str, what: &str, body: Option<&Value>) -> Value {
        let path = format!("/session/{}/{what}", self.session);
        call(self.port, method, &path, body)
            .unwrap_or_else(|e| panic!("WebDriver {method} {what}: {e}"))
    }

    /// Opens a page and waits for it to load.
    pub fn open(&self, url: &str) {
        self.call("POST", "url", Some(&json!({ "url": url })));
    }

    /// Sets the window's size (the viewport follows).
    pub fn resize(&self, width: u32, height: u32) {
        self.call(
            "POST",
            "window/rect",
            Some(&json!({"width": width, "height": height})),
        );
    }

    /// Runs `script` (a function body; `return` gives the value) in the page.
    pub fn eval(&self, script: &str) -> Value {
        self.call(
            "POST",
            "execute/sync",
            Some(&json!({"script": script, "args": []})),
        )
    }

    /// A PNG of the viewport.
    pub fn screenshot(&self) -> Vec<u8> {
        let b64 = self.call("GET", "screenshot", None);
        base64::engine::general_purpose::STANDARD
            .decode(b64.as_str().expect("a base64 screenshot"))
            .expect("a valid base64 screenshot")
    }

    /// The console entries since the last call: errors, warnings, failed loads.
    pub fn console(&self) -> Vec<ConsoleEntry> {
        let v = self.call("POST", "se/log", Some(&json!({"type": "browser"})));
        v.as_array()
            .map(|a| {
                a.iter()
                    .map(|e| ConsoleEntry {
                        level: e["level"].as_str().unwrap_or("?").to_string(),
                        message: e["message"].as_str().unwrap_or("").to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Browser {
    /// The URL of every request the browser made since the last call (the DevTools network
    /// events ChromeDriver logs): what a page loaded, wherever from.
    pub fn requests(&self) -> Vec<String> {
        let v = self.call("POST", "se/log", Some(&json!({"type": "performance"})));
        let entries = v.as_array().cloned().unwrap_or_default();
        entries
            .iter()
            .filter_map(|e| serde_json::from_str::<Value>(e["message"].as_str()?).ok())
            .filter(|m| m["message"]["method"] == "Network.requestWillBeSent")
            .filter_map(|m| {
                Some(
                    m["message"]["params"]["request"]["url"]
                        .as_str()?
                        .to_string(),
                )
            })
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Ends the session, which closes Chromium; ChromeDriver is stopped by its PID after.
        let _ = call(
            self.port,
            "DELETE",
            &format!("/session/{}", self.session),
            None,
        );
    }
}
