//! The charts over time: each case's rate and latency by interval with its faults as bands, and the watched processes' resources.

use super::*;

/// One line of a time series chart: its label, where its series began on the run's clock, and
/// the series.
pub(super) struct TimeSeries<'r> {
    pub(super) label: String,
    pub(super) started_ns: u64,
    pub(super) intervals: &'r [results::IntervalRecord],
}

/// The faults' windows in seconds since `from_ns` on the run's clock, those that began in
/// `[from_ns, until_ns)`; a fault still open at the end drawn to its start plus `step_ns`.
pub(super) fn fault_windows(
    r: &RunRecord,
    from_ns: u64,
    until_ns: u64,
    step_ns: u64,
) -> Vec<(f64, f64)> {
    (r.faults.iter())
        .filter(|f| f.start_ns >= from_ns && f.start_ns < until_ns)
        .map(|f| {
            let end = f.end_ns.unwrap_or(f.start_ns + step_ns);
            (
                (f.start_ns - from_ns) as f64 / 1e9,
                (end.max(f.start_ns) - from_ns) as f64 / 1e9,
            )
        })
        .collect()
}

/// Rate, p99 and errors per interval, a line per series, on one time axis that starts with the
/// earliest series, the faults of that span shaded. `name` suffixes the charts' names.
pub(super) fn series_set(
    r: &RunRecord,
    what: &str,
    name: &str,
    all: &[TimeSeries],
) -> Vec<(String, Chart, String)> {
    let Some(from) = all.iter().map(|s| s.started_ns).min() else {
        return Vec::new();
    };
    let mut dat = format!(
        "# dyno {what}: per interval\n\
         # line start_s end_s ok_per_s p50_s p99_s max_s errors\n"
    );
    let (mut rate, mut p99, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    let (mut until, mut step) = (from, 0);
    for sr in all {
        let offset = (sr.started_ns - from) as f64 / 1e9;
        let line = |points| Line::new(sr.label.clone(), points);
        let (mut per_s, mut p, mut e) = (Vec::new(), Vec::new(), Vec::new());
        for i in sr.intervals {
            let n = i.responses_per_s();
            let _ = writeln!(
                dat,
                "{} {:.3} {:.3} {n:.1} {:e} {:e} {:e} {}",
                stem(&sr.label),
                offset + i.start_ns as f64 / 1e9,
                offset + i.end_ns as f64 / 1e9,
                i.p50_ns as f64 / 1e9,
                i.p99_ns as f64 / 1e9,
                i.max_ns as f64 / 1e9,
                i.errors
            );
            let t = offset + i.end_ns as f64 / 1e9;
            per_s.push((t, n, n, n));
            let ms = i.p99_ns as f64 / 1e6;
            p.push((t, ms, ms, ms));
            let err = results::stats::per_s(i.errors as f64, i.end_ns - i.start_ns);
            e.push((t, err, err, err));
            until = until.max(sr.started_ns + i.end_ns);
            step = step.max(i.end_ns - i.start_ns);
        }
        if !per_s.is_empty() {
            rate.push(line(per_s));
            p99.push(line(p));
            errors.push(line(e));
        }
    }
    if rate.is_empty() {
        return Vec::new();
    }
    let shade = fault_windows(r, from, until.max(from + 1), step);
    let chart = |title: &str, y_desc: &str, lines| {
        let mut c = over_time(
            format!("{what}: {title} per interval"),
            "time (s)",
            y_desc,
            lines,
        );
        c.shade = shade.clone();
        c
    };
    vec![
        (
            format!("series-rate{name}"),
            chart("successes per second", "per second", rate),
            dat.clone(),
        ),
        (
            format!("series-p99{name}"),
            chart("p99 latency", "p99 (ms)", p99),
            dat.clone(),
        ),
        (
            format!("series-errors{name}"),
            chart("errors per second", "errors/s", errors),
            dat,
        ),
    ]
}

/// A case's first measured repetition's series: when it began, and its intervals.
pub(super) fn first(c: &results::Case) -> Option<(u64, &[results::IntervalRecord])> {
    let (iv, at) = c.reps.first()?.detail.series()?;
    Some((at, iv))
}

/// The time series, with the faults shaded: a line per target (each target's first measured
/// repetition of each test) on the time axis of the first; in a run of levels, a set of charts
/// per target and level, its tests one after the other on the level's own time axis.
pub(super) fn series_charts(r: &RunRecord) -> Vec<(String, Chart, String)> {
    let label = |c: &results::Case| {
        if c.test == c.suite {
            c.target.clone()
        } else {
            format!("{} {}", c.target, c.test)
        }
    };
    let plain: Vec<TimeSeries> = (r.cases.iter())
        .filter(|c| c.sweep.is_none() && c.level.is_none())
        .filter_map(|c| {
            let (started_ns, intervals) = first(c)?;
            Some(TimeSeries {
                label: label(c),
                started_ns,
                intervals,
            })
        })
        .collect();
    let mut out = series_set(r, &r.plan.suite, "", &plain);
    let mut stages: Vec<(&str, &str)> = Vec::new();
    for c in &r.cases {
        if let Some(l) = &c.level
            && !stages.contains(&(c.target.as_str(), l.as_str()))
        {
            stages.push((c.target.as_str(), l.as_str()));
        }
    }
    for (target, level) in stages {
        let lines: Vec<TimeSeries> = (r.cases.iter())
            .filter(|c| c.target == target && c.level.as_deref() == Some(level))
            .filter_map(|c| {
                let (started_ns, intervals) = first(c)?;
                Some(TimeSeries {
                    label: c.test.clone(),
                    started_ns,
                    intervals,
                })
            })
            .collect();
        let what = format!("{} {target} · {level}", r.plan.suite);
        out.extend(series_set(
            r,
            &what,
            &format!("-{}-{}", stem(target), stem(level)),
            &lines,
        ));
    }
    out
}

/// The watched processes: RSS and CPU against the run's time, a line per process. One `.dat`
/// holds both, a row per process and sample.
pub(super) fn resource_charts(r: &RunRecord) -> Vec<(String, Chart, String)> {
    if r.resources.iter().all(|p| p.samples.is_empty()) {
        return Vec::new();
    }
    let mut dat = String::from(
        "# dyno: watched processes, one row per sample\n\
         # process t_s cpu_percent rss_bytes threads open_files read_bytes written_bytes \
         disk_read_bytes disk_written_bytes\n",
    );
    let (mut rss, mut cpu) = (Vec::new(), Vec::new());
    for p in &r.resources {
        let name = crate::resources::label(p);
        let col = stem(&name);
        let (mut m, mut c) = (Vec::new(), Vec::new());
        for s in p.samples.iter().filter(|s| s.processes > 0) {
            let t = s.t_ns as f64 / 1e9;
            let opt = |v: Option<u64>| v.map_or_else(|| "nan".to_string(), |v| v.to_string());
            let _ = writeln!(
                dat,
                "{col} {t:.3} {:.2} {} {} {} {} {} {} {}",
                s.cpu_percent,
                s.rss_bytes,
                s.threads,
                s.open_files,
                opt(s.read_bytes),
                opt(s.written_bytes),
                opt(s.disk_read_bytes),
                opt(s.disk_written_bytes)
            );
            let mib = s.rss_bytes as f64 / 1048576.0;
            m.push((t, mib, mib, mib));
            c.push((t, s.cpu_percent, s.cpu_percent, s.cpu_percent));
        }
        rss.push(Line::new(name.clone(), m));
        cpu.push(Line::new(name, c));
    }
    let chart = |title: &str, y_desc: &str, lines| {
        let title = format!("watched processes: {title}");
        over_time(title, "time since the run's start (s)", y_desc, lines)
    };
    vec![
        (
            "resources-rss".to_string(),
            chart("resident memory", "RSS (MiB)", rss),
            dat.clone(),
        ),
        (
            "resources-cpu".to_string(),
            chart("CPU", "CPU (% of one core)", cpu),
            dat,
        ),
    ]
}
