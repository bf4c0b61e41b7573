//! HdrHistogram interval logs (`.hlog`): one histogram per interval, in the standard format that
//! HdrHistogram's own tools (HistogramLogProcessor, HdrHistogramVisualizer) read. Values are
//! nanoseconds; the `Interval_Max` column is in milliseconds.

use crate::histogram::Histogram;
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// One interval to write: start and end (ns from `start`), and its histogram.
pub struct LogInterval<'a> {
    pub start_ns: u64,
    pub end_ns: u64,
    pub histogram: &'a Histogram,
}

/// An interval log written as the run goes: the header when created, then one line per
/// interval, each in a single `write` (a process killed at any moment leaves whole lines only).
/// The lines are exactly those HdrHistogram's own `IntervalLogWriter` writes.
pub struct Writer {
    file: std::fs::File,
    serializer: V2DeflateSerializer,
    bytes: Vec<u8>,
    line: String,
}

/// `1.500` for 1.5 s, as the log format writes times.
fn seconds(d: Duration) -> f64 {
    d.as_secs() as f64 + f64::from(d.subsec_nanos()) / 1e9
}

impl Writer {
    /// Creates (replaces) `path` and writes the log's header.
    pub fn create(path: &Path, start: SystemTime, comment: &str) -> std::io::Result<Writer> {
        let mut header = Vec::new();
        let mut serializer = V2DeflateSerializer::new();
        IntervalLogWriterBuilder::new()
            .add_comment(comment)
            .add_comment("values in nanoseconds; Interval_Max in milliseconds")
            .with_start_time(start)
            .with_base_time(start)
            .with_max_value_divisor(MAX_DIVISOR)
            .begin_log_with(&mut header, &mut serializer)?;
        let mut file = std::fs::File::create(path)?;
        file.write_all(&header)?;
        Ok(Writer {
            file,
            serializer,
            bytes: Vec::new(),
            line: String::new(),
        })
    }

    /// Appends one interval: `start_ns` and `end_ns` from the log's start.
    pub fn append(&mut self, start_ns: u64, end_ns: u64, h: &Histogram) -> std::io::Result<()> {
        use base64::Engine as _;
        use std::fmt::Write as _;
        self.bytes.clear();
        self.line.clear();
        self.serializer
            .serialize(h, &mut self.bytes)
            .map_err(|e| std::io::Error::other(format!("{e:?}")))?;
        let _ = write!(
            self.line,
            "{:.3},{:.3},{:.3},",
            seconds(Duration::from_nanos(start_ns)),
            seconds(Duration::from_nanos(end_ns.saturating_sub(start_ns))),
            h.max() as f64 / MAX_DIVISOR
        );
        base64::engine::general_purpose::STANDARD.encode_string(&self.bytes, &mut self.line);
        self.line.push('\n');
        self.file.write_all(self.line.as_bytes())
    }

    /// Makes what was written durable (the soak's checkpoints call it).
    pub fn sync(&mut self) -> std::io::Result<()> {
        self.file.sync_data()
    }
}

/// `Interval_Max` is written in milliseconds.
const MAX_DIVISOR: f64 = 1e6;

/// How often a streamed log is made durable (a crash loses at most this much of it).
const SYNC_EVERY: Duration = Duration::from_secs(10);

/// Whether a run's one `.hlog` is the path asked for itself ([`path_for`]'s `single`): one
/// target, one repetition (the warm-up counted).
pub fn single(targets: usize, reps: u32, warmup: bool) -> bool {
    targets == 1 && reps + u32::from(warmup) == 1
}

/// Where a long run streams its log unless told: `latency.hlog` in its results folder.
pub fn stream_into(hlog: &mut Option<std::path::PathBuf>, dir: &Path) {
    hlog.get_or_insert_with(|| dir.join("latency.hlog"));
}

