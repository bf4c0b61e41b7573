//! Thresholds (k6's idea): a run's pass/fail criteria, written `METRIC OP VALUE [SCOPE…]`,
//! e.g. `p99 < 10ms`, `rate > 50000 target=redis`, `errors < 0.1% test=set`. Each is checked
//! on every case it scopes (all of them by default) when the run ends; it holds when it holds
//! for each, and fails when it fails for one — or when it scopes no case at all (a misspelt
//! target must not pass silently).
//!
//! | metric | of a case | value |
//! |---|---|---|
//! | `p50`, `p90`, `p99`, `p99.9`, `p99.99`, `max`, `mean` | the latency of its measured repetitions together (the merged histogram) | a duration: `10ms`, `250us` |
//! | `rate` | the median over repetitions of operations per second | a number: `50000` |
//! | `errors` | failed operations over all operations, or their count | `0.1%`, or a count: `0` |
//! | `consistency` | `--check`'s verdict on its target's history | `== valid` (the one form) |
//!
//! Any value may instead be relative to a baseline run: `p99 < baseline * 1.05`, `rate >
//! baseline * 0.95` (`baseline` alone is `baseline * 1`). The baseline is the run `dyno run
//! --compare RUN` or the plan's `[thresholds] baseline = "…"` names; each case is held to the
//! same case's figure there, and a case the baseline lacks fails. A relative `rate`, `p50`,
//! `p99`, `p99.9` or `max` is judged as `dyno compare` judges (see [`crate::compare::judge`]):
//! it breaks only when the whole 95% interval of the change lies beyond the factor — `p99 <
//! baseline * 1.05` breaks when the p99 is, with that confidence, more than 5% above the
//! baseline's — so noise alone does not fail a build. Without the repetitions or the earlier
//! runs such a test needs, it is judged on the two figures as they stand, and says so.

use crate::{Case, RunRecord};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What a threshold measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// A latency quantile (0.5 … 1.0 for max), in ns.
    Quantile(f64),
    Mean,
    Rate,
    /// Failed over all operations (0..1).
    ErrorRatio,
    ErrorCount,
    /// Checks on responses passed, over all checks made (0..1).
    Checks,
    /// `--check`'s verdict: 0 valid, 1 invalid, 2 unknown (`consistency == valid` is `<= 0`).
    Consistency,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, v: f64, limit: f64) -> bool {
        match self {
            Op::Lt => v < limit,
            Op::Le => v <= limit,
            Op::Gt => v > limit,
            Op::Ge => v >= limit,
        }
    }
}

/// One threshold, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// As written.
    pub text: String,
    pub metric: Metric,
    pub op: Op,
    /// ns for latencies, per second for rates, a ratio or a count for errors; with
    /// `baseline`, the factor of the baseline's figure.
    pub limit: f64,
    /// The limit is `limit ×` the same case's figure in the baseline run.
    pub baseline: bool,
    pub target: Option<String>,
    pub test: Option<String>,
    pub level: Option<String>,
}

/// Why a threshold could not be read, and how to write it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub message: String,
    pub hint: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (hint: {})", self.message, self.hint)
    }
}

/// Reads the factor of `baseline * F` from the words after the operator (`baseline`,
/// `baseline*1.05`, `baseline * 1.05`); `None` when the value is not relative.
fn baseline_factor<'a>(
    value: &'a str,
    words: &mut std::iter::Peekable<impl Iterator<Item = &'a str>>,
) -> Option<Result<f64, String>> {
    let rest = value.strip_prefix("baseline")?;
    let factor = match rest.strip_prefix('*') {
        Some("") => words.next().unwrap_or(""),
        Some(f) => f,
        None if !rest.is_empty() => return Some(Err(format!("{value:?}"))),
        None => match words.peek() {
            Some(w) if w.starts_with('*') => {
                let w = words.next().unwrap_or("*");
                match &w[1..] {
                    "" => words.next().unwrap_or(""),
                    f => f,
                }
            }
            _ => "1",
        },
    };
    Some(
        factor
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite() && *f > 0.0)
            .ok_or_else(|| format!("{factor:?}")),
    )
}

