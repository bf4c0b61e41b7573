//! `--profile DIR`: a CPU profile per test of every process dyno started or watches, and of
//! dyno itself, drawn as flame graphs (zodbshootout's `-p`, and the HTTP seed's server run under a
//! profiler).
//!
//! For each test of the first measured repetition, before it starts, a profiler is attached to
//! each process (with its descendants): `perf record -g` for native code, `py-spy record` for a
//! Python interpreter (`/proc/PID/exe` named `python…`). The repetition's thread waits until each
//! profiler samples, so the test is profiled from its first operation; when the test ends each
//! profiler is stopped (SIGINT, by the PID dyno started it with), its stacks are folded and drawn
//! (the `inferno` crate) as `DIR/TARGET/TEST/PROCESS-PID.svg`, beside the folded stacks
//! (`.folded`). Only what was profiled is drawn; a tool that is missing or refused (the kernel's
//! `perf_event_paranoid`, ptrace) is a note in the record, never a failed run. perf samples
//! `cycles` where the machine has a hardware counter and the software clock (`cpu-clock`)
//! where it has none (a VM): the record says which.

use results::ProfileRecord;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// perf's sampling frequency (odd, so as not to beat with periodic work), and py-spy's rate.
const PERF_HZ: u32 = 499;
const PYSPY_HZ: u32 = 500;
/// How long a profiler may take to start sampling, and to write its file once stopped.
const START_WAIT: Duration = Duration::from_secs(10);
const STOP_WAIT: Duration = Duration::from_secs(60);
const SETTLE: Duration = Duration::from_millis(300);

pub struct Profiles {
    inner: std::sync::Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    /// The results directory: paths in the record are relative to it when inside it.
    results: PathBuf,
    perf: Option<PathBuf>,
    pyspy: Option<PathBuf>,
    /// The test being profiled: where its files go, and its profilers.
    running: Mutex<Option<(PathBuf, Vec<Running>)>>,
    /// Adapter sessions started so far (PID, start time): those still alive are profiled in the
    /// tests that follow too.
    adapters: Mutex<Vec<(u32, Option<u64>)>>,
}

/// The profiler a process gets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tool {
    Perf,
    PySpy,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Perf => "perf",
            Tool::PySpy => "py-spy",
        }
    }
}

/// What an adapter session is called in the record and its files.
const ADAPTER_SESSION: &str = "adapter-session";

struct Running {
    process: String,
    pid: u32,
    tool: Tool,
    child: Option<Child>,
    /// Where the profiler writes (perf's data, py-spy's folded stacks), and the files to make.
    raw: PathBuf,
    stem: PathBuf,
    /// The processes profiled: perf follows their children born meanwhile (dyno's adapters
    /// and profilers), whose samples are left out.
    pids: Vec<u32>,
    note: Option<String>,
    log: PathBuf,
}

/// `name` in a folder of `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A file name part: letters, digits, `-`, `_` and `.` kept, anything else `_`.
fn part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `name` in the folder of the program `pid` was started as (a virtual environment's `bin`, whose
/// Python carries a pinned py-spy: adapters/zodb/setup.sh).
fn beside_interpreter(pid: u32, name: &str) -> Option<PathBuf> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let argv0 =
        PathBuf::from(String::from_utf8_lossy(cmdline.split(|&b| b == 0).next()?).into_owned());
    let program = if argv0.is_absolute() {
        argv0
    } else {
        std::fs::read_link(format!("/proc/{pid}/cwd"))
            .ok()?
            .join(argv0)
    };
    Some(program.parent()?.join(name)).filter(|p| p.is_file())
}

fn is_python(pid: u32) -> bool {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .and_then(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy().starts_with("python"))
        })
        .unwrap_or(false)
}

impl Profiles {
    /// Profiles into `dir` (made if missing); `results` is the run's results directory. Adapter
    /// sessions (`exec:`) started during a profiled test are profiled from their handshake on.
    pub fn new(dir: &Path, results: &Path) -> std::io::Result<Profiles> {
        std::fs::create_dir_all(dir)?;
        let inner = std::sync::Arc::new(Inner {
            dir: dir.canonicalize()?,
            results: results
                .canonicalize()
                .unwrap_or_else(|_| results.to_path_buf()),
            perf: on_path("perf"),
            pyspy: on_path("py-spy"),
            running: Mutex::new(None),
            adapters: Mutex::new(Vec::new()),
        });
        let weak = std::sync::Arc::downgrade(&inner);
        targets::exec::on_spawn(std::sync::Arc::new(move |role: &str, pid: u32| {
            if let Some(inner) = weak.upgrade()
                && role == "session"
            {
                inner.attach(ADAPTER_SESSION, pid);
            }
        }));
        Ok(Profiles { inner })
    }
}

