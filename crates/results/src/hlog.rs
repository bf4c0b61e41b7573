//! HdrHistogram interval logs (`.hlog`): one histogram per interval, in the standard format that
//! HdrHistogram's own tools (HistogramLogProcessor, HdrHistogramVisualizer) read. Values are
//! nanoseconds; the `Interval_Max` column is in milliseconds.

use crate::histogram::Histogram;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// One interval to write: start and end (ns from `start`), and its histogram.
pub struct LogInterval<'a> {
    pub start_ns: u64,
    pub end_ns: u64,
    pub histogram: &'a Histogram,
}

/// Writes an interval log to `path` (replacing it) atomically.
pub fn write(
    path: &Path,
    start: SystemTime,
    comment: &str,
    intervals: &[LogInterval],
) -> std::io::Result<()> {
    let mut bytes = Vec::new();
    {
        let mut serializer = V2DeflateSerializer::new();
        let mut log = IntervalLogWriterBuilder::new()
            .add_comment(comment)
            .add_comment("values in nanoseconds; Interval_Max in milliseconds")
            .with_start_time(start)
            .with_base_time(start)
            .with_max_value_divisor(1e6)
            .begin_log_with(&mut bytes, &mut serializer)?;
        for iv in intervals {
            log.write_histogram(
                iv.histogram,
                Duration::from_nanos(iv.start_ns),
                Duration::from_nanos(iv.end_ns.saturating_sub(iv.start_ns)),
                None,
            )
            .map_err(|e| std::io::Error::other(format!("{e}")))?;
        }
    }
    let tmp = path.with_extension("hlog.tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(&bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

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
}