const METRICS: &str = "p50, p90, p99, p99.9, p99.99, max, mean, rate, errors, checks (the share of checks on responses passed), consistency (written `consistency == valid`)";
const EXAMPLE: &str =
    "e.g. \"p99 < 10ms\", \"rate > 50000 target=redis\", \"errors < 0.1% test=set\"";

impl Threshold {
    /// Reads `METRIC OP VALUE [target=T] [test=T] [level=L]`.
    pub fn parse(text: &str) -> Result<Threshold, ParseError> {
        let bad = |message: String| ParseError {
            message,
            hint: format!(
                "write METRIC OP VALUE [target=NAME] [test=NAME] [level=NAME], {EXAMPLE}; metrics: {METRICS}"
            ),
        };
        let mut words = text.split_whitespace().peekable();
        let (Some(metric), Some(op), Some(value)) = (words.next(), words.next(), words.next())
        else {
            return Err(bad(format!("threshold {text:?} is not METRIC OP VALUE")));
        };
        if metric == "consistency" {
            return consistency(text, (op, value), words);
        }
        let relative = baseline_factor(value, &mut words)
            .transpose()
            .map_err(|factor| {
                bad(format!(
                    "{factor} in threshold {text:?} is not a positive factor (write baseline * 1.05)"
                ))
            })?;
        let op = match op {
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            other => {
                return Err(bad(format!(
                    "{other:?} in threshold {text:?} is not <, <=, > or >="
                )));
            }
        };
        // A relative value's limit is its factor; the metric's own unit is not read.
        let value = match (relative, metric) {
            (None, _) => value,
            (Some(_), "errors") => "0%",
            (Some(_), _) => "0",
        };
        let (metric, limit) = metric_limit(metric, value, text).map_err(bad)?;
        let mut t = Threshold {
            text: text.split_whitespace().collect::<Vec<_>>().join(" "),
            metric,
            op,
            limit: relative.unwrap_or(limit),
            baseline: relative.is_some(),
            target: None,
            test: None,
            level: None,
        };
        t.scoped(words).map_err(bad)?;
        Ok(t)
    }

