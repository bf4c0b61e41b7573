//! Watches processes while a run goes on: once per interval (a second by default), on the run's
//! clock, each watched process and its descendants are read from `/proc`: CPU time, resident
//! memory, threads, open files, bytes read and written.
//!
//! One thread samples every watched process; nothing here touches the measured path. Memory is
//! bounded however long the run: a series holds at most [`MAX_SAMPLES`] samples
//! ([`results::series::Capped`]); when it is full every pair of neighbours becomes one (the larger
//! RSS, threads and open files; the later counters; the mean CPU) and the interval doubles, so a
//! week at one sample a second keeps the whole week at a coarser grain. A process that exits keeps its series; its later samples say
//! `processes: 0`.
//!
//! Linux only (`/proc`); elsewhere [`Monitor::start`] says it cannot watch.

use crate::clock::Clock;
use results::series::Capped;
use results::{ProcessSeries, ResourceSample, ResourceSummary, WatchSource};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Samples kept per series: 4,096 × 80 bytes = 320 KiB, at one a second 68 minutes before the
/// first thinning, and a week in 2.5-minute steps.
pub const MAX_SAMPLES: usize = 4096;
/// The sampling interval the issue of record asks for: once a second.
pub const INTERVAL: Duration = Duration::from_secs(1);

/// A process to watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watch {
    pub target: Option<String>,
    pub pid: u32,
    pub source: WatchSource,
}

/// The running sampler. [`Monitor::series`] reads the series so far (for checkpoints);
/// [`Monitor::stop`] takes one last sample and returns them.
pub struct Monitor {
    state: Arc<Mutex<Vec<Acc>>>,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
    clock: Clock,
}

/// What the kernel says of one process.
#[derive(Debug, Clone, Copy, Default)]
struct Proc {
    ppid: u32,
    cpu_ticks: u64,
    rss_pages: u64,
    threads: u64,
    /// Clock ticks since boot when the process started: a reused PID has another.
    start_time: u64,
}

/// One series being built, with what the next CPU figure needs.
struct Acc {
    watch: Watch,
    /// `/proc/PID/comm` when the watch began.
    command: String,
    samples: Capped<ResourceSample>,
    last_cpu_ticks: Option<(u64, u64)>,
    interval_ns: u64,
}

fn ticks_per_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as u64 } else { 4096 }
}

/// Parses `/proc/PID/stat`: the fields after the command (which may hold spaces and parentheses).
fn parse_stat(text: &str) -> Option<Proc> {
    let rest = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_ascii_whitespace().collect();
    // Field numbers in proc(5) count from 1 with pid and comm as 1 and 2; `rest` starts at 3.
    let at = |n: usize| f.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some(Proc {
        ppid: at(4)? as u32,
        cpu_ticks: at(14)? + at(15)?,
        threads: at(20)?,
        start_time: at(22)?,
        rss_pages: at(24)?,
    })
}

/// When process `pid` started (`/proc/PID/stat` field 22, clock ticks since boot).
pub fn start_time(pid: u32) -> Option<u64> {
    read_proc(pid).map(|p| p.start_time)
}

fn read_proc(pid: u32) -> Option<Proc> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// `rchar`, `wchar`, `read_bytes` and `write_bytes` of `/proc/PID/io`.
fn read_io(pid: u32) -> Option<[u64; 4]> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    let get = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some([
        get("rchar:")?,
        get("wchar:")?,
        get("read_bytes:")?,
        get("write_bytes:")?,
    ])
}

fn open_files(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count() as u64)
        .unwrap_or(0)
}

/// The process's name, `/proc/PID/comm`.
pub fn command(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

/// Every process on the machine with its parent.
fn all_processes() -> HashMap<u32, Proc> {
    let mut out = HashMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            if let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok())
                && let Some(p) = read_proc(pid)
            {
                out.insert(pid, p);
            }
        }
    }
    out
}

/// `root` and its live descendants.
fn tree(root: u32, procs: &HashMap<u32, Proc>) -> Vec<u32> {
    let mut members = vec![root];
    let mut i = 0;
    while i < members.len() {
        let parent = members[i];
        members.extend(
            procs
                .iter()
                .filter(|(_, p)| p.ppid == parent)
                .map(|(&pid, _)| pid),
        );
        i += 1;
    }
    members.retain(|pid| procs.contains_key(pid));
    members
}