/// A log streamed as a repetition runs: each interval appended as it ends, made durable every
/// [`SYNC_EVERY`]. The first failure to write is kept for [`Streamed::finish`], and nothing
/// more is written after it, so the run goes on and then says its log is incomplete.
pub struct Streamed {
    writer: Writer,
    failed: Option<std::io::Error>,
    synced: std::time::Instant,
}

impl Streamed {
    /// Creates (replaces) `path`, its intervals counted from `start`; the error names it.
    pub fn create(path: &Path, start: SystemTime, comment: &str) -> std::io::Result<Streamed> {
        let writer = Writer::create(path, start, comment).map_err(|e| {
            std::io::Error::other(format!("creating the .hlog {}: {e}", path.display()))
        })?;
        Ok(Streamed {
            writer,
            failed: None,
            synced: std::time::Instant::now(),
        })
    }

    /// Appends one interval (ns from the log's start), unless an earlier one failed.
    pub fn append(&mut self, start_ns: u64, end_ns: u64, h: &Histogram) {
        if self.failed.is_some() {
            return;
        }
        if let Err(e) = self.writer.append(start_ns, end_ns, h) {
            self.failed = Some(e);
        } else if self.synced.elapsed() >= SYNC_EVERY {
            let _ = self.writer.sync();
            self.synced = std::time::Instant::now();
        }
    }

    /// The log made durable, or why it is incomplete.
    pub fn finish(mut self) -> std::io::Result<()> {
        match self.failed.take() {
            Some(e) => Err(std::io::Error::other(format!("writing the .hlog: {e}"))),
            None => self.writer.sync(),
        }
    }
}

/// Where the `.hlog` of `target`'s repetition `rep` (counted from the warm-up, if any) goes
/// when `asked` was given: `asked` itself when the run has one target and one repetition
/// (`single`) and no sweep, else `STEM.TARGET.REP.EXT` beside it (`TARGET-PARAMVALUE` at a
/// sweep's point: one log per point). The load and sql suites write there and `dyno merge` reads
/// there (a load's).
pub fn path_for(
    asked: &Path,
    target: &str,
    sweep: Option<&crate::SweepPoint>,
    rep: u32,
    single: bool,
) -> std::path::PathBuf {
    if single && sweep.is_none() {
        return asked.to_path_buf();
    }
    let stem = asked.file_stem().and_then(|s| s.to_str()).unwrap_or("dyno");
    let ext = asked.extension().and_then(|s| s.to_str()).unwrap_or("hlog");
    let name = match sweep {
        Some(at) => format!("{target}-{}{}", at.param, at.value),
        None => target.to_string(),
    };
    asked.with_file_name(format!("{stem}.{name}.{rep}.{ext}"))
}

/// One interval read back: its start and end (ns from the log's start) and its histogram.
pub struct ReadInterval {
    pub start_ns: u64,
    pub end_ns: u64,
    pub histogram: Histogram,
}

/// Reads an interval log (any that HdrHistogram's own writer makes, dyno's among them); a
/// line that is not a histogram is an error naming its number.
pub fn read(path: &Path) -> std::io::Result<Vec<ReadInterval>> {
    use base64::Engine as _;
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let text = std::fs::read(path)?;
    let mut out = Vec::new();
    let bad = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
    for (k, entry) in IntervalLogIterator::new(&text).enumerate() {
        let entry = entry.map_err(|e| bad(format!("entry {}: {e:?}", k + 1)))?;
        if let LogEntry::Interval(iv) = entry {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(iv.encoded_histogram())
                .map_err(|e| bad(format!("interval {}: {e}", out.len() + 1)))?;
            let histogram: Histogram = Deserializer::new()
                .deserialize(&mut bytes.as_slice())
                .map_err(|e| bad(format!("interval {}: {e:?}", out.len() + 1)))?;
            let start_ns = iv.start_timestamp().as_nanos() as u64;
            out.push(ReadInterval {
                start_ns,
                end_ns: start_ns + iv.duration().as_nanos() as u64,
                histogram,
            });
        }
    }
    Ok(out)
}