    /// Reads the scopes after the value (`target=`, `test=`, `level=`).
    fn scoped<'a>(&mut self, words: impl Iterator<Item = &'a str>) -> Result<(), String> {
        let t = self;
        for w in words {
            let slot = match w.split_once('=') {
                Some(("target", v)) => (&mut t.target, v),
                Some(("test", v)) => (&mut t.test, v),
                Some(("level", v)) => (&mut t.level, v),
                _ => {
                    return Err(format!(
                        "{w:?} in threshold {:?} is not a scope (target=, test=, level=)",
                        t.text
                    ));
                }
            };
            *slot.0 = Some(slot.1.to_string());
        }
        Ok(())
    }

    /// Whether it checks case `c` (its scopes allow it).
    pub fn scopes(&self, c: &Case) -> bool {
        self.target.as_ref().is_none_or(|t| *t == c.target)
            && self.test.as_ref().is_none_or(|t| *t == c.test)
            && self
                .level
                .as_ref()
                .is_none_or(|l| Some(l) == c.level.as_ref())
    }

    /// The case's figure this threshold reads; `None` when the case has none (no repetition
    /// completed, no latency recorded).
    fn value(&self, c: &Case) -> Option<f64> {
        match self.metric {
            Metric::Quantile(_) | Metric::Mean => {
                self.latency(&crate::histogram::decode(c.histogram.as_deref()?).ok()?)
            }
            Metric::Rate => {
                let mut rates: Vec<f64> = c.reps.iter().map(|r| r.ops_per_s).collect();
                if rates.is_empty() {
                    return None;
                }
                rates.sort_by(f64::total_cmp);
                let n = rates.len();
                Some(if n % 2 == 1 {
                    rates[n / 2]
                } else {
                    (rates[n / 2 - 1] + rates[n / 2]) / 2.0
                })
            }
            Metric::ErrorRatio | Metric::ErrorCount => {
                // By kind of operation, whose counts include the failed ones.
                let ops: u64 = (c.reps.iter())
                    .map(|r| match r.by_op.is_empty() {
                        true => r.ops.max(r.errors),
                        false => r.by_op.values().map(|o| o.count).sum(),
                    })
                    .sum();
                let errors: u64 = (c.reps.iter())
                    .map(|r| match r.by_op.is_empty() {
                        true => r.errors,
                        false => r.by_op.values().map(|o| o.errors).sum(),
                    })
                    .sum();
                match self.metric {
                    Metric::ErrorCount => Some(errors as f64),
                    _ => (ops > 0).then(|| errors as f64 / ops as f64),
                }
            }
            Metric::Consistency => Some(match c.consistency.as_ref()?.verdict {
                crate::Verdict::Valid => 0.0,
                crate::Verdict::Invalid => 1.0,
                crate::Verdict::Unknown => 2.0,
            }),
            Metric::Checks => {
                let checks = c
                    .reps
                    .iter()
                    .filter_map(|r| r.load())
                    .flat_map(|l| &l.checks);
                let (passed, all) =
                    checks.fold((0, 0), |(p, n), k| (p + k.passed, n + k.passed + k.failed));
                (all > 0).then(|| passed as f64 / all as f64)
            }
        }
    }

    /// A latency metric's figure of `h`; `None` when it is empty.
    fn latency(&self, h: &crate::Histogram) -> Option<f64> {
        if h.is_empty() {
            return None;
        }
        Some(match self.metric {
            Metric::Quantile(q) if q >= 1.0 => h.max() as f64,
            Metric::Quantile(q) => h.value_at_quantile(q) as f64,
            _ => h.mean(),
        })
    }

    /// Whether case `c` meets it (scopes and baselines aside: a capacity search's objective),
    /// and its figure against the limit as written (`24.1ms against 20.0ms`); `None` when the
    /// case has no figure.
    pub fn judge(&self, c: &Case) -> Option<(bool, String)> {
        let v = self.value(c)?;
        let shown = format!("{} against {}", self.show(v), self.show(self.limit));
        Some((self.op.holds(v, self.limit), shown))
    }

    /// The figure of a repetition still running (a load repetition's intervals so far);
    /// `None` when it has none yet.
    fn value_running(&self, r: &Running) -> Option<f64> {
        match self.metric {
            Metric::Quantile(_) | Metric::Mean => self.latency(r.latency),
            Metric::Rate => (r.elapsed_ns > 0).then(|| r.ops as f64 * 1e9 / r.elapsed_ns as f64),
            Metric::ErrorCount => Some(r.errors as f64),
            Metric::ErrorRatio => {
                (r.ops + r.errors > 0).then(|| r.errors as f64 / (r.ops + r.errors) as f64)
            }
            // Judged at the end: a running repetition's checks are not counted yet, nor its
            // history checked.
            Metric::Checks | Metric::Consistency => None,
        }
    }

    /// The limit for case `c`: the threshold's own, or the baseline's figure for the same
    /// case times the factor (`None` without one).
    fn limit_for(&self, c: &Case, baseline: Option<&RunRecord>) -> Option<f64> {
        match self.baseline {
            false => Some(self.limit),
            true => (baseline.and_then(|b| b.case(&c.id())))
                .and_then(|b| self.value(b))
                .map(|b| b * self.limit),
        }
    }

    /// Checks the running repetition `r` of case `c` (`abort_on_fail`): `Some` with the
    /// figure and the limit when it breaks the threshold, `None` while it holds or cannot tell
    /// yet (no figure, no baseline figure).
    pub fn broken_by(
        &self,
        c: &Case,
        r: &Running,
        baseline: Option<&RunRecord>,
    ) -> Option<(String, String)> {
        if !self.scopes(c) {
            return None;
        }
        let (v, limit) = (self.value_running(r)?, self.limit_for(c, baseline)?);
        (!self.op.holds(v, limit)).then(|| (self.show(v), self.show(limit)))
    }

    /// A figure as this threshold's unit writes it.
    fn show(&self, v: f64) -> String {
        match self.metric {
            Metric::Quantile(_) | Metric::Mean => crate::units::latency(v.round() as u64),
            Metric::Rate => format!("{v:.1}/s"),
            Metric::ErrorRatio | Metric::Checks => format!("{:.3}%", v * 100.0),
            Metric::ErrorCount => format!("{v:.0}"),
            Metric::Consistency => match v as u8 {
                0 => "valid",
                1 => "invalid",
                _ => "unknown",
            }
            .to_string(),
        }
    }
}

