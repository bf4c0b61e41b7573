//! The engine's own cost per recorded operation, on a target that does nothing.
//!
//! One client, closed loop, through the same `worker::run` and `Session` trait object the suites
//! use: what is left is the clock read, the histogram record, the counters and the virtual call.
//! Run with `cargo bench -p engine --bench overhead` (add `-- OPS` to change the count).

use engine::clock::Clock;
use engine::driver::{OpError, Session, TxMode};
use engine::recorder::Recorder;
use engine::worker::{self, Schedule, Stop};
use std::hint::black_box;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

struct Noop {
    reads: u64,
}

impl Session for Noop {
    fn begin(&mut self, _: TxMode) -> Result<(), OpError> {
        Ok(())
    }
    fn put(&mut self, _: u64, _: &[u8]) -> Result<(), OpError> {
        Ok(())
    }
    fn get(&mut self, _: u64, out: &mut Vec<u8>) -> Result<(), OpError> {
        self.reads += 1;
        out.clear();
        Ok(())
    }
    fn delete(&mut self, _: u64) -> Result<(), OpError> {
        Ok(())
    }
    fn commit(&mut self) -> Result<(), OpError> {
        Ok(())
    }
    fn storage_reads(&self) -> u64 {
        self.reads
    }
}

fn main() {
    let ops: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20_000_000);
    let clock = Clock::monotonic();
    let stop = AtomicBool::new(false);
    let mut session: Box<dyn Session> = Box::new(Noop { reads: 0 });
    let mut buf = Vec::with_capacity(64);
    let mut rec = Recorder::new();
    let mut per_op = Vec::new();
    for round in 0..7 {
        rec.reset();
        let t = Instant::now();
        let end = worker::run(
            &clock,
            &mut Schedule::Closed,
            Stop::Count(ops),
            &stop,
            &mut rec,
            |i| {
                session.get(black_box(i), &mut buf)?;
                Ok(0)
            },
        );
        let ns = t.elapsed().as_nanos() as f64 / end.ops as f64;
        assert_eq!(rec.latency.len(), ops, "every operation recorded");
        if round > 0 {
            per_op.push(ns);
        }
        black_box(&rec);
    }
    per_op.sort_by(f64::total_cmp);
    println!(
        "engine overhead, no-op target, 1 client, closed loop, {ops} ops x 6 rounds (+1 warm-up):\n  \
         per recorded operation: median {:.1} ns, min {:.1} ns, max {:.1} ns",
        per_op[per_op.len() / 2],
        per_op[0],
        per_op[per_op.len() - 1]
    );
}
