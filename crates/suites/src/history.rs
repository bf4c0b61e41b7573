//! `--check`: a target's history as its clients make it, and its check when the target's run
//! ends. Each client keeps its operations of a test and hands them over when it finishes; they
//! are appended to the history's file in the results directory at once (so a run cut short
//! leaves what it did on disk) and kept for the check, up to [`MAX_OPS`]. The verdict goes to
//! every case of the target ([`Repeat::consistency`]).

use engine::driver::ErrorClass;
use engine::suite::{Plan, Repeat};
use results::consistency::history::MAX_OPS;
use results::consistency::{Call, LOADER, Op, Outcome};
use std::io::Write;
use std::sync::Mutex;

/// Whether a failed operation's outcome is unknown: it was sent (the connection was not
/// refused) and no answer came. A failed read changed nothing whatever happened.
pub fn indefinite(class: ErrorClass) -> bool {
    class.is_connection() && class != ErrorClass::Refused
}

/// How a failed operation's outcome reads in a history.
pub fn outcome_of(class: ErrorClass) -> Outcome {
    if indefinite(class) {
        Outcome::Unknown
    } else {
        Outcome::Failed
    }
}

/// A client's operations of one test, timed on the run's clock (whatever clock times its
/// latencies: the mock's is virtual, and each client's own).
pub struct Local {
    clock: engine::clock::Clock,
    client: u32,
    ops: Vec<Op>,
}

impl Local {
    pub fn new(clock: &engine::clock::Clock, client: u32) -> Local {
        Local {
            clock: clock.clone(),
            client,
            ops: Vec::new(),
        }
    }

    /// Now on the run's clock: an operation's invocation.
    pub fn now(&self) -> u64 {
        self.clock.now_ns()
    }

    /// Adds an operation on `key` invoked at `invoke_ns` and answered now: `call` when it
    /// succeeded, else the failure's class (a read that found no such key saw it absent).
    pub fn push(&mut self, key: u64, call: Call, failed: Option<ErrorClass>, invoke_ns: u64) {
        let complete_ns = self.clock.now_ns();
        let (call, failed) = match (call, failed) {
            (Call::Read { .. }, Some(ErrorClass::NotFound)) => (Call::Read { saw: None }, None),
            other => other,
        };
        self.ops.push(Op {
            client: self.client,
            key,
            call,
            outcome: failed.map_or(Outcome::Ok, outcome_of),
            invoke_ns,
            complete_ns,
        });
    }
}

struct Kept {
    ops: Vec<Op>,
    tests: Vec<String>,
    file: Option<std::io::BufWriter<std::fs::File>>,
    cut: Option<String>,
}

/// One target's history at one point (`None` from [`Keeper::new`] without `--check`).
pub struct Keeper {
    model: &'static str,
    budget: std::time::Duration,
    path: Option<std::path::PathBuf>,
    kept: Mutex<Kept>,
}

impl Keeper {
    pub fn new(plan: &Plan, run: &mut dyn Repeat) -> Option<Keeper> {
        let check = plan.check.as_ref()?;
        let path = run.history_file();
        let file = match path.as_ref().map(std::fs::File::create) {
            Some(Ok(f)) => Some(std::io::BufWriter::new(f)),
            Some(Err(e)) => {
                run.warn(format!("the history is kept in memory only: {e}"));
                None
            }
            None => None,
        };
        Some(Keeper {
            model: check.model,
            budget: check.budget,
            path,
            kept: Mutex::new(Kept {
                ops: Vec::new(),
                tests: Vec::new(),
                file,
                cut: None,
            }),
        })
    }

    /// A client's operations of test `test`.
    pub fn add(&self, test: &str, local: Local) {
        let Ok(mut k) = self.kept.lock() else { return };
        if !k.tests.iter().any(|t| t == test) {
            k.tests.push(test.to_string());
        }
        let room = MAX_OPS.saturating_sub(k.ops.len());
        let mut ops = local.ops;
        if ops.len() > room {
            ops.truncate(room);
            k.cut = Some(format!(
                "the history was cut at {MAX_OPS} operations: a check of part of it proves nothing of the rest"
            ));
        }
        if let Some(f) = &mut k.file
            && results::consistency::history::write(f, &ops).is_err()
        {
            k.file = None;
        }
        k.ops.extend(ops);
    }

    /// Checks the history, each key read in it holding `initial(key)` before the clients
    /// began (the loader's write), and hands the verdict to the runner.
    pub fn finish(self, initial: impl Fn(u64) -> Option<u64>, run: &mut dyn Repeat) {
        let Ok(mut k) = self.kept.into_inner() else {
            return;
        };
        let mut keys: Vec<u64> = k.ops.iter().map(|o| o.key).collect();
        keys.sort_unstable();
        keys.dedup();
        let loads: Vec<Op> = (keys.into_iter())
            .filter_map(|key| {
                initial(key).map(|value| Op {
                    client: LOADER,
                    key,
                    call: Call::Write { value },
                    outcome: Outcome::Ok,
                    invoke_ns: 0,
                    complete_ns: 0,
                })
            })
            .collect();
        let mut written = k.file.take().map(|mut f| {
            results::consistency::history::write(&mut f, &loads).and_then(|()| f.flush())
        });
        if let Some(Err(e)) = &written {
            run.warn(format!("the history's file is incomplete: {e}"));
            written = None;
        }
        let file = (written.is_some())
            .then(|| self.path.as_ref()?.file_name()?.to_str().map(String::from))
            .flatten();
        k.ops.extend(loads);
        debug_assert_eq!(self.model, "linearizable");
        let verdict =
            results::consistency::verdict::linearizable(&k.ops, self.budget, k.tests, file, k.cut);
        run.consistency(verdict);
    }
}