/// `consistency == valid [SCOPE…]`: the case's target's history was checked and found valid.
fn consistency<'a>(
    text: &str,
    (op, value): (&str, &str),
    words: impl Iterator<Item = &'a str>,
) -> Result<Threshold, ParseError> {
    let bad = |message: String| {
        ParseError {
        message,
        hint: "write \"consistency == valid\" (with --check): the history of the case's target was checked and nothing was found, nor left undecided".into(),
    }
    };
    if (op, value) != ("==", "valid") {
        return Err(bad(format!(
            "threshold {text:?} is not consistency == valid"
        )));
    }
    let mut t = Threshold {
        text: text.split_whitespace().collect::<Vec<_>>().join(" "),
        metric: Metric::Consistency,
        op: Op::Le,
        limit: 0.0,
        baseline: false,
        target: None,
        test: None,
        level: None,
    };
    t.scoped(words).map_err(bad)?;
    Ok(t)
}

/// Parses `ns` from a duration such as `10ms`.
fn duration_ns(text: &str) -> Option<f64> {
    humantime::parse_duration(text)
        .ok()
        .map(|d| d.as_nanos() as f64)
}

/// A repetition's figures while it runs: what `abort_on_fail` checks on every interval.
pub struct Running<'a> {
    /// Every response's latency so far.
    pub latency: &'a crate::Histogram,
    /// Since the repetition began.
    pub elapsed_ns: u64,
    /// Operations completed (with a response) and failed so far.
    pub ops: u64,
    pub errors: u64,
}

/// Why a run stopped early: a threshold with `abort_on_fail` broke while a case ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Aborted {
    /// As written.
    pub threshold: String,
    /// The case that broke it.
    pub case: String,
    /// Its figure then, and the limit, in the threshold's unit.
    pub value: String,
    pub limit: String,
    /// How far into the case's repetition (its intervals so far).
    pub after_ns: u64,
}

/// One case as a threshold saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseCheck {
    /// The case's identity.
    pub case: String,
    /// The figure, as the threshold's unit writes it; `null` when the case had none.
    pub value: Option<String>,
    /// A relative threshold's limit for this case (the baseline's figure times the factor);
    /// `null` when the baseline has no such figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    /// What a relative threshold's outcome rests on: the test and its interval, or the two
    /// figures as they stand and why no test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basis: Option<String>,
    pub held: bool,
}

/// A threshold's outcome, in the record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThresholdResult {
    /// As written.
    pub threshold: String,
    pub held: bool,
    /// Each case it scoped.
    pub cases: Vec<CaseCheck>,
}

/// The figure of [`crate::compare::FIGURES`] a relative threshold on `metric` is tested on;
/// `None` for the others (they are judged on the figures as they stand).
fn tested_figure(metric: Metric) -> Option<crate::compare::Figure> {
    let name = match metric {
        Metric::Rate => "rate",
        Metric::Quantile(q) if q >= 1.0 => "max",
        Metric::Quantile(0.5) => "p50",
        Metric::Quantile(0.99) => "p99",
        Metric::Quantile(0.999) => "p99.9",
        _ => return None,
    };
    crate::compare::FIGURES.into_iter().find(|f| f.name == name)
}

