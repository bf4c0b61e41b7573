//! `tally`: a suite that exists only in this crate's tests, the proof that a suite is one file
//! plus one registry line (`suites.rs`). One session writes `objects` keys in one transaction,
//! then reads each back and checks its length; its table is its own.

use engine::clock::Clock;
use engine::driver::{Family, TxMode};
use engine::plan::{Plan, PlanError, PlanTarget, RawPlan};
use engine::recorder::Recorder;
use engine::suite::TestOutcome;
use engine::suite::{After, Clients, Common, NoSettings, Param, Point, Repeat, Settings, Suite};
use engine::worker::{self, Schedule, Stop};
use report::grid::Style;
use results::{Rep, RunRecord, Status};
use std::io::{self, Write};
use std::sync::atomic::AtomicBool;

/// The suite.
pub struct Tally;

const TESTS: [&str; 2] = ["write", "read"];
const VALUE: [u8; 32] = [7; 32];

impl report::View for Tally {
    fn name(&self) -> &'static str {
        "tally"
    }

    fn table(&self, r: &RunRecord, _: Style, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "tally of {} keys", r.plan.objects)?;
        for c in &r.cases {
            let ops: u64 = c.reps.iter().map(|r| r.objects).sum();
            writeln!(
                out,
                "{} {} {}: {ops} operations",
                c.target,
                c.test,
                c.status.as_str()
            )?;
        }
        Ok(())
    }
}

/// One test on one session: its repetition's figures and recorder, or why it failed.
fn measure(
    session: &mut dyn engine::driver::Session,
    test: &'static str,
    rep: u32,
    objects: u64,
    interrupt: &AtomicBool,
) -> TestOutcome {
    let clock = Clock::monotonic();
    let mut rec = Recorder::new();
    let mut buf = Vec::new();
    let base = u64::from(rep) << 32;
    let t0 = clock.now_ns();
    let began = session.begin(if test == "write" {
        TxMode::Write
    } else {
        TxMode::Read
    });
    if let Err(e) = began {
        return TestOutcome::not_run(test, Status::Failed, format!("begin: {e}"));
    }
    worker::run(
        &clock,
        &mut Schedule::Closed,
        Stop::Count(objects),
        interrupt,
        &mut rec,
        |i| {
            if test == "write" {
                session.put(base + i, &VALUE)?;
            } else {
                session.get(base + i, &mut buf)?;
                if buf.len() != VALUE.len() {
                    return Err(engine::error::OpError::new(
                        engine::error::ErrorClass::Corrupt,
                        format!("read {} bytes, wrote {}", buf.len(), VALUE.len()),
                    ));
                }
            }
            Ok(VALUE.len() as u64)
        },
    );
    let committed = session.commit();
    let wall_ns = clock.now_ns() - t0;
    let (status, reason) = match committed {
        Err(e) => (Status::Failed, Some(format!("commit: {e}"))),
        Ok(()) if rec.error_count() > 0 => (Status::Failed, Some("an operation failed".into())),
        Ok(()) => (Status::Ok, None),
    };
    TestOutcome {
        test,
        status,
        reason,
        cache: None,
        rep: Some(Rep {
            objects: rec.ops,
            clients: 1,
            wall_ns,
            client_ns: vec![wall_ns],
            ops_per_s: results::rate::per_s(rec.ops as f64, wall_ns),
            commit_ns: 0,
            storage_reads: 0,
            errors: rec.error_count(),
            latency_ns: results::stats::latency_summary(&rec.latency),
            load: None,
        }),
        recorder: rec,
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

    fn settings(&self) -> &'static [&'static str] {
        &["objects"]
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
    ) -> Result<(), String> {
        let store = target.config.open().map_err(|e| format!("open: {e}"))?;
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
        store.close().map_err(|e| e.to_string())
    }
}