/// The PIDs whose name (`comm`, or the file name of the first argument) is `name`, oldest
/// first, leaving out any that descends from another match (it is counted in its ancestor's tree).
pub fn find_by_name(name: &str) -> Vec<u32> {
    let procs = all_processes();
    let me = std::process::id();
    let matches = |pid: u32| {
        if pid == me {
            return false;
        }
        if command(pid).as_deref() == Some(name) {
            return true;
        }
        let argv0 = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let argv0 = argv0.split(|&b| b == 0).next().unwrap_or_default();
        let base = argv0.rsplit(|&b| b == b'/').next().unwrap_or_default();
        base == name.as_bytes()
    };
    let mut found: Vec<u32> = procs.keys().copied().filter(|&p| matches(p)).collect();
    found.sort_unstable();
    let all = found.clone();
    found.retain(|&pid| {
        let mut p = procs.get(&pid).map(|p| p.ppid).unwrap_or(0);
        for _ in 0..64 {
            if p <= 1 {
                return true;
            }
            if all.contains(&p) {
                return false;
            }
            p = procs.get(&p).map(|q| q.ppid).unwrap_or(0);
        }
        true
    });
    found
}

/// Two neighbouring samples (of `wa` and `wb` raw samples) as one: the later time and counters,
/// the larger sizes, the CPU weighted by time.
fn merge(a: &ResourceSample, wa: u64, b: &ResourceSample, wb: u64) -> ResourceSample {
    ResourceSample {
        t_ns: b.t_ns,
        cpu_percent: (a.cpu_percent * wa as f64 + b.cpu_percent * wb as f64) / (wa + wb) as f64,
        rss_bytes: a.rss_bytes.max(b.rss_bytes),
        threads: a.threads.max(b.threads),
        open_files: a.open_files.max(b.open_files),
        read_bytes: b.read_bytes.or(a.read_bytes),
        written_bytes: b.written_bytes.or(a.written_bytes),
        disk_read_bytes: b.disk_read_bytes.or(a.disk_read_bytes),
        disk_written_bytes: b.disk_written_bytes.or(a.disk_written_bytes),
        processes: a.processes.max(b.processes),
    }
}

impl Acc {
    fn new(watch: &Watch, interval_ns: u64) -> Acc {
        Acc {
            watch: watch.clone(),
            command: command(watch.pid).unwrap_or_else(|| "?".into()),
            samples: Capped::new(MAX_SAMPLES, merge),
            last_cpu_ticks: None,
            interval_ns,
        }
    }

    /// The series with its summary.
    fn finished(&self) -> ProcessSeries {
        let samples = self.samples.to_vec();
        ProcessSeries {
            target: self.watch.target.clone(),
            pid: self.watch.pid,
            command: self.command.clone(),
            source: self.watch.source,
            interval_ns: self.interval_ns * self.samples.stride(),
            summary: summarize(&samples),
            samples,
        }
    }
}

/// The figures of a series: peak RSS, mean CPU, the counters' growth, the RSS trend.
pub fn summarize(samples: &[ResourceSample]) -> ResourceSummary {
    let live: Vec<&ResourceSample> = samples.iter().filter(|s| s.processes > 0).collect();
    let mean_cpu = if live.len() > 1 {
        // The first sample has no CPU figure (no previous one to compare with).
        live[1..].iter().map(|s| s.cpu_percent).sum::<f64>() / (live.len() - 1) as f64
    } else {
        0.0
    };
    let growth = |f: fn(&ResourceSample) -> Option<u64>| {
        let first = live.iter().find_map(|s| f(s))?;
        let last = live.iter().rev().find_map(|s| f(s))?;
        Some(last.saturating_sub(first))
    };
    let points: Vec<(f64, f64)> = live
        .iter()
        .map(|s| (s.t_ns as f64 / 1e9, s.rss_bytes as f64))
        .collect();
    ResourceSummary {
        samples: samples.len() as u64,
        peak_rss_bytes: live.iter().map(|s| s.rss_bytes).max().unwrap_or(0),
        mean_cpu_percent: mean_cpu,
        max_threads: live.iter().map(|s| s.threads).max().unwrap_or(0),
        max_open_files: live.iter().map(|s| s.open_files).max().unwrap_or(0),
        read_bytes: growth(|s| s.read_bytes),
        written_bytes: growth(|s| s.written_bytes),
        disk_read_bytes: growth(|s| s.disk_read_bytes),
        disk_written_bytes: growth(|s| s.disk_written_bytes),
        rss_trend: results::stats::trend(&points, 1048576.0),
    }
}

