//! A no-op adapter (docs/src/reference/adapter-protocol.md), compiled: the floor of the adapter protocol's
//! cost, as `mem:` is the floor of the built-in drivers. It keeps each session's values in a
//! hash map of its own process (each client reads back only what it wrote, as the shootout's
//! clients do), and does nothing else: what a run through it measures is the protocol — two
//! pipe transfers and a process switch each way — and dyno's side of it.
//!
//! `cargo build --release --example noop_adapter`; then `exec:target/release/examples/noop_adapter`.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, Read, Write};
use targets::exec::bin::{self, BEGIN, COMMIT, DELETE, ERROR, GET, JSON, OK, PUT, VALUE};

struct Noop {
    values: HashMap<u64, Vec<u8>>,
    done: bool,
}

impl Noop {
    /// One JSON message's reply.
    fn handle(&mut self, msg: &Value, binary: &mut bool) -> Value {
        let id = msg.get("msg_id").cloned().unwrap_or(Value::Null);
        let key = || {
            msg.get("key")
                .and_then(Value::as_str)
                .and_then(|k| k.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let reply = |t: &str| json!({"in_reply_to": id, "type": t});
        match msg.get("type").and_then(Value::as_str).unwrap_or("") {
            "init" => {
                let offered = msg.get("framings").and_then(Value::as_array);
                *binary = offered.is_some_and(|o| o.iter().any(|f| f == "binary"));
                json!({"in_reply_to": id, "type": "init_ok", "protocol": 1, "name": "noop (Rust)",
                       "durability": "none (a hash map per process)", "versions": {},
                       "ops": ["get", "put", "delete", "begin", "commit"], "storage_reads": false,
                       "framing": if *binary { "binary" } else { "json" }})
            }
            "open" => json!({"in_reply_to": id, "type": "open_ok", "namespace": "noop"}),
            "drop_caches" => {
                json!({"in_reply_to": id, "type": "error", "code": 10, "text": "the no-op adapter has no caches"})
            }
            "close" => {
                self.done = true;
                reply("close_ok")
            }
            "begin" => reply("begin_ok"),
            "commit" => reply("commit_ok"),
            "put" => {
                use base64::Engine;
                let v = msg.get("value").and_then(Value::as_str).unwrap_or("");
                let v = base64::engine::general_purpose::STANDARD
                    .decode(v)
                    .unwrap_or_default();
                self.values.insert(key(), v);
                reply("put_ok")
            }
            "get" => match self.values.get(&key()) {
                Some(v) => {
                    use base64::Engine;
                    json!({"in_reply_to": id, "type": "get_ok",
                           "value": base64::engine::general_purpose::STANDARD.encode(v)})
                }
                None => {
                    json!({"in_reply_to": id, "type": "error", "code": 20, "text": "no such key"})
                }
            },
            "delete" => match self.values.remove(&key()) {
                Some(_) => reply("delete_ok"),
                None => {
                    json!({"in_reply_to": id, "type": "error", "code": 20, "text": "no such key"})
                }
            },
            other => {
                json!({"in_reply_to": id, "type": "error", "code": 10, "text": format!("no operation {other:?}")})
            }
        }
    }
}

/// `out` becomes one frame: `kind`, `id`, and the body `parts` end to end (no copy into a body
/// of its own first).
fn frame(out: &mut Vec<u8>, kind: u8, id: u32, parts: &[&[u8]]) {
    out.clear();
    bin::head(
        out,
        kind,
        u64::from(id),
        parts.iter().map(|p| p.len()).sum(),
    );
    for p in parts {
        out.extend_from_slice(p);
    }
}

/// `out` becomes an error frame: Maelstrom's `code`, and `text`.
fn error(out: &mut Vec<u8>, id: u32, code: u32, text: &str) {
    frame(out, ERROR, id, &[&code.to_le_bytes(), text.as_bytes()]);
}

fn main() {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let stdout = std::io::stdout();
    let mut output = stdout.lock();
    let mut noop = Noop {
        values: HashMap::new(),
        done: false,
    };
    let mut binary = false;
    let mut line = String::new();
    // JSON lines until the handshake says otherwise.
    while !binary && !noop.done {
        line.clear();
        if input.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let mut r = serde_json::to_vec(&noop.handle(&msg, &mut binary)).expect("serializes");
        r.push(b'\n');
        if output.write_all(&r).and_then(|()| output.flush()).is_err() {
            return;
        }
    }
    let mut buf = Vec::new();
    let mut out = Vec::new();
    while !noop.done {
        let mut head = [0u8; 4];
        if input.read_exact(&mut head).is_err() {
            return;
        }
        buf.resize(u32::from_le_bytes(head) as usize, 0);
        if buf.len() < 5 || input.read_exact(&mut buf).is_err() {
            return;
        }
        let (kind, id) = (
            buf[0],
            u32::from_le_bytes(buf[1..5].try_into().expect("4 bytes")),
        );
        let body = &buf[5..];
        let key = || {
            u64::from_le_bytes(
                body.get(..8)
                    .and_then(|k| k.try_into().ok())
                    .unwrap_or([0; 8]),
            )
        };
        match kind {
            GET => match noop.values.get(&key()) {
                Some(v) => frame(&mut out, VALUE, id, &[&0u32.to_le_bytes(), v]),
                None => error(&mut out, id, 20, "no such key"),
            },
            PUT => {
                // An overwrite reuses the value's buffer.
                let v = noop.values.entry(key()).or_default();
                v.clear();
                v.extend_from_slice(body.get(8..).unwrap_or_default());
                frame(&mut out, OK, id, &[]);
            }
            DELETE => match noop.values.remove(&key()) {
                Some(_) => frame(&mut out, OK, id, &[]),
                None => error(&mut out, id, 20, "no such key"),
            },
            BEGIN | COMMIT => frame(&mut out, OK, id, &[]),
            JSON => {
                let msg: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
                let r = serde_json::to_vec(&noop.handle(&msg, &mut binary)).expect("serializes");
                frame(&mut out, JSON, id, &[&r]);
            }
            _ => error(&mut out, id, 12, "unknown kind"),
        }
        if output
            .write_all(&out)
            .and_then(|()| output.flush())
            .is_err()
        {
            return;
        }
    }
}
