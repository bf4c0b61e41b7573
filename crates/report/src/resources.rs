//! The watched processes' table: for each, its peak RSS, mean CPU, most threads and open files,
//! the bytes it read and wrote during the run, and the RSS trend with its verdict (growing /
//! flat / shrinking, from a robust slope and its 95% interval). It follows every suite's table.

use crate::grid::Doc;
use crate::units;
use results::{ProcessSeries, RunRecord, WatchSource};
use std::io;

/// Memory in binary units, as `ps` and `top` think of it: `512.0 MiB`.
pub fn mib(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.2} GiB", b / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    }
}

/// The RSS trend as a cell: `growing +1.20 MiB/min (0.9 – 1.5)`.
fn trend_cell(p: &ProcessSeries) -> String {
    match &p.summary.rss_trend {
        None => "too short".into(),
        Some(t) => {
            let per_min = |v: f64| v * 60.0 / (1u64 << 20) as f64;
            format!(
                "{} {:+.2} MiB/min ({:.2} – {:.2})",
                t.verdict,
                per_min(t.slope_per_s),
                per_min(t.low_per_s),
                per_min(t.high_per_s)
            )
        }
    }
}

/// Who the process is: `redis (redis-server 4242, started)`.
pub fn label(p: &ProcessSeries) -> String {
    let how = match p.source {
        WatchSource::Started => "started",
        WatchSource::Pid => "pid",
        WatchSource::Name => "by name",
    };
    match &p.target {
        Some(t) => format!("{t} ({} {}, {how})", p.command, p.pid),
        None => format!("{} {} ({how})", p.command, p.pid),
    }
}

/// Writes the table, or nothing when no process was watched.
pub fn render(r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
    if r.resources.is_empty() {
        return Ok(());
    }
    doc.heading("watched processes (sampled every second)")?;
    let header = vec![
        [
            "process",
            "samples",
            "peak RSS",
            "mean CPU",
            "threads",
            "open files",
            "read / written",
            "disk read / written",
            "RSS trend per minute (95% interval)",
        ]
        .map(String::from)
        .to_vec(),
    ];
    let bytes = |b: Option<u64>| b.map_or_else(|| "-".into(), units::bytes);
    let body: Vec<Vec<String>> = r
        .resources
        .iter()
        .map(|p| {
            let s = &p.summary;
            vec![
                label(p),
                s.samples.to_string(),
                mib(s.peak_rss_bytes),
                format!("{:.1}%", s.mean_cpu_percent),
                s.max_threads.to_string(),
                s.max_open_files.to_string(),
                format!("{} / {}", bytes(s.read_bytes), bytes(s.written_bytes)),
                format!(
                    "{} / {}",
                    bytes(s.disk_read_bytes),
                    bytes(s.disk_written_bytes)
                ),
                trend_cell(p),
            ]
        })
        .collect();
    doc.table(&header, &body)?;
    doc.blank()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_reads_in_binary_units() {
        assert_eq!(mib(5 << 20), "5.0 MiB");
        assert_eq!(mib(3 << 30), "3.00 GiB");
    }
}