impl Inner {
    /// Profiles `pid` until the running test ends, if one runs.
    fn attach(&self, process: &str, pid: u32) {
        if let Ok(mut a) = self.adapters.lock() {
            a.retain(|&(p, t)| engine::monitor::start_time(p) == t);
            a.push((pid, engine::monitor::start_time(pid)));
        }
        let Some(at) =
            (self.running.lock().ok()).and_then(|r| r.as_ref().map(|(at, _)| at.clone()))
        else {
            return;
        };
        let mut r = self.start(process, pid, &[], &at);
        Inner::wait_started(&mut r);
        match self.running.lock() {
            Ok(mut running) => match running.as_mut() {
                Some((now, procs)) if *now == at => procs.push(r),
                // The test ended meanwhile.
                _ => drop(self.finish(r)),
            },
            Err(_) => drop(self.finish(r)),
        }
    }

    /// What the record says of `path`: relative to the results directory when inside it.
    fn shown(&self, path: &Path) -> String {
        path.strip_prefix(&self.results)
            .unwrap_or(path)
            .display()
            .to_string()
    }

    fn start(&self, process: &str, pid: u32, children: &[u32], at: &Path) -> Running {
        let stem = at.join(format!("{}-{pid}", part(process)));
        let log = stem.with_extension("log");
        let tool = if is_python(pid) {
            Tool::PySpy
        } else {
            Tool::Perf
        };
        let mut r = Running {
            process: process.to_string(),
            pid,
            tool,
            child: None,
            raw: stem.with_extension(match tool {
                Tool::Perf => "perf.data",
                Tool::PySpy => "raw",
            }),
            stem,
            pids: std::iter::once(pid)
                .chain(children.iter().copied())
                .collect(),
            note: None,
            log,
        };
        let program = match tool {
            Tool::PySpy => (self.pyspy.clone()).or_else(|| beside_interpreter(pid, "py-spy")),
            Tool::Perf => self.perf.clone(),
        };
        let Some(program) = program else {
            r.note = Some(match tool {
                Tool::PySpy => "py-spy is not installed (pip install py-spy, or adapters/zodb/setup.sh): no profile".into(),
                Tool::Perf => "perf is not installed (Debian's linux-perf): no profile".into(),
            });
            return r;
        };
        let mut cmd = Command::new(&program);
        match tool {
            Tool::PySpy => cmd
                // Without pausing the process for each sample: a py-spy stopped while it holds
                // a process paused would leave it stopped (an adapter that no longer answers).
                .args([
                    "record",
                    "--nonblocking",
                    "--format",
                    "raw",
                    "--subprocesses",
                    "--rate",
                ])
                .arg(PYSPY_HZ.to_string())
                .arg("--pid")
                .arg(pid.to_string())
                .arg("--output")
                .arg(&r.raw),
            Tool::Perf => {
                let pids: Vec<String> = r.pids.iter().map(u32::to_string).collect();
                cmd.args(["record", "-g", "-q", "-F"])
                    .arg(PERF_HZ.to_string())
                    .arg("-p")
                    .arg(pids.join(","))
                    .arg("-o")
                    .arg(&r.raw)
            }
        };
        // Both streams to the log: py-spy says it samples on one of them.
        let log = std::fs::File::create(&r.log).ok();
        let err = log.as_ref().and_then(|f| f.try_clone().ok());
        let to = |f: Option<std::fs::File>| f.map_or_else(Stdio::null, Stdio::from);
        cmd.stdin(Stdio::null()).stdout(to(log)).stderr(to(err));
        match cmd.spawn() {
            Ok(child) => r.child = Some(child),
            Err(e) => r.note = Some(format!("{} did not start: {e}", program.display())),
        }
        r
    }

