//! Whether the answers a system gave were right: the operations a run made, and checkers that
//! read them. [`Op`] is one operation as a client saw it — its call, what it returned, and
//! whether it happened (ok), definitely did not (failed), or may have (unknown: a timeout, a
//! broken connection) — on the run's clock. [`linearizable`] checks registers (read, write,
//! compare-and-set per key) for linearizability; [`history`] is a history's file, [`edn`] reads
//! Jepsen's, [`verdict`] what the record keeps of a check.

pub mod append;
pub mod edn;
pub mod history;
pub mod linearizable;
pub mod verdict;

/// The models a history can be checked against (`--check`), and what each asks: of registers
/// (`linearizable`), or of transactions of appends and reads ([`append`]).
pub const MODELS: [(&str, &str); 4] = [
    (
        "linearizable",
        "each key a register: every operation took effect at one instant between its call and its answer",
    ),
    (
        "serializable",
        "transactions of list appends and reads: some serial order explains every read (no G0, G1a, G1b, G1c, G-single, G2-item)",
    ),
    (
        "snapshot-isolation",
        "transactions of list appends and reads: as serializable, write skew (G2-item) allowed",
    ),
    (
        "read-committed",
        "transactions of list appends and reads: no G0, G1a, G1b, G1c; anti-dependency cycles allowed",
    ),
];

/// When a check given `budget` from now must stop: far off for a budget too large to add.
pub fn deadline(budget: std::time::Duration) -> std::time::Instant {
    let now = std::time::Instant::now();
    (now.checked_add(budget)).unwrap_or_else(|| now + std::time::Duration::from_secs(86_400 * 365))
}

/// Whether `model` is one of transactions (a list-append history), not of registers.
pub fn transactional(model: &str) -> bool {
    model != "linearizable"
}

/// What an operation asked of a key, and what it returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Call {
    /// A read, and the value it saw (`None`: the key was absent).
    Read { saw: Option<u64> },
    /// A write of `value`.
    Write { value: u64 },
    /// A compare-and-set from `from` (`None`: absent) to `to`, and whether it swapped.
    Cas {
        from: Option<u64>,
        to: u64,
        swapped: bool,
    },
}

/// Whether an operation happened, as its client can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// It happened, and returned what its call says.
    Ok,
    /// It definitely did not happen (refused before reaching the store, a definite error).
    Failed,
    /// It may or may not have happened, at any time after its invocation (a timeout, a broken
    /// connection): what it returned is not known.
    Unknown,
}

/// The client of the writes a suite made before its clients began (each key's first value).
pub const LOADER: u32 = u32::MAX;

/// One operation of a history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Op {
    pub client: u32,
    pub key: u64,
    pub call: Call,
    pub outcome: Outcome,
    /// When it was invoked and when its answer came, ns on the run's clock (`complete_ns` is
    /// not read for an unknown outcome).
    pub invoke_ns: u64,
    pub complete_ns: u64,
}

impl Op {
    /// On the run's clock, for a proof's timeline: `write 7`, `read 5`, `read nothing`.
    pub fn span(&self) -> crate::Span {
        let v = |v: Option<u64>| v.map_or("nothing".to_string(), |v| v.to_string());
        let label = match (self.call, self.outcome) {
            (Call::Read { saw }, Outcome::Ok) => format!("read {}", v(saw)),
            (Call::Read { .. }, _) => "read ?".to_string(),
            (Call::Write { value }, _) => format!("write {value}"),
            (Call::Cas { from, to, .. }, _) => format!("cas {} → {to}", v(from)),
        };
        crate::Span {
            client: self.client,
            start_ns: self.invoke_ns,
            end_ns: (self.outcome != Outcome::Unknown).then_some(self.complete_ns),
            label,
        }
    }

    /// As a line of a proof: `client 3 write 7 at 1.204–1.380 ms: ok`.
    pub fn describe(&self) -> String {
        let v = |v: Option<u64>| v.map_or("nothing".to_string(), |v| v.to_string());
        let call = match self.call {
            Call::Read { saw } => match self.outcome {
                Outcome::Ok => format!("read {}", v(saw)),
                _ => "read".to_string(),
            },
            Call::Write { value } => format!("write {value}"),
            Call::Cas { from, to, swapped } => {
                let result = match (self.outcome, swapped) {
                    (Outcome::Ok, true) => " (swapped)",
                    (Outcome::Ok, false) => " (did not swap)",
                    _ => "",
                };
                format!("cas {} → {to}{result}", v(from))
            }
        };
        let ms = |ns: u64| format!("{:.3}", ns as f64 / 1e6);
        let when = match self.outcome {
            Outcome::Unknown => format!("from {} ms on", ms(self.invoke_ns)),
            _ => format!("at {}–{} ms", ms(self.invoke_ns), ms(self.complete_ns)),
        };
        let outcome = match self.outcome {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::Unknown => "unknown",
        };
        let who = match self.client {
            LOADER => "the load".to_string(),
            c => format!("client {c}"),
        };
        format!("{who} {call} on key {} {when}: {outcome}", self.key)
    }
}
