//! An adapter process: started, spoken to in JSON lines (the handshake, each operation, its reply checked), its standard error kept, stopped with a grace.

use super::*;

/// One adapter process and its JSON-lines conversation.
pub struct Adapter {
    pub(super) child: Child,
    pub(super) input: ChildStdin,
    pub(super) output: ChildStdout,
    /// Bytes read that are not yet a whole line.
    pub(super) buf: Vec<u8>,
    pub(super) next_id: u64,
    pub(super) timeout: Duration,
    pub(super) program: String,
    pub(super) stderr: PathBuf,
    /// Set once the conversation is broken (an exit, a hang, garbage): every later call fails
    /// at once with the same reason.
    pub(super) broken: Option<OpError>,
    /// Binary framing, once both sides agreed on it in the handshake.
    pub binary: bool,
    /// A request being built.
    pub(super) out: Vec<u8>,
    /// The last binary frame's body.
    pub(super) body: Vec<u8>,
    /// The adapter's output and input pipes, as a fiber waits on them.
    pub(super) out_wait: engine::fiber::Waiter,
    pub(super) in_wait: engine::fiber::Waiter,
}

/// The capacity asked for the adapter's output pipe.
const PIPE_BYTES: libc::c_int = 1 << 20;

impl Adapter {
    /// Starts `program` with its standard error in a file of its own.
    pub fn spawn(program: &Path, timeout: Duration) -> Result<Adapter, OpError> {
        let dir = stderr_dir();
        let stderr = dir.join(format!(
            "adapter-{}-{}.stderr",
            std::process::id(),
            SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let err_file = std::fs::File::create(&stderr)
            .map_err(|e| OpError::io("creating the adapter's stderr file", &e))?;
        let mut cmd = if program.extension().is_some_and(|e| e == "py") {
            let mut c = Command::new("python3");
            c.arg(program);
            c
        } else {
            Command::new(program)
        };
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(err_file))
            .spawn()
            .map_err(|e| {
                OpError::new(
                    ErrorClass::Io,
                    format!("starting the adapter {}: {e}", program.display()),
                )
            })?;
        let input = child.stdin.take().expect("piped");
        let output = child.stdout.take().expect("piped");
        // Both pipes non-blocking: every wait on them is bounded, and yields on a fiber.
        for fd in [output.as_raw_fd(), input.as_raw_fd()] {
            // SAFETY: setting O_NONBLOCK on a pipe dyno owns.
            unsafe {
                let fl = libc::fcntl(fd, libc::F_GETFL);
                libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
            }
        }
        // A reply of a batched read (hundreds of KB) in one write, not a wake-up per 64 KB:
        // as large a pipe as the kernel gives (fs.pipe-max-size, 1 MB by default; a refusal
        // keeps the default).
        // SAFETY: F_SETPIPE_SZ on a pipe dyno owns; it changes only its capacity.
        unsafe { libc::fcntl(output.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_BYTES) };
        let (out_wait, in_wait) = (
            engine::fiber::Waiter::new(output.as_raw_fd()),
            engine::fiber::Waiter::new(input.as_raw_fd()),
        );
        Ok(Adapter {
            child,
            input,
            output,
            buf: Vec::with_capacity(4096),
            next_id: 0,
            timeout,
            program: program.display().to_string(),
            stderr,
            broken: None,
            binary: false,
            out: Vec::with_capacity(512),
            body: Vec::with_capacity(512),
            out_wait,
            in_wait,
        })
    }

    /// The handshake: `init` with the role and options, checked `init_ok`.
    pub fn init(
        &mut self,
        role: &str,
        namespace: Option<&str>,
        options: &BTreeMap<String, String>,
        framing: Framing,
    ) -> Result<Hello, OpError> {
        let offered = framing.offered();
        let r = self.call(
            json!({"type": "init", "protocol": PROTOCOL, "role": role, "namespace": namespace,
                   "options": options, "framings": offered}),
            "init_ok",
        )?;
        let chosen = r.get("framing").and_then(Value::as_str).unwrap_or("json");
        if !offered.contains(&chosen) {
            return Err(self.protocol_error(format!(
                "its init_ok chose the {chosen:?} framing, which dyno did not offer ({offered:?})"
            )));
        }
        if r.get("protocol").and_then(Value::as_u64) != Some(PROTOCOL) {
            return Err(self.fail(
                ErrorClass::Protocol,
                format!(
                    "its init_ok speaks protocol {}, dyno speaks {PROTOCOL}",
                    r.get("protocol")
                        .map_or("(none)".to_string(), |p| p.to_string())
                ),
            ));
        }
        let text = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
        let (Some(name), Some(durability)) = (text("name"), text("durability")) else {
            return Err(self.protocol_error(
                "init_ok must name the adapter (\"name\") and its durability (\"durability\")",
            ));
        };
        let ops: Vec<String> = r
            .get("ops")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|o| o.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        for need in ["get", "put", "delete", "begin", "commit"] {
            if !ops.iter().any(|o| o == need) {
                return Err(self.protocol_error(format!(
                    "init_ok's \"ops\" lacks {need:?}: every adapter has get, put, delete, begin and commit"
                )));
            }
        }
        let versions = r
            .get("versions")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            v.as_str().map_or_else(|| v.to_string(), str::to_string),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        // Every message after init_ok is in the framing chosen.
        self.binary = chosen == "binary";
        Ok(Hello {
            framing: chosen.to_string(),
            name,
            ops,
            durability,
            versions,
            counts_storage_reads: r
                .get("storage_reads")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            client_cache: text("client_cache").filter(|c| !c.trim().is_empty()),
            no_drop_caches: text("no_drop_caches").filter(|c| !c.trim().is_empty()),
            sessions: match r.get("sessions") {
                None | Some(Value::Null) => None,
                Some(v) => match v.as_u64() {
                    Some(n) if n > 0 => Some(n),
                    _ => {
                        return Err(self.protocol_error(format!(
                            "init_ok's \"sessions\" is {v}: a count of at least 1, or absent when there is no limit"
                        )));
                    }
                },
            },
        })
    }

    /// Sends one message (a line, or a JSON frame) with a fresh `msg_id`.
    pub(super) fn send(&mut self, mut msg: Value) -> Result<u64, OpError> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        self.next_id += 1;
        msg["msg_id"] = json!(self.next_id);
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        if self.binary {
            // The header's length is known once the message is written after it.
            bin::head(&mut out, bin::JSON, self.next_id, 0);
            serde_json::to_writer(&mut out, &msg).expect("a JSON value serializes");
            let len = (out.len() - 4) as u32;
            out[..4].copy_from_slice(&len.to_le_bytes());
        } else {
            serde_json::to_writer(&mut out, &msg).expect("a JSON value serializes");
            out.push(b'\n');
        }
        let written = self.write_bounded(&out);
        self.out = out;
        written.map(|()| self.next_id)
    }