    /// Waits until the profiler samples: perf has written its file's header, py-spy said so.
    fn wait_started(r: &mut Running) {
        let t0 = Instant::now();
        while t0.elapsed() < START_WAIT {
            let Some(child) = r.child.as_mut() else {
                return;
            };
            if let Ok(Some(status)) = child.try_wait() {
                r.note = Some(format!(
                    "{} exited at once ({status}): {}",
                    r.tool.name(),
                    last_line(&r.log)
                ));
                r.child = None;
                return;
            }
            let started = match r.tool {
                Tool::Perf => std::fs::metadata(&r.raw).is_ok_and(|m| m.len() > 0),
                Tool::PySpy => {
                    std::fs::read_to_string(&r.log).is_ok_and(|t| t.contains("Sampling process"))
                }
            };
            if started {
                // Attached is not yet sampling every thread: a moment more.
                std::thread::sleep(SETTLE);
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops the profiler and draws what it took.
    fn finish(&self, mut r: Running) -> ProfileRecord {
        let mut record = ProfileRecord {
            process: r.process.clone(),
            pid: r.pid,
            tool: r.tool.name().to_string(),
            event: match r.tool {
                Tool::Perf => "cycles".into(),
                Tool::PySpy => {
                    format!("{PYSPY_HZ} Hz wall-clock samples of the interpreter's stacks")
                }
            },
            samples: 0,
            svg: None,
            folded: None,
            note: r.note.take(),
        };
        let Some(mut child) = r.child.take() else {
            return record;
        };
        // SAFETY: kill(2) on the PID of a child this process spawned and has not reaped.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        let t0 = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if t0.elapsed() < STOP_WAIT => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
            }
        };
        let folded = match r.tool {
            Tool::Perf => self.fold_perf(&r, &mut record),
            Tool::PySpy => std::fs::read_to_string(&r.raw)
                // py-spy's folded counts are samples.
                .inspect(|f| record.samples = counts(f))
                .map_err(|e| e.to_string()),
        };
        let _ = std::fs::remove_file(&r.raw);
        let folded = match folded {
            Ok(f) if !f.trim().is_empty() => f,
            Ok(_) => {
                let why = match status {
                    None => format!("{} did not stop within {STOP_WAIT:?}", r.tool.name()),
                    Some(_) => format!(
                        "{} took no samples: the test was shorter than its sampling interval, or the process was idle ({})",
                        r.tool.name(),
                        last_line(&r.log)
                    ),
                };
                add_note(&mut record, &why);
                return record;
            }
            Err(e) => {
                add_note(&mut record, &e);
                return record;
            }
        };
        let folded_path = r.stem.with_extension("folded");
        let svg_path = r.stem.with_extension("svg");
        if std::fs::write(&folded_path, &folded).is_ok() {
            record.folded = Some(self.shown(&folded_path));
        }
        let mut opts = inferno::flamegraph::Options::default();
        opts.title = format!(
            "{} (PID {}), {}",
            r.process,
            r.pid,
            r.stem.parent().map(|p| self.shown(p)).unwrap_or_default()
        );
        // perf weighs each stack by its sample's period: nanoseconds of the software clock, or
        // cycles; py-spy counts samples.
        opts.count_name = match record.event.as_str() {
            "cpu-clock" | "task-clock" => "ns".into(),
            _ if r.tool == Tool::Perf => record.event.clone(),
            _ => "samples".into(),
        };
        match std::fs::File::create(&svg_path).map(std::io::BufWriter::new) {
            Ok(out) => match inferno::flamegraph::from_lines(&mut opts, folded.lines(), out) {
                Ok(()) => record.svg = Some(self.shown(&svg_path)),
                Err(e) => add_note(&mut record, &format!("drawing the flame graph failed: {e}")),
            },
            Err(e) => add_note(&mut record, &format!("{}: {e}", svg_path.display())),
        }
        let _ = std::fs::remove_file(&r.log);
        record
    }

    /// `perf script` of the data, folded; notes the event sampled.
    fn fold_perf(&self, r: &Running, record: &mut ProfileRecord) -> Result<String, String> {
        let perf = self.perf.as_deref().ok_or("perf is not installed")?;
        let mut child = Command::new(perf)
            .args(["script", "-F", "+pid", "-i"])
            .arg(&r.raw)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("perf script did not start: {e}"))?;
        let mut text = String::new();
        if let Some(mut out) = child.stdout.take() {
            out.read_to_string(&mut text)
                .map_err(|e| format!("reading perf script: {e}"))?;
        }
        let _ = child.wait();
        let text = own_samples(&text, &r.pids);
        // Each sample begins with a line at the margin ("comm pid time: period event:"), its
        // stack indented below it.
        record.samples = (text.lines())
            .filter(|l| !l.is_empty() && !l.starts_with(char::is_whitespace))
            .count() as u64;
        if let Some(event) = event_of(perf, &r.raw) {
            record.event = event.clone();
            if event == "cpu-clock" {
                add_note(
                    record,
                    "no hardware cycle counter here (a VM): perf sampled the software clock (cpu-clock)",
                );
            }
        }
        let mut folder = inferno::collapse::perf::Folder::default();
        let mut folded = Vec::new();
        inferno::collapse::Collapse::collapse(
            &mut folder,
            BufReader::new(text.as_bytes()),
            &mut folded,
        )
        .map_err(|e| format!("folding perf's stacks failed: {e}"))?;
        String::from_utf8(folded).map_err(|e| e.to_string())
    }
}