/// Writes an interval log to `path` (replacing it) atomically.
pub fn write(
    path: &Path,
    start: SystemTime,
    comment: &str,
    intervals: &[LogInterval],
) -> std::io::Result<()> {
    let tmp = path.with_extension("hlog.tmp");
    let mut w = Writer::create(&tmp, start, comment)?;
    for iv in intervals {
        w.append(iv.start_ns, iv.end_ns, iv.histogram)?;
    }
    w.sync()?;
    drop(w);
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    #[test]
    fn log_paths_stay_apart_for_several_targets_and_sweep_points() {
        let p = Path::new("/tmp/x/lat.hlog");
        assert_eq!(path_for(p, "nginx", None, 1, true), p);
        assert_eq!(
            path_for(p, "nginx", None, 2, false),
            Path::new("/tmp/x/lat.nginx.2.hlog")
        );
        let at = crate::SweepPoint {
            param: "rate".into(),
            value: 500,
        };
        assert_eq!(
            path_for(p, "nginx", Some(&at), 0, true),
            Path::new("/tmp/x/lat.nginx-rate500.0.hlog")
        );
    }

    #[test]
    fn written_logs_read_back_with_hdrhistograms_own_parser() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.hlog");
        let mut a = crate::new_histogram();
        let mut b = crate::new_histogram();
        a.record(1_000_000).unwrap();
        b.record_n(3_000_000, 5).unwrap();
        let ivs = [
            LogInterval {
                start_ns: 0,
                end_ns: 1_000_000_000,
                histogram: &a,
            },
            LogInterval {
                start_ns: 1_000_000_000,
                end_ns: 2_000_000_000,
                histogram: &b,
            },
        ];
        write(
            &path,
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            "test",
            &ivs,
        )
        .unwrap();
        let text = std::fs::read(&path).unwrap();
        assert!(String::from_utf8_lossy(&text).contains("#[StartTime: 1700000000.000"));
        let hists: Vec<_> = IntervalLogIterator::new(&text)
            .filter_map(|e| match e.unwrap() {
                LogEntry::Interval(h) => Some(h),
                _ => None,
            })
            .collect();
        assert_eq!(hists.len(), 2);
        assert_eq!(hists[1].start_timestamp(), Duration::from_secs(1));
        assert!(
            (hists[1].max() - 3.0).abs() < 0.01,
            "max in ms: {}",
            hists[1].max()
        );
        let back = crate::histogram::decode(hists[1].encoded_histogram()).unwrap();
        assert_eq!(back.len(), 5);
    }

    #[test]
    fn streamed_lines_are_hdrhistograms_own() {
        let mut h = crate::new_histogram();
        for v in [1_000u64, 52_000, 3_300_000, 7_777_777_777] {
            h.record(v).unwrap();
        }
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut theirs = Vec::new();
        let mut ser = V2DeflateSerializer::new();
        {
            let mut log = IntervalLogWriterBuilder::new()
                .add_comment("c")
                .add_comment("values in nanoseconds; Interval_Max in milliseconds")
                .with_start_time(start)
                .with_base_time(start)
                .with_max_value_divisor(1e6)
                .begin_log_with(&mut theirs, &mut ser)
                .unwrap();
            for (a, b) in [(0u64, 1_000_000_000u64), (1_000_000_000, 1_500_000_123)] {
                log.write_histogram(
                    &h,
                    Duration::from_nanos(a),
                    Duration::from_nanos(b - a),
                    None,
                )
                .unwrap();
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.hlog");
        let mut w = Writer::create(&path, start, "c").unwrap();
        w.append(0, 1_000_000_000, &h).unwrap();
        w.append(1_000_000_000, 1_500_000_123, &h).unwrap();
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), theirs);
    }
}
