//! Prometheus remote write (protocol 1.0): a `WriteRequest` of time series, each its labels
//! (`__name__` among them, sorted by name) and its samples in time order, encoded by prost and
//! compressed with Snappy's block format, POSTed to the receiver (Prometheus with
//! `--web.enable-remote-write-receiver`, Mimir, Thanos, VictoriaMetrics, Grafana Cloud…).

use super::{Point, SERIES};
use prost::Message as _;
use std::collections::BTreeMap;

#[derive(Clone, PartialEq, prost::Message)]
struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    samples: Vec<Sample>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Label {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Sample {
    #[prost(double, tag = "1")]
    value: f64,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "2")]
    timestamp: i64,
}

/// The headers of a remote-write request.
pub const HEADERS: [(&str, &str); 3] = [
    ("Content-Type", "application/x-protobuf"),
    ("Content-Encoding", "snappy"),
    ("X-Prometheus-Remote-Write-Version", "0.1.0"),
];

/// The body of one request carrying `points`: a series per figure and label set.
pub fn body(points: &[Point]) -> Vec<u8> {
    let mut series: BTreeMap<Vec<(String, String)>, Vec<Sample>> = BTreeMap::new();
    for p in points {
        for (name, _, value) in SERIES {
            let mut labels: Vec<(String, String)> = (p.labels.iter())
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect();
            labels.push(("__name__".into(), name.to_string()));
            labels.sort();
            series.entry(labels).or_default().push(Sample {
                value: value(&p.iv),
                timestamp: p.unix_ms,
            });
        }
    }
    let timeseries = (series.into_iter())
        .map(|(labels, mut samples)| {
            samples.sort_by_key(|s| s.timestamp);
            TimeSeries {
                labels: (labels.into_iter())
                    .map(|(name, value)| Label { name, value })
                    .collect(),
                samples,
            }
        })
        .collect();
    let raw = WriteRequest { timeseries }.encode_to_vec();
    snap::raw::Encoder::new()
        .compress_vec(&raw)
        .expect("a buffer in memory compresses")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_holds_a_series_per_figure_with_sorted_labels_and_samples_in_time_order() {
        let iv = |end_ns: u64| results::IntervalRecord {
            start_ns: end_ns - 1_000_000_000,
            end_ns,
            responses: 500,
            p99_ns: 2_000_000,
            ..Default::default()
        };
        let labels = std::sync::Arc::new(vec![
            ("target", "web".to_string()),
            ("run", "r1".to_string()),
        ]);
        let points = [
            Point {
                labels: labels.clone(),
                unix_ms: 2_000,
                iv: iv(2_000_000_000),
            },
            Point {
                labels,
                unix_ms: 1_000,
                iv: iv(1_000_000_000),
            },
        ];
        let raw = snap::raw::Decoder::new()
            .decompress_vec(&body(&points))
            .unwrap();
        let w = WriteRequest::decode(raw.as_slice()).unwrap();
        assert_eq!(w.timeseries.len(), SERIES.len());
        let rate = (w.timeseries.iter())
            .find(|t| {
                t.labels
                    .iter()
                    .any(|l| l.value == "dyno_interval_responses_per_second")
            })
            .unwrap();
        let names: Vec<&str> = rate.labels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["__name__", "run", "target"]);
        let samples: Vec<(i64, f64)> = rate
            .samples
            .iter()
            .map(|s| (s.timestamp, s.value))
            .collect();
        assert_eq!(samples, [(1_000, 500.0), (2_000, 500.0)]);
    }
}