/// The samples of `pids` in `perf script -F +pid` output (blocks separated by blank lines, each
/// headed "comm PID/TID …"): perf follows children born while it records (dyno's adapter
/// processes, its profilers), which are not the process profiled.
fn own_samples(text: &str, pids: &[u32]) -> String {
    let mut out = String::with_capacity(text.len());
    for block in text.split("\n\n") {
        let pid = (block.lines().find(|l| !l.trim().is_empty()))
            .and_then(|h| h.split_whitespace().find(|w| w.contains('/')))
            .and_then(|w| w.split('/').next()?.parse::<u32>().ok());
        if pid.is_some_and(|p| pids.contains(&p)) {
            out.push_str(block.trim_start_matches('\n'));
            out.push_str("\n\n");
        }
    }
    out
}

/// The event a perf data file sampled (`perf evlist`: `cpu-clock:ppp` → `cpu-clock`).
fn event_of(perf: &Path, data: &Path) -> Option<String> {
    let out = Command::new(perf)
        .arg("evlist")
        .arg("-i")
        .arg(data)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty() && !l.starts_with('#'))?;
    Some(first.split(':').next()?.trim().to_string())
}

/// The sum of a folded file's counts.
fn counts(folded: &str) -> u64 {
    (folded.lines())
        .filter_map(|l| {
            l.rsplit_once(' ')
                .and_then(|(_, n)| n.trim().parse::<u64>().ok())
        })
        .sum()
}

/// Adds `more` to the record's note.
fn add_note(record: &mut ProfileRecord, more: &str) {
    record.note = Some(match record.note.take() {
        Some(b) => format!("{b}; {more}"),
        None => more.to_string(),
    });
}

fn last_line(path: &Path) -> String {
    std::fs::File::open(path)
        .ok()
        .and_then(|f| {
            BufReader::new(f)
                .lines()
                .map_while(Result::ok)
                .filter(|l| !l.trim().is_empty())
                .last()
        })
        .unwrap_or_else(|| "(it said nothing)".into())
}

impl engine::runner::Profiler for Profiles {
    fn begin(&self, target: &str, test: &str, processes: &[(String, u32, Vec<u32>)]) {
        let inner = &self.inner;
        let at = inner.dir.join(part(target)).join(part(test));
        let _ = std::fs::create_dir_all(&at);
        // The adapter sessions still running (the same process, not a reused PID).
        let adapters: Vec<(String, u32, Vec<u32>)> = (inner.adapters.lock().ok())
            .map(|a| {
                a.iter()
                    .filter(|&&(p, t)| t.is_some() && engine::monitor::start_time(p) == t)
                    .map(|&(p, _)| (ADAPTER_SESSION.to_string(), p, Vec::new()))
                    .collect()
            })
            .unwrap_or_default();
        let mut started: Vec<Running> = (processes.iter().chain(&adapters))
            .map(|(name, pid, children)| inner.start(name, *pid, children, &at))
            .collect();
        for r in &mut started {
            Inner::wait_started(r);
        }
        let ended = match inner.running.lock() {
            Ok(mut running) => running.replace((at, started)),
            Err(_) => None,
        };
        // A test that never ended (the runner ends each): its profiles are dropped.
        for r in ended.into_iter().flat_map(|(_, procs)| procs) {
            let _ = inner.finish(r);
        }
    }

    fn end(&self) -> Vec<ProfileRecord> {
        let inner = &self.inner;
        let running = match inner.running.lock() {
            Ok(mut r) => r.take(),
            Err(_) => None,
        };
        (running.into_iter())
            .flat_map(|(_, procs)| procs)
            .map(|r| inner.finish(r))
            .collect()
    }
}
