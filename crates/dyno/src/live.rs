//! What a running `dyno run` shows while it works, on stderr: a progress bar with an ETA for a
//! finite run, or one status line per interval for a long load run; and, with `--metrics-addr`,
//! live Prometheus metrics. Nothing here measures: it reads the runner's [`Progress`] reports.

use engine::driver::ErrorClass;
use engine::runner::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// How the run shows its progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Off,
    Bar,
    Lines,
}

impl Mode {
    pub const NAMES: &[&str] = &["auto", "bar", "lines", "off"];

    /// `auto`: off unless stdout is a terminal (a report piped to a file stays clean); then
    /// status lines for load runs of a minute or more, the bar for the rest.
    pub fn choose(asked: &str, quiet: bool, long_load: bool) -> Option<Mode> {
        use std::io::IsTerminal;
        Some(match asked {
            _ if quiet => Mode::Off,
            "auto" if !std::io::stdout().is_terminal() => Mode::Off,
            "auto" if long_load => Mode::Lines,
            "auto" | "bar" => Mode::Bar,
            "lines" => Mode::Lines,
            "off" => Mode::Off,
            _ => return None,
        })
    }
}

/// The progress display: a bar of the plan's cases (a load case advances with its elapsed time),
/// or status lines.
pub struct Display {
    mode: Mode,
    bar: Option<ProgressBar>,
    /// The end of the last interval a status line was printed for, and the target and
    /// repetition it belongs to.
    printed_ns: u64,
    at: (String, u32),
    metrics: Option<Arc<Mutex<String>>>,
}

/// Per mille of a case, for the bar.
const STEPS: u64 = 1000;

impl Display {
    pub fn new(mode: Mode, metrics: Option<Arc<Mutex<String>>>) -> Display {
        let bar = (mode == Mode::Bar).then(|| {
            let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% ETA {eta} {msg}",
                )
                .expect("a valid template"),
            );
            b
        });
        Display {
            mode,
            bar,
            printed_ns: 0,
            at: (String::new(), 0),
            metrics,
        }
    }

    /// Takes one report from the runner.
    pub fn update(&mut self, p: &Progress) {
        if let Some(m) = &self.metrics
            && let Ok(mut text) = m.lock()
        {
            *text = metrics(p);
        }
        // A new repetition starts its intervals from zero (another case's too: its clock goes
        // back). Where the plan stands moves as tests report within one repetition.
        let back = p
            .live
            .and_then(|l| l.last)
            .is_some_and(|l| l.end_ns < self.printed_ns);
        if (p.target, p.rep) != (self.at.0.as_str(), self.at.1) || back {
            self.at = (p.target.to_string(), p.rep);
            self.printed_ns = 0;
        }
        match self.mode {
            Mode::Off => {}
            Mode::Bar => self.bar(p),
            Mode::Lines => self.line(p),
        }
    }

    fn bar(&mut self, p: &Progress) {
        let Some(bar) = &self.bar else { return };
        bar.set_length(p.cases as u64 * STEPS);
        let within = p
            .live
            .and_then(|l| {
                let planned = l.planned_ns? as f64;
                let rep = (p.rep as f64 + (l.elapsed_ns as f64 / planned).min(1.0))
                    / p.reps.max(1) as f64;
                Some((rep * STEPS as f64) as u64)
            })
            .unwrap_or(0);
        bar.set_position(p.done as u64 * STEPS + within);
        let mut msg = format!("{} {}", p.target, p.test);
        if let Some(last) = p.live.and_then(|l| l.last) {
            let _ = write!(
                msg,
                ": {} {}/s, p99 {}",
                report::units::rate(last.responses_per_s()),
                p.live.map_or("resp", |l| l.unit.0),
                report::units::latency(last.p99_ns)
            );
        }
        bar.set_message(msg);
        if p.done == p.cases {
            bar.finish_and_clear();
        }
    }

    fn line(&mut self, p: &Progress) {
        let Some(l) = p.live else { return };
        let Some(last) = l.last else { return };
        if last.end_ns <= self.printed_ns {
            return;
        }
        self.printed_ns = last.end_ns;
        let of = l
            .planned_ns
            .map(|n| format!("/{:.0}s", n as f64 / 1e9))
            .unwrap_or_default();
        eprintln!(
            "dyno: [{:>6.0}s{of}] {} {}: {} {}/s, p50 {}, p99 {}, max {}, errors {}; total {} {}, {} errors",
            last.end_ns as f64 / 1e9,
            p.target,
            p.test,
            report::units::rate(last.responses_per_s()),
            l.unit.0,
            report::units::latency(last.p50_ns),
            report::units::latency(last.p99_ns),
            report::units::latency(last.max_ns),
            last.errors,
            report::units::count(l.total.responses),
            l.unit.1,
            report::units::count(l.total.error_count()),
        );
    }
}