    /// Sends `msg` and returns the reply of type `want` to it; an `error` reply is the
    /// operation's failure (its class from its code).
    pub fn call(&mut self, msg: Value, want: &str) -> Result<Value, OpError> {
        let id = self.send(msg)?;
        let r = self.receive()?;
        if r.get("in_reply_to").and_then(Value::as_u64) != Some(id) {
            return Err(self.protocol_error(format!("a reply not to message {id} (in_reply_to)")));
        }
        match r.get("type").and_then(Value::as_str) {
            Some(t) if t == want => Ok(r),
            Some("error") => Err(error_reply(&r)),
            Some(t) => Err(self.protocol_error(format!("a {t:?} reply where {want:?} was due"))),
            None => Err(self.protocol_error("a reply without a \"type\"")),
        }
    }

    /// The next message, parsed, within the timeout: a line, or (binary framing) a JSON frame.
    pub(super) fn receive(&mut self) -> Result<Value, OpError> {
        if self.binary {
            let kind = self.frame()?;
            if kind != bin::JSON {
                return Err(self.protocol_error(format!(
                    "a binary frame of kind {kind:#x} where a JSON one was due"
                )));
            }
            let parsed = json_object(&self.body);
            return parsed.map_err(|what| self.fail(ErrorClass::Protocol, what));
        }
        let end = self.fill(|b| b.iter().position(|&c| c == b'\n').map(|e| e + 1))?;
        let parsed = json_object(&self.buf[..end]);
        self.buf.drain(..end);
        parsed.map_err(|what| self.fail(ErrorClass::Protocol, what))
    }

    /// The next binary frame's kind; its body is in `self.body`.
    pub(super) fn frame(&mut self) -> Result<u8, OpError> {
        let end = self.fill(|b| {
            let len = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
            (b.len() >= 4 + len).then_some(4 + len)
        })?;
        if end < 9 {
            self.buf.drain(..end);
            return Err(
                self.protocol_error("a binary frame shorter than its header (kind, msg_id)")
            );
        }
        let kind = self.buf[4];
        let id = u32::from_le_bytes(self.buf[5..9].try_into().expect("4 bytes"));
        self.body.clear();
        self.body.extend_from_slice(&self.buf[9..end]);
        self.buf.drain(..end);
        if u64::from(id) != self.next_id {
            return Err(
                self.protocol_error(format!("a reply to message {id}, not {}", self.next_id))
            );
        }
        Ok(kind)
    }

