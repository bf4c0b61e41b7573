//! `tally`: a suite that exists only in this crate's tests, the proof that a suite is one file
//! plus one registry line (`suites.rs`): its tests, its record detail (`Detail::Custom`), its
//! per-kind latencies (`get` and `put` apart) and its table are its own, and it runs end to end
//! through `dyno run` and `dyno report`.

use engine::clock::Clock;
use engine::driver::{Family, TxMode};
use engine::error::{ErrorClass, OpError};
use engine::plan::{PlanError, PlanTarget, RawPlan};
use engine::recorder::Recorder;
use engine::suite::Plan;
use engine::suite::TestOutcome;
use engine::suite::{
    After, Clients, Common, NoSettings, Param, Point, Repeat, Settings, Suite, TargetError,
};
use engine::worker::{self, Schedule, Stop};
use report::grid::Doc;
use results::{Detail, Rep, RunRecord, Status};
use std::io;
use std::sync::atomic::AtomicBool;

/// The suite.
pub struct Tally;

/// `write` puts `objects` new keys; `mixed` then reads each back and rewrites it, a get and a
/// put per key, each kind timed apart.
const TESTS: [&str; 2] = ["write", "mixed"];
const VALUE: [u8; 32] = [7; 32];

/// What only tally measures: reads whose value came back whole.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Figures {
    verified_reads: u64,
}

fn figures(r: &Rep) -> Option<Figures> {
    match &r.detail {
        Detail::Custom { suite, figures, .. } if suite == "tally" => {
            serde_json::from_value(figures.clone()).ok()
        }
        _ => None,
    }
}

impl results::Named for Tally {
    fn name(&self) -> &'static str {
        "tally"
    }
}

impl report::View for Tally {
    fn table(&self, r: &RunRecord, doc: &mut Doc) -> io::Result<()> {
        doc.line(&format!("tally of {} keys", r.plan.objects))?;
        let header = vec![vec![
            "target".to_string(),
            "test".into(),
            "get p50".into(),
            "put p50".into(),
            "verified reads".into(),
        ]];
        let p50 = |c: &results::Case, op: &str| {
            (c.reps.first())
                .and_then(|r| r.by_op.get(op))
                .and_then(|f| f.latency_ns)
                .map_or("-".to_string(), |l| report::units::latency(l.p50))
        };
        let body: Vec<Vec<String>> = (r.cases.iter())
            .map(|c| {
                let verified: u64 = (c.reps.iter())
                    .filter_map(figures)
                    .map(|f| f.verified_reads)
                    .sum();
                vec![
                    c.target.clone(),
                    c.test.clone(),
                    p50(c, "get"),
                    p50(c, "put"),
                    verified.to_string(),
                ]
            })
            .collect();
        doc.table(&header, &body)
    }
}

/// One test on one session.
fn measure(
    session: &mut dyn engine::driver::Session,
    test: &'static str,
    rep: u32,
    objects: u64,
    interrupt: &AtomicBool,
) -> TestOutcome {
    let clock = Clock::monotonic();
    let (mut gets, mut puts) = (Recorder::new(), Recorder::new());
    let mut buf = Vec::new();
    let mut verified = 0;
    let key = |i: u64| (u64::from(rep) << 32) + i;
    let t0 = clock.now_ns();
    if let Err(e) = session.begin(TxMode::Write) {
        return TestOutcome::not_run(test, Status::Failed, format!("begin: {e}"));
    }
    if test == "write" {
        worker::run(
            &clock,
            &mut Schedule::Closed,
            Stop::Count(objects),
            interrupt,
            &mut puts,
            |i| {
                session.put(key(i), &VALUE)?;
                Ok(VALUE.len() as u64)
            },
        );
    } else {
        // Each kind in its own recorder: a key's get, then its put.
        for i in 0..objects {
            worker::run(
                &clock,
                &mut Schedule::Closed,
                Stop::Count(1),
                interrupt,
                &mut gets,
                |_| {
                    session.get(key(i), &mut buf)?;
                    if buf.len() != VALUE.len() {
                        return Err(OpError::new(
                            ErrorClass::Corrupt,
                            format!("read {} bytes, wrote {}", buf.len(), VALUE.len()),
                        ));
                    }
                    verified += 1;
                    Ok(VALUE.len() as u64)
                },
            );
            worker::run(
                &clock,
                &mut Schedule::Closed,
                Stop::Count(1),
                interrupt,
                &mut puts,
                |_| {
                    session.put(key(i), &VALUE)?;
                    Ok(VALUE.len() as u64)
                },
            );
        }
    }
    let committed = session.commit();
    let wall_ns = clock.now_ns() - t0;
    let committed = committed.map_err(|e| format!("commit: {e}"));
    outcome(test, committed, (gets, puts), wall_ns, verified)
}

