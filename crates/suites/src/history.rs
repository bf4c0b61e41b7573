//! `--check`: a target's history as its clients make it, and its check when the target's run
//! ends. Each client keeps its operations of a test and hands them over when it finishes; they
//! are appended to the history's file in the results directory at once (so a run cut short
//! leaves what it did on disk) and kept for the check, up to [`MAX_OPS`]. The verdict goes to
//! every case of the target ([`Repeat::consistency`]).

use engine::driver::ErrorClass;
use engine::suite::{Plan, Repeat};
use results::consistency::append::Txn;
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
    /// Its operations, for [`Keeper::add`].
    pub fn ops(self) -> Vec<Op> {
        self.ops
    }

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

/// What a history holds: a register's operations, or transactions; each written a line apiece.
pub trait Item: Sized {
    fn write(out: &mut impl Write, items: &[Self]) -> std::io::Result<()>;
}

impl Item for Op {
    fn write(out: &mut impl Write, items: &[Self]) -> std::io::Result<()> {
        results::consistency::history::write(out, items)
    }
}

impl Item for Txn {
    fn write(out: &mut impl Write, items: &[Self]) -> std::io::Result<()> {
        results::consistency::history::write_txns(out, items)
    }
}

struct Kept<T> {
    items: Vec<T>,
    tests: Vec<String>,
    file: Option<std::io::BufWriter<std::fs::File>>,
    cut: Option<String>,
}

/// A finished history: its items, the tests they are of, its file's name (when it was written
/// whole) and why it is incomplete (its cap), if it is.
pub struct Finished<T> {
    pub items: Vec<T>,
    pub tests: Vec<String>,
    pub file: Option<String>,
    pub cut: Option<String>,
    pub model: &'static str,
    pub budget: std::time::Duration,
}

/// One target's history at one point (`None` from [`Keeper::new`] without `--check`).
pub struct Keeper<T = Op> {
    model: &'static str,
    budget: std::time::Duration,
    path: Option<std::path::PathBuf>,
    kept: Mutex<Kept<T>>,
}

impl<T: Item> Keeper<T> {
    pub fn new(plan: &Plan, run: &mut dyn Repeat) -> Option<Keeper<T>> {
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
                items: Vec::new(),
                tests: Vec::new(),
                file,
                cut: None,
            }),
        })
    }

    /// A client's operations (or transactions) of test `test`.
    pub fn add(&self, test: &str, mut items: Vec<T>) {
        let Ok(mut k) = self.kept.lock() else { return };
        if !k.tests.iter().any(|t| t == test) {
            k.tests.push(test.to_string());
        }
        let room = MAX_OPS.saturating_sub(k.items.len());
        if items.len() > room {
            items.truncate(room);
            k.cut = Some(format!(
                "the history was cut at {MAX_OPS} operations: a check of part of it proves nothing of the rest"
            ));
        }
        if let Some(f) = &mut k.file
            && T::write(f, &items).is_err()
        {
            k.file = None;
        }
        k.items.extend(items);
    }

    /// The history, `last` added (written after the rest), its file flushed.
    pub fn take(self, last: Vec<T>, run: &mut dyn Repeat) -> Option<Finished<T>> {
        let mut k = self.kept.into_inner().ok()?;
        let mut written = k
            .file
            .take()
            .map(|mut f| T::write(&mut f, &last).and_then(|()| f.flush()));
        if let Some(Err(e)) = &written {
            run.warn(format!("the history's file is incomplete: {e}"));
            written = None;
        }
        let file = (written.is_some())
            .then(|| self.path.as_ref()?.file_name()?.to_str().map(String::from))
            .flatten();
        k.items.extend(last);
        Some(Finished {
            items: k.items,
            tests: k.tests,
            file,
            cut: k.cut,
            model: self.model,
            budget: self.budget,
        })
    }
}

impl Keeper<Op> {
    /// Checks the history, each key read in it holding `initial(key)` before the clients
    /// began (the loader's write), and hands the verdict to the runner.
    pub fn finish(self, initial: impl Fn(u64) -> Option<u64>, run: &mut dyn Repeat) {
        let keys: Vec<u64> = match self.kept.lock() {
            Ok(k) => {
                let mut keys: Vec<u64> = k.items.iter().map(|o| o.key).collect();
                keys.sort_unstable();
                keys.dedup();
                keys
            }
            Err(_) => return,
        };
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
        let Some(h) = self.take(loads, run) else {
            return;
        };
        debug_assert_eq!(h.model, "linearizable");
        let verdict =
            results::consistency::verdict::linearizable(&h.items, h.budget, h.tests, h.file, h.cut);
        run.consistency(verdict);
    }
}