    /// Reads until `complete` finds a whole message at the start of the buffer (its end),
    /// within the timeout.
    pub(super) fn fill(
        &mut self,
        complete: impl Fn(&[u8]) -> Option<usize>,
    ) -> Result<usize, OpError> {
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(end) = complete(&self.buf) {
                return Ok(end);
            }
            if self.buf.len() > MAX_LINE {
                return Err(self.fail(
                    ErrorClass::Protocol,
                    format!(
                        "wrote more than {} MiB without ending a line",
                        MAX_LINE >> 20
                    ),
                ));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let t = humantime::format_duration(self.timeout);
                return Err(self.fail(
                    ErrorClass::Timeout,
                    format!("did not answer within {t} (hung)"),
                ));
            }
            // On a fiber, the thread runs the other clients until the adapter has written.
            match self.out_wait.wait(true, Some(left)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
                Err(e) => return Err(self.gone(&format!("could not be waited on ({e})"))),
            }
            let mut chunk = [0u8; 65536];
            match self.output.read(&mut chunk) {
                Ok(0) => return Err(self.gone("exited")),
                Ok(n) => {
                    // A short read drained the pipe: the next waits for the poller.
                    if n < chunk.len() {
                        self.out_wait.not_ready(true);
                    }
                    self.buf.extend_from_slice(&chunk[..n])
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    self.out_wait.not_ready(true)
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.gone(&format!("could not be read from ({e})"))),
            }
        }
    }

    /// Writes all of `data` to the adapter's input within the timeout: an adapter that stops
    /// reading (its pipe full) is hung, not a reason for dyno to block.
    pub(super) fn write_bounded(&mut self, mut data: &[u8]) -> Result<(), OpError> {
        let deadline = Instant::now() + self.timeout;
        while !data.is_empty() {
            match self.input.write(data) {
                Ok(n) => data = &data[n..],
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    self.in_wait.not_ready(false);
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() || self.in_wait.wait(false, Some(left)).is_err() {
                        let t = humantime::format_duration(self.timeout);
                        return Err(self.fail(
                            ErrorClass::Timeout,
                            format!("did not read its input within {t} (hung)"),
                        ));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.gone(&format!("could not be written to ({e})"))),
            }
        }
        Ok(())
    }

    /// Sends one binary request (`kind`, its body the concatenation of `parts`) and returns the
    /// reply's kind, its body in `self.body`; an error frame is the operation's failure.
    pub(super) fn call_bin(&mut self, kind: u8, parts: &[&[u8]]) -> Result<u8, OpError> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        self.next_id += 1;
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        bin::head(
            &mut out,
            kind,
            self.next_id,
            parts.iter().map(|p| p.len()).sum(),
        );
        for p in parts {
            out.extend_from_slice(p);
        }
        let written = self.write_bounded(&out);
        self.out = out;
        written?;
        match self.frame()? {
            bin::ERROR if self.body.len() < 4 => {
                Err(self.protocol_error("an error frame without its code"))
            }
            bin::ERROR => {
                let code = u32::from_le_bytes(self.body[..4].try_into().expect("4 bytes"));
                let text = String::from_utf8_lossy(&self.body[4..]).into_owned();
                Err(error_reply(&json!({"code": code, "text": text})))
            }
            bin::JSON => match json_object(&self.body) {
                Ok(v) if v.get("type").and_then(Value::as_str) == Some("error") => {
                    Err(error_reply(&v))
                }
                _ => Err(self.protocol_error("a JSON reply to a binary request")),
            },
            k => Ok(k),
        }
    }

    /// Decodes the base64 value `field` of a reply into `out`.
    pub(super) fn value(
        &mut self,
        r: &Value,
        field: &str,
        out: &mut Vec<u8>,
    ) -> Result<(), OpError> {
        let text = r
            .get(field)
            .and_then(Value::as_str)
            .ok_or_else(|| self.protocol_error(format!("the reply has no {field:?} (base64)")))?;
        decode_into(text, out)
            .map_err(|_| self.protocol_error(format!("the reply's {field:?} is not base64")))
    }

    pub(super) fn protocol_error(&mut self, what: impl Into<String>) -> OpError {
        self.fail(ErrorClass::Protocol, what.into())
    }

    /// Breaks the conversation for good with `what` the adapter did, and kills the process.
    pub(super) fn fail(&mut self, class: ErrorClass, what: String) -> OpError {
        let e = OpError::new(
            class,
            format!("adapter {}: {what}{}", self.program, self.stderr_tail()),
        );
        self.broken = Some(e.clone());
        self.kill();
        e
    }

    /// The adapter went away: how it ended, and what it said last.
    pub(super) fn gone(&mut self, what: &str) -> OpError {
        let status = (0..20)
            .find_map(|_| match self.child.try_wait() {
                Ok(Some(s)) => Some(s.to_string()),
                _ => {
                    engine::fiber::sleep(Duration::from_millis(5));
                    None
                }
            })
            .unwrap_or_else(|| "still running".into());
        self.fail(ErrorClass::Reset, format!("{what} ({status})"))
    }

    /// `; its stderr ends: "…"` from the adapter's standard error, when it wrote any.
    pub(super) fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let last: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        match last.last() {
            Some(l) => format!(
                "; its stderr ({}) ends: {:?}",
                self.stderr.display(),
                l.trim()
            ),
            None => String::new(),
        }
    }

    pub(super) fn kill(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // The process dyno started (its own child, not yet reaped: the PID is still its).
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// Ends the process: a `close` message, then a grace period to exit, then a kill.
    pub fn close(&mut self) {
        if self.broken.is_none() {
            let _ = self.send(json!({"type": "close"}));
        }
        self.finish();
    }

    /// Waits up to the grace period for the process to exit (it was told to), then kills it.
    pub(super) fn finish(&mut self) {
        let t0 = Instant::now();
        while t0.elapsed() < EXIT_GRACE {
            match self.child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) => engine::fiber::sleep(Duration::from_millis(5)),
                Err(_) => break,
            }
        }
        self.kill();
    }
}