/// The test's outcome: its status, each kind's figures apart, and tally's own.
fn outcome(
    test: &'static str,
    committed: Result<(), String>,
    (gets, puts): (Recorder, Recorder),
    wall_ns: u64,
    verified: u64,
) -> TestOutcome {
    let mut all = Recorder::new();
    all.merge(&gets);
    all.merge(&puts);
    let (status, reason) = match committed {
        Err(e) => (Status::Failed, Some(e)),
        Ok(()) if all.error_count() > 0 => (Status::Failed, Some("an operation failed".into())),
        Ok(()) => (Status::Ok, None),
    };
    let by_op = [("get", &gets), ("put", &puts)]
        .into_iter()
        .filter(|(_, r)| r.ops > 0)
        .map(|(op, r)| (op.to_string(), r.figures()))
        .collect();
    TestOutcome {
        test,
        status,
        reason,
        cache: None,
        rep: Some(Rep {
            ops: all.ops,
            clients: 1,
            wall_ns,
            client_ns: vec![wall_ns],
            ops_per_s: results::rate::per_s(all.ops as f64, wall_ns),
            errors: all.error_count(),
            latency_ns: results::stats::latency_summary(&all.latency),
            by_op,
            detail: Detail::custom(
                "tally",
                serde_json::to_value(Figures {
                    verified_reads: verified,
                })
                .expect("plain figures serialize"),
            ),
        }),
        recorder: all,
        server: Vec::new(),
    }
}

impl Suite for Tally {
    fn help(&self) -> &'static str {
        "a test-only suite: write keys, read them back"
    }

    fn family(&self) -> Family {
        Family::Kv
    }

    fn settings(&self) -> &'static [&'static engine::plan::Setting] {
        static SETTINGS: &[&engine::plan::Setting] = &[&engine::plan::setting::shared::OBJECTS];
        SETTINGS
    }

    fn targets_hint(&self) -> &'static str {
        "tally runs on key-value stores"
    }

    fn clients(&self) -> Clients {
        Clients {
            default: 1,
            max: 1,
            why: "tally runs one session",
        }
    }

    fn sweepable(&self) -> Vec<Param> {
        vec![Param {
            name: "objects",
            min: 1,
            max: 1 << 20,
        }]
    }

    fn resolve(&self, _: &RawPlan, _: &Common) -> Result<Box<dyn Settings>, PlanError> {
        Ok(Box::new(NoSettings))
    }

    fn tests(&self, _: &Plan, _: &Point) -> Vec<&'static str> {
        TESTS.to_vec()
    }

    fn run(
        &self,
        _: &Plan,
        point: &Point,
        target: &PlanTarget,
        _: &AtomicBool,
        run: &mut dyn Repeat,
    ) -> Result<(), TargetError> {
        let store = target.config.open().map_err(TargetError::Open)?;
        run.describe(store.namespace(), store.versions());
        let clock = Clock::monotonic();
        let objects = point.objects;
        let store_ref = &*store;
        run.repeat(None, None, &mut |ctx| {
            let mut session = match store_ref.connect(&clock) {
                Ok(s) => s,
                Err(e) => return After::Fail(format!("connect: {e}")),
            };
            for test in TESTS {
                ctx.report(measure(
                    &mut *session,
                    test,
                    ctx.rep,
                    objects,
                    ctx.interrupt,
                ));
            }
            After::Next
        });
        if let Err(e) = store.close() {
            run.warn(format!("target {}: {e}", target.name));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::Cli;
    use clap::Parser;

    #[test]
    fn a_suite_written_in_a_test_runs_through_dyno_run_with_its_own_detail_and_table() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let db = dir.path().join("t.db");
        let args = [
            "dyno",
            "run",
            "--suite",
            "tally",
            "mem:",
            &format!("sqlite:{}", db.display()),
            "-n",
            "300",
            "--reps",
            "2",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ];
        let code = crate::cmd::run(Cli::try_parse_from(args).unwrap()).unwrap();
        assert_eq!(code, std::process::ExitCode::SUCCESS);

        // The record: tally's cases, each repetition with its own detail and both kinds apart.
        let records = results::store::load(&out).unwrap();
        let r = &records[0];
        assert_eq!(r.plan.suite, "tally");
        let tests: Vec<(&str, &str)> = (r.cases.iter())
            .map(|c| (c.target.as_str(), c.test.as_str()))
            .collect();
        assert_eq!(
            tests,
            [
                ("mem", "write"),
                ("mem", "mixed"),
                ("sqlite", "write"),
                ("sqlite", "mixed")
            ]
        );
        for c in &r.cases {
            assert_eq!(c.status, results::Status::Ok, "{c:?}");
            assert_eq!(c.reps.len(), 2);
            let rep = &c.reps[1];
            let verified = super::figures(rep).unwrap().verified_reads;
            if c.test == "mixed" {
                assert_eq!(verified, 300);
                assert_eq!(rep.ops, 600);
                assert_eq!(rep.by_op["get"].count, 300);
                assert_eq!(rep.by_op["put"].count, 300);
                let h = results::histogram::decode(rep.by_op["get"].histogram.as_ref().unwrap());
                assert_eq!(h.unwrap().len(), 300, "each kind keeps its own histogram");
            } else {
                assert_eq!((verified, rep.ops), (0, 300));
                assert_eq!(rep.by_op.keys().collect::<Vec<_>>(), ["put"]);
            }
        }

        // The table `dyno report` prints is tally's own.
        let mut text = Vec::new();
        report::render(
            report::Format::Table,
            &records,
            crate::suites::views(),
            &mut text,
        )
        .unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.starts_with("tally of 300 keys\n"), "{text}");
        let mixed: Vec<&str> = (text.lines()).filter(|l| l.contains("mixed")).collect();
        assert_eq!(mixed.len(), 2, "{text}");
        assert!(
            mixed.iter().all(|l| l.trim_end().ends_with(" 600")),
            "2 × 300 verified: {text}"
        );
    }
}