impl Threshold {
    /// A relative threshold on case `c` judged by the comparison's test against the same case
    /// of `baseline`: whether it held and on what basis, or why no test can be made.
    fn tested(&self, c: &Case, baseline: &Baseline) -> Result<(bool, String), String> {
        use crate::compare::judge::{self, Side};
        let f = tested_figure(self.metric).ok_or("no test for this figure")?;
        let id = c.id().to_string();
        let b = baseline.record.case(&c.id()).ok_or("not in the baseline")?;
        let sides = Side::of(&crate::compare::values(b, f))
            .zip(Side::of(&crate::compare::values(c, f)))
            .ok_or("a side lacks the figure")?;
        let runs = baseline.noise.of(&id, f.name).ok_or(format!(
            "too few runs of the plan in the history ({} of {}) to know this machine's run-to-run noise",
            baseline.noise.runs,
            crate::compare::MIN_RUNS
        ))?;
        let t = judge::test(sides.0, sides.1, runs).ok_or(format!(
            "too few repetitions ({} and {}; {} a side)",
            sides.0.n,
            sides.1.n,
            crate::compare::MIN_REPS
        ))?;
        let [lo, hi] = t.interval;
        let beyond = self.limit - 1.0;
        let broken = match self.op {
            Op::Lt | Op::Le => lo > beyond,
            Op::Gt | Op::Ge => hi < beyond,
        };
        let pct = |x: f64| format!("{:+.1}%", x * 100.0);
        Ok((
            !broken,
            format!(
                "change {} [{} … {}] (95%, a t test over {} and {} repetitions and the run-to-run noise of {} runs): {} wholly beyond {}",
                pct(t.change),
                pct(lo),
                pct(hi),
                sides.0.n,
                sides.1.n,
                runs.runs,
                if broken { "lies" } else { "does not lie" },
                pct(beyond)
            ),
        ))
    }
}

/// The run a relative threshold is held to, with this machine's run-to-run noise of its plan.
pub use crate::compare::Baseline;

/// Checks `thresholds` on `record`'s cases; relative ones against the same cases of
/// `baseline` (without one, every case of a relative threshold fails, saying so).
pub fn evaluate(
    thresholds: &[Threshold],
    record: &RunRecord,
    baseline: Option<&Baseline>,
) -> Vec<ThresholdResult> {
    let base_record = baseline.map(|b| &b.record);
    thresholds
        .iter()
        .map(|t| {
            let cases: Vec<CaseCheck> = (record.cases.iter())
                .filter(|c| t.scopes(c))
                .map(|c| {
                    let v = t.value(c);
                    let limit = t.limit_for(c, base_record);
                    // A case with no figure fails: nothing shows the threshold held.
                    let as_they_stand = v.zip(limit).is_some_and(|(v, l)| t.op.holds(v, l));
                    let (held, basis) = match (t.baseline, baseline) {
                        (true, Some(b)) if v.is_some() && limit.is_some() => match t.tested(c, b) {
                            Ok((held, basis)) => (held, Some(basis)),
                            Err(why) => (
                                as_they_stand,
                                Some(format!("the figures as they stand, no test: {why}")),
                            ),
                        },
                        _ => (as_they_stand, None),
                    };
                    CaseCheck {
                        case: c.id().to_string(),
                        value: v.map(|v| t.show(v)),
                        limit: match t.baseline {
                            false => None,
                            true => Some(limit.map_or_else(
                                || match baseline {
                                    None => "no baseline run".to_string(),
                                    Some(_) => "not in the baseline".to_string(),
                                },
                                |l| t.show(l),
                            )),
                        },
                        basis,
                        held,
                    }
                })
                .collect();
            ThresholdResult {
                threshold: t.text.clone(),
                held: !cases.is_empty() && cases.iter().all(|c| c.held),
                cases,
            }
        })
        .collect()
}