/// Reads every watched tree once and adds a sample to each series.
fn sample(accs: &mut [Acc], now_ns: u64, ticks: f64, page: u64) {
    let procs = all_processes();
    for acc in accs.iter_mut() {
        let members = if procs.contains_key(&acc.watch.pid) {
            tree(acc.watch.pid, &procs)
        } else {
            Vec::new()
        };
        let mut s = ResourceSample {
            t_ns: now_ns,
            cpu_percent: 0.0,
            rss_bytes: 0,
            threads: 0,
            open_files: 0,
            read_bytes: None,
            written_bytes: None,
            disk_read_bytes: None,
            disk_written_bytes: None,
            processes: members.len() as u64,
        };
        let mut cpu = 0;
        let mut io = Some([0u64; 4]);
        for pid in &members {
            let p = procs[pid];
            cpu += p.cpu_ticks;
            s.rss_bytes += p.rss_pages * page;
            s.threads += p.threads;
            s.open_files += open_files(*pid);
            io = match (io, read_io(*pid)) {
                (Some(a), Some(b)) => Some([a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]]),
                _ => None,
            };
        }
        if let Some([r, w, dr, dw]) = io.filter(|_| !members.is_empty()) {
            s.read_bytes = Some(r);
            s.written_bytes = Some(w);
            s.disk_read_bytes = Some(dr);
            s.disk_written_bytes = Some(dw);
        }
        if let Some((t0, c0)) = acc.last_cpu_ticks
            && now_ns > t0
            && !members.is_empty()
        {
            let used_s = cpu.saturating_sub(c0) as f64 / ticks;
            s.cpu_percent = 100.0 * used_s / ((now_ns - t0) as f64 / 1e9);
        }
        if !members.is_empty() {
            acc.last_cpu_ticks = Some((now_ns, cpu));
        }
        acc.samples.push(s);
    }
}

impl Monitor {
    /// Starts sampling `watches` every `interval` on `clock` (the run's), with a first sample now.
    pub fn start(watches: &[Watch], clock: Clock, interval: Duration) -> std::io::Result<Monitor> {
        if !std::path::Path::new("/proc/self/stat").exists() {
            return Err(std::io::Error::other(
                "process monitoring reads /proc, which this system does not have",
            ));
        }
        let step = interval.as_nanos() as u64;
        let accs: Vec<Acc> = watches.iter().map(|w| Acc::new(w, step)).collect();
        let state = Arc::new(Mutex::new(accs));
        let (ticks, page) = (ticks_per_s(), page_size());
        if let Ok(mut a) = state.lock() {
            sample(&mut a, clock.now_ns(), ticks, page);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (state, stop, clock) = (state.clone(), stop.clone(), clock.clone());
            std::thread::Builder::new()
                .name("dyno-monitor".into())
                .spawn(move || {
                    let mut next = clock.now_ns() + step;
                    while !stop.load(Ordering::Relaxed) {
                        let now = clock.now_ns();
                        if now < next {
                            // Short naps, so stop is prompt.
                            std::thread::sleep(Duration::from_nanos((next - now).min(50_000_000)));
                            continue;
                        }
                        // Each sample's slot is its own: a late wake-up does not shift the grid.
                        next += step * ((now - next) / step + 1);
                        if let Ok(mut a) = state.lock() {
                            sample(&mut a, now, ticks, page);
                        }
                    }
                })?
        };
        Ok(Monitor {
            state,
            stop,
            thread: Mutex::new(Some(thread)),
            clock,
        })
    }

    /// A watched process that was started again (a fault plan killed or restarted it): its
    /// series goes on under the new PID, so a target's process is one series across restarts.
    pub fn follow(&self, old: u32, new: u32) {
        if let Ok(mut accs) = self.state.lock() {
            for a in accs.iter_mut().filter(|a| a.watch.pid == old) {
                a.watch.pid = new;
                a.last_cpu_ticks = None;
            }
        }
    }