/// Writes a metric family's `# HELP` and `# TYPE` lines.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// The Prometheus text exposition of one progress report.
pub fn metrics(p: &Progress) -> String {
    let mut out = String::new();
    for (name, help, v) in [
        ("dyno_cases_done", "Cases of the plan finished.", p.finished),
        ("dyno_cases", "Cases in the plan.", p.cases),
    ] {
        family(&mut out, name, "gauge", help);
        let _ = writeln!(out, "{name} {v}");
    }
    let Some(l) = p.live else { return out };
    let labels = format!(
        "target=\"{}\",test=\"{}\"",
        escape(p.target),
        escape(p.test)
    );
    let t = &l.total;
    for (name, help, v) in [
        (
            "dyno_requests_total",
            "Requests started in the running repetition.",
            t.requests,
        ),
        (
            "dyno_responses_total",
            "Complete responses in the running repetition.",
            t.responses,
        ),
        (
            "dyno_ok_total",
            "Successful responses (HTTP 2xx) in the running repetition.",
            t.ok,
        ),
        (
            "dyno_bytes_received_total",
            "Bytes read from the target.",
            t.bytes_in,
        ),
        (
            "dyno_bytes_sent_total",
            "Bytes written to the target.",
            t.bytes_out,
        ),
    ] {
        family(&mut out, name, "counter", help);
        let _ = writeln!(out, "{name}{{{labels}}} {v}");
    }
    family(
        &mut out,
        "dyno_errors_total",
        "counter",
        "Failed requests by class.",
    );
    for c in ErrorClass::ALL {
        let _ = writeln!(
            out,
            "dyno_errors_total{{{labels},class=\"{}\"}} {}",
            c.as_str(),
            t.errors[c as usize]
        );
    }
    latency(&mut out, &labels, &t.latency);
    let Some(last) = l.last else { return out };
    // The last interval's figures, named as `--push` sends them.
    for (name, help, value) in crate::push::SERIES {
        family(&mut out, name, "gauge", help);
        let _ = writeln!(out, "{name}{{{labels}}} {:e}", value(&last));
    }
    let name = "dyno_elapsed_seconds";
    family(&mut out, name, "gauge", "Time into the running repetition.");
    let _ = writeln!(out, "{name}{{{labels}}} {:e}", l.elapsed_ns as f64 / 1e9);
    out
}

/// The latency summary of the running repetition, `labels` on each line.
fn latency(out: &mut String, labels: &str, h: &results::Histogram) {
    family(
        out,
        "dyno_latency_seconds",
        "summary",
        "Latency from each request's intended start (corrected for coordinated omission), over the running repetition.",
    );
    for q in [0.5, 0.9, 0.99, 0.999, 0.9999] {
        let v = if h.is_empty() {
            0
        } else {
            h.value_at_quantile(q)
        };
        let _ = writeln!(
            out,
            "dyno_latency_seconds{{{labels},quantile=\"{q}\"}} {:e}",
            v as f64 / 1e9
        );
    }
    let sum_s = h.mean() * h.len() as f64 / 1e9;
    let _ = writeln!(out, "dyno_latency_seconds_sum{{{labels}}} {sum_s:e}");
    let _ = writeln!(out, "dyno_latency_seconds_count{{{labels}}} {}", h.len());
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Serves the latest metrics text at `/metrics` (any other path: 404) until dropped.
pub struct MetricsServer {
    pub addr: SocketAddr,
    _server: crate::ui::http::Server,
}

impl MetricsServer {
    pub fn start(addr: &str, text: Arc<Mutex<String>>) -> std::io::Result<MetricsServer> {
        let handler: crate::ui::http::Handler = Arc::new(move |r, conn, _| {
            let (status, body) = match r.path.as_str() {
                "/metrics" => ("200 OK", text.lock().map(|t| t.clone()).unwrap_or_default()),
                _ => ("404 Not Found", "dyno serves /metrics\n".to_string()),
            };
            let kind = "text/plain; version=0.0.4; charset=utf-8";
            crate::ui::http::respond(conn, status, kind, body.as_bytes())
        });
        let server = crate::ui::http::Server::start(addr, "dyno-metrics", handler)?;
        Ok(MetricsServer {
            addr: server.addr,
            _server: server,
        })
    }
}