impl Drop for Adapter {
    fn drop(&mut self) {
        self.kill();
    }
}

pub(super) static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub(super) static LOG_DIR: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

/// Told of each adapter process once it has shaken hands: its role and PID.
pub(super) type SpawnHook = std::sync::Arc<dyn Fn(&str, u32) + Send + Sync>;
pub(super) static SPAWNED: std::sync::Mutex<Option<SpawnHook>> = std::sync::Mutex::new(None);

/// Tells `hook` of every adapter process started from now on, once it has answered its
/// handshake (`--profile` attaches a profiler to it), on the thread that started it.
pub fn on_spawn(hook: SpawnHook) {
    *SPAWNED.lock().unwrap_or_else(|p| p.into_inner()) = Some(hook);
}

/// Keeps adapters' standard error in `dir` from now on (`dyno run` gives its results directory).
pub fn set_log_dir(dir: &Path) {
    *LOG_DIR.lock().unwrap_or_else(|p| p.into_inner()) = Some(dir.to_path_buf());
}

/// Where adapters' standard error goes: the run's results directory ([`set_log_dir`]), else the
/// temporary directory.
pub(super) fn stderr_dir() -> PathBuf {
    let dir = LOG_DIR.lock().unwrap_or_else(|p| p.into_inner()).clone();
    dir.unwrap_or_else(std::env::temp_dir)
}

/// `line` as a JSON object, or what the adapter wrote instead (quoted, at most 80 bytes).
pub(super) fn json_object(line: &[u8]) -> Result<Value, String> {
    match serde_json::from_slice::<Value>(line) {
        Ok(v) if v.is_object() => Ok(v),
        _ => {
            let shown = String::from_utf8_lossy(&line[..line.len().min(80)]);
            Err(format!(
                "wrote a line that is not a JSON object: {:?}",
                shown.trim_end()
            ))
        }
    }
}

/// An adapter's `error` reply as an operation's failure: the class from its code (Maelstrom's
/// codes: 0 timeout, 10 not supported, 11 temporarily unavailable, 12 malformed request,
/// 13 crash, 14 abort, 20 key does not exist, 30 transaction conflict).
pub(super) fn error_reply(r: &Value) -> OpError {
    let code = r.get("code").and_then(Value::as_u64).unwrap_or(13);
    let text = r.get("text").and_then(Value::as_str).unwrap_or("(no text)");
    let (class, what) = match code {
        0 => (ErrorClass::Timeout, "timeout"),
        10 => return OpError::new(ErrorClass::Application, format!("{NOT_SUPPORTED}{text}")),
        11 => (ErrorClass::Refused, "temporarily unavailable"),
        12 => (ErrorClass::Protocol, "malformed request"),
        13 => (ErrorClass::Reset, "crash"),
        14 => (ErrorClass::Application, "abort"),
        20 => (ErrorClass::NotFound, "key does not exist"),
        30 => (ErrorClass::Application, "transaction conflict"),
        _ => (ErrorClass::Application, "error"),
    };
    OpError::new(class, format!("adapter: {what} ({code}): {text}"))
}