/// The metric `metric` names and its limit written `value` (in threshold `text`); the message
/// when either is wrong.
fn metric_limit(metric: &str, value: &str, text: &str) -> Result<(Metric, f64), String> {
    let quantile = match metric {
        "p50" => Some(0.5),
        "p90" => Some(0.9),
        "p99" => Some(0.99),
        "p99.9" => Some(0.999),
        "p99.99" => Some(0.9999),
        "max" => Some(1.0),
        _ => None,
    };
    let duration = |m: Metric| {
        duration_ns(value).map(|v| (m, v)).ok_or_else(|| {
            format!("{value:?} in threshold {text:?} is not a duration (10ms, 250us)")
        })
    };
    match (metric, quantile) {
        (_, Some(q)) => duration(Metric::Quantile(q)),
        ("mean", None) => duration(Metric::Mean),
        ("rate", None) => Ok((
            Metric::Rate,
            value
                .replace('_', "")
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| {
                    format!("{value:?} in threshold {text:?} is not a rate (operations per second)")
                })?,
        )),
        ("errors", None) => match value.strip_suffix('%') {
            Some(p) => Ok((
                Metric::ErrorRatio,
                p.parse::<f64>()
                    .ok()
                    .filter(|v| (0.0..=100.0).contains(v))
                    .ok_or_else(|| {
                        format!("{value:?} in threshold {text:?} is not a percentage")
                    })?
                    / 100.0,
            )),
            None => Ok((
                Metric::ErrorCount,
                value.parse::<u64>().map_err(|_| {
                    format!("{value:?} in threshold {text:?} is not a count or a percentage")
                })? as f64,
            )),
        },
        ("checks", None) => (value.strip_suffix('%'))
            .and_then(|p| p.parse::<f64>().ok())
            .filter(|v| (0.0..=100.0).contains(v))
            .map(|p| (Metric::Checks, p / 100.0))
            .ok_or_else(|| {
                format!("{value:?} in threshold {text:?} is not a percentage (checks > 99.9%)")
            }),
        (other, None) => Err(format!("unknown metric {other:?} in threshold {text:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_read_as_written_and_bad_ones_say_how() {
        let t = Threshold::parse("p99  <  10ms target=redis test=get").unwrap();
        assert_eq!(t.metric, Metric::Quantile(0.99));
        assert_eq!(t.op, Op::Lt);
        assert_eq!(t.limit, 10_000_000.0);
        assert_eq!(t.target.as_deref(), Some("redis"));
        assert_eq!(t.text, "p99 < 10ms target=redis test=get");
        let e = Threshold::parse("errors < 0.1%").unwrap();
        assert_eq!(e.metric, Metric::ErrorRatio);
        assert!((e.limit - 0.001).abs() < 1e-12);
        assert_eq!(
            Threshold::parse("errors <= 0").unwrap().metric,
            Metric::ErrorCount
        );
        assert_eq!(Threshold::parse("rate > 50000").unwrap().limit, 50_000.0);
        for (text, factor) in [
            ("p99 < baseline * 1.05", 1.05),
            ("p99 < baseline*1.05 target=x", 1.05),
            ("rate > baseline *0.9", 0.9),
            ("rate > baseline", 1.0),
            ("errors <= baseline * 2", 2.0),
        ] {
            let t = Threshold::parse(text).unwrap();
            assert!(t.baseline && t.limit == factor, "{text}: {t:?}");
        }
        assert_eq!(
            Threshold::parse("errors <= baseline * 2").unwrap().metric,
            Metric::ErrorRatio
        );
        for (bad, says) in [
            ("p99 10ms", "not METRIC OP VALUE"),
            ("p99 ~ 10ms", "is not <, <=, > or >="),
            ("p98 < 10ms", "unknown metric \"p98\""),
            ("p99 < fast", "is not a duration"),
            ("rate > lots", "is not a rate"),
            ("errors < 200%", "is not a percentage"),
            ("p99 < 1ms host=x", "is not a scope"),
            ("p99 < baseline * fast", "is not a positive factor"),
            ("p99 < baseline * -1", "is not a positive factor"),
            ("p99 < baselines", "is not a positive factor"),
        ] {
            let err = Threshold::parse(bad).unwrap_err();
            assert!(err.message.contains(says), "{bad}: {err}");
            assert!(err.hint.contains("METRIC OP VALUE"), "{err}");
        }
    }
}