    /// What is watched now: each process under its current PID (after restarts), with its
    /// name (the target's key, else its command) and its descendants' PIDs.
    pub fn watches(&self) -> Vec<(String, u32, Vec<u32>)> {
        let procs = all_processes();
        self.state
            .lock()
            .map(|accs| {
                accs.iter()
                    .map(|a| {
                        let name = a.watch.target.clone().unwrap_or_else(|| a.command.clone());
                        let tree = tree(a.watch.pid, &procs);
                        let children = tree.into_iter().filter(|&p| p != a.watch.pid).collect();
                        (name, a.watch.pid, children)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The series so far, with their summaries.
    pub fn series(&self) -> Vec<ProcessSeries> {
        self.state
            .lock()
            .map(|a| a.iter().map(Acc::finished).collect())
            .unwrap_or_default()
    }

    /// Stops sampling after one last sample; returns the series (which [`Monitor::series`] then
    /// returns too). Stopping twice takes no second sample.
    pub fn stop(&self) -> Vec<ProcessSeries> {
        if self.halt()
            && let Ok(mut a) = self.state.lock()
        {
            sample(&mut a, self.clock.now_ns(), ticks_per_s(), page_size());
        }
        self.series()
    }

    /// Stops the sampling thread; true the first time.
    fn halt(&self) -> bool {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.lock().ok().and_then(|mut t| t.take());
        match thread {
            Some(t) => {
                let _ = t.join();
                true
            }
            None => false,
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: u64, rss: u64) -> ResourceSample {
        ResourceSample {
            t_ns: t,
            cpu_percent: 10.0,
            rss_bytes: rss,
            threads: 1,
            open_files: 3,
            read_bytes: Some(t),
            written_bytes: Some(2 * t),
            disk_read_bytes: None,
            disk_written_bytes: Some(t),
            processes: 1,
        }
    }

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let line = "42 (a b) c)) S 7 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 \
                    100 1000000 2560 18446744073709551615";
        let p = parse_stat(line).unwrap();
        assert_eq!(
            (p.ppid, p.cpu_ticks, p.threads, p.rss_pages),
            (7, 300, 3, 2560)
        );
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn a_full_series_is_thinned_and_keeps_its_span() {
        let watch = Watch {
            target: None,
            pid: 1,
            source: WatchSource::Pid,
        };
        let mut acc = Acc::new(&watch, 1_000_000_000);
        let n = 3 * MAX_SAMPLES as u64;
        for i in 0..n {
            // RSS peaks once, at sample 5000: thinning keeps the peak.
            acc.samples.push(s(
                i * 1_000_000_000,
                if i == 5000 { 9 << 30 } else { 1 << 20 },
            ));
        }
        let out = acc.finished();
        assert!(out.samples.len() < MAX_SAMPLES, "{}", out.samples.len());
        assert!(out.samples.len() >= MAX_SAMPLES / 2);
        assert_eq!(out.interval_ns, 4_000_000_000);
        assert_eq!(out.samples[0].t_ns, 0);
        assert_eq!(out.samples.last().unwrap().t_ns, (n - 1) * 1_000_000_000);
        assert!(out.samples.windows(2).all(|w| w[0].t_ns < w[1].t_ns));
        assert_eq!(out.summary.peak_rss_bytes, 9 << 30);
        assert_eq!(out.summary.read_bytes, Some((n - 1) * 1_000_000_000));
        assert!((out.summary.mean_cpu_percent - 10.0).abs() < 1e-9);
    }

    #[test]
    fn this_process_is_watched_with_its_threads_and_memory() {
        let w = Watch {
            target: Some("self".into()),
            pid: std::process::id(),
            source: WatchSource::Pid,
        };
        let m = Monitor::start(&[w], Clock::monotonic(), Duration::from_millis(50)).unwrap();
        // Hold 64 MiB written to, and burn some CPU, while it watches.
        let block = vec![1u8; 64 << 20];
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(300) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let series = m.stop();
        drop(block);
        assert!(x > 0);
        let s = &series[0];
        assert!(s.samples.len() >= 4, "{}", s.samples.len());
        let first = s.samples[0].rss_bytes;
        assert!(
            s.summary.peak_rss_bytes >= first + (60 << 20),
            "{} then {}",
            first,
            s.summary.peak_rss_bytes
        );
        assert!(
            s.summary.max_threads >= 2,
            "the monitor thread and this one"
        );
        assert!(s.summary.max_open_files >= 3);
        assert!(
            s.summary.mean_cpu_percent > 20.0,
            "{}",
            s.summary.mean_cpu_percent
        );
        assert!(s.samples[0].read_bytes.is_some());
    }

    #[test]
    fn a_gone_process_has_an_empty_tree() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let w = Watch {
            target: None,
            pid,
            source: WatchSource::Pid,
        };
        let m = Monitor::start(&[w], Clock::monotonic(), Duration::from_millis(10)).unwrap();
        let series = m.stop();
        assert!(series[0].samples.iter().all(|s| s.processes == 0));
        assert_eq!(series[0].summary.peak_rss_bytes, 0);
    }

    #[test]
    fn names_find_this_test_binary() {
        let me = command(std::process::id()).unwrap();
        // This process is left out of its own search; a child of the same name is found.
        assert!(!find_by_name(&me).contains(&std::process::id()));
        assert!(find_by_name("no-such-process-name-dyno").is_empty());
    }
}
