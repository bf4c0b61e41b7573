//! What a repetition measured beyond the common figures, by suite: the store suites', the load suite's (the generator's self-check, the time series, the arrivals), the kv suite's.

use super::*;

/// What the kv suite measures of a repetition beyond the common figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvRep {
    /// Operations issued: `ok + definite + indefinite`.
    pub issued: u64,
    pub ok: u64,
    /// Failed operations that certainly did nothing (a read; a write refused before it was sent,
    /// or answered with an error).
    pub definite: u64,
    /// Writes whose outcome is unknown: sent, then the connection broke or no answer came. Not
    /// counted as failed nor as done (Jepsen's `:info`).
    pub indefinite: u64,
    /// Sessions opened again (a `restart-clients` fault, or a client whose session broke).
    pub reconnects: u64,
    /// The time series, one entry per 100 ms interval.
    pub intervals: Vec<IntervalRecord>,
    /// When the repetition's operations began, on the run's clock: its intervals start here.
    pub started_ns: u64,
    /// The `set` test: every acknowledged write read back after the final heal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_writes: Option<LostWrites>,
}

/// The lost-writes check: each key's last acknowledged value, read back after the faults
/// healed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LostWrites {
    /// Keys with an acknowledged write, each read back.
    pub checked: u64,
    /// Keys that were gone.
    pub missing: u64,
    /// Keys holding an older value than the last one acknowledged.
    pub stale: u64,
    /// Keys that could not be read back (the store did not answer in time): unknown.
    pub unread: u64,
    /// A few of the lost keys: `key: acknowledged write N, found M` (at most 10).
    pub examples: Vec<String>,
}

/// Whether a target's answers were right (`--check`): a checker's verdict over the history of
/// every operation the suite made on the target at this point (all its tests and repetitions,
/// the warm-up included), the same on each of those tests' cases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsistencyRecord {
    /// What was checked: `linearizable` (each key a register).
    pub model: String,
    /// `valid`, `invalid` (an anomaly was found: see `anomalies`) or `unknown` (see `unknown`).
    pub verdict: Verdict,
    /// The tests whose operations the history holds, in order.
    pub tests: Vec<String>,
    /// Operations checked (failed ones and reads of unknown outcome left out), and keys.
    pub ops: u64,
    pub keys: u64,
    /// The history's file in the results directory (`dyno check DIR` reads it again); `null`
    /// when the run wrote no directory.
    pub history: Option<String>,
    /// Anomalies found, by kind (`not linearizable`: keys whose operations cannot be ordered).
    pub anomalies: BTreeMap<String, u64>,
    /// The first few anomalies with their proof (at most 5).
    pub proofs: Vec<Proof>,
    /// Why the verdict is unknown (a key's check ran out of time, the history was cut at its
    /// cap), when it is.
    pub unknown: Vec<String>,
    /// How long the check took.
    pub check_ns: u64,
}

/// A consistency verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Valid,
    Invalid,
    Unknown,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Valid => "valid",
            Verdict::Invalid => "invalid",
            Verdict::Unknown => "unknown",
        }
    }
}

/// One anomaly and its proof: the smallest set of operations found that cannot be ordered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Proof {
    pub kind: String,
    /// The key (for a register).
    pub key: Option<u64>,
    /// What the operations show, in a sentence, when dyno can say (a stale read).
    pub why: Option<String>,
    /// The operations, one line each: `client 3 write 7 on key 12 at 1.204–1.380 ms: ok`.
    pub ops: Vec<String>,
    /// The same operations on the run's clock, for the proof's timeline.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<Span>,
}

/// One operation of a proof on the run's clock: its client, from its call to its answer
/// (`None`: never answered), and what it did (`write 7`, `read 5`, a transaction's steps).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Span {
    pub client: u32,
    pub start_ns: u64,
    pub end_ns: Option<u64>,
    pub label: String,
}

impl Rep {
    /// The load figures, for a load repetition.
    pub fn load(&self) -> Option<&LoadRep> {
        self.detail.load()
    }
}

/// What a store suite measures of a repetition beyond the common figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreRep {
    /// The slowest client's time in begin + commit.
    pub commit_ns: u64,
    /// Reads that reached the storage below dyno's client object cache.
    pub storage_reads: u64,
    /// dyno's own CPU (user + system, every thread) while the test ran: what the clients cost
    /// the generator, the figure to weigh against a native benchmark's (absent in records from
    /// before it was kept, and where not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu_ns: Option<u64>,
}

/// The messages of streamed responses: the repetition's latency (`latency_ns`) is each call's
/// time to its last message; these time every message, and each call's first, from the same
/// intended start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Messages {
    /// Calls that brought at least one message, and the messages of all of them.
    pub calls: u64,
    pub messages: u64,
    /// From each call's intended start to its first message.
    pub first_ns: Option<LatencySummary>,
    /// From each call's intended start to each of its messages.
    pub each_ns: Option<LatencySummary>,
    /// The two histograms (HdrHistogram V2, deflate, base64), so that shards add up exactly.
    pub first_histogram: String,
    pub each_histogram: String,
}

impl Messages {
    /// The figures of `messages` from `calls`, timed by the histograms `first` and `each`.
    pub fn of(
        calls: u64,
        messages: u64,
        first: &crate::Histogram,
        each: &crate::Histogram,
    ) -> Messages {
        use crate::stats::latency_summary;
        Messages {
            calls,
            messages,
            first_ns: latency_summary(first),
            each_ns: latency_summary(each),
            first_histogram: crate::histogram::encode(first),
            each_histogram: crate::histogram::encode(each),
        }
    }
}

/// What one repetition of request/response load measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadRep {
    /// Requests started.
    pub requests: u64,
    /// Complete responses of any status.
    pub responses: u64,
    /// Successful responses (HTTP 2xx; any complete frame for tcp).
    pub ok: u64,
    /// Complete responses reporting failure (HTTP non-2xx).
    pub non_2xx: u64,
    /// Requests with no complete response: refused, reset, timeout, broken response.
    pub network_failed: u64,
    /// Requests that were due but never sent (open loop: queue full, or the run ended first).
    pub unsent: u64,
    /// Requests that got no response at all: `network_failed` + `unsent`.
    pub dropped: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Responses per second over the run.
    pub responses_per_s: f64,
    pub read_bytes_per_s: f64,
    pub write_bytes_per_s: f64,
    /// Connections established.
    pub connects: u64,
    /// Connections established per second, over the run and in the busiest interval.
    pub connects_per_s: f64,
    pub connects_peak_per_s: f64,
    /// Requests outstanding (in flight or queued): time-weighted mean, and maximum (an upper
    /// bound: the sum of each load thread's own maximum).
    pub outstanding_mean: f64,
    pub outstanding_max: u64,
    /// Share of responses (0..1) whose latency was within 100 ms, 500 ms, 1 s, 2 s, 5 s, 8 s, 10 s.
    pub within: Vec<WithinShare>,
    /// Service time: from the actual send to the response (uncorrected; latency_ns is corrected).
    pub service_ns: Option<LatencySummary>,
    /// TLS targets: each connection's handshake, from TCP connected to the handshake done
    /// (count = handshakes); absent in the clear.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_handshake_ns: Option<LatencySummary>,
    /// Streamed responses (gRPC server streaming): every message timed from its call's intended
    /// start, and the first of each call; absent when nothing streamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Messages>,
    /// Checks on responses: per request and check, how many responses passed and failed it;
    /// absent without checks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckCount>,
    /// A scenario's iterations, each timed from its first step's intended start to its last
    /// step's response; absent without a scenario.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<Iterations>,
    /// How the generator itself did.
    pub generator: GeneratorCheck,
    /// The time series, one entry per interval. At most 10,000: when a longer run fills them,
    /// neighbours merge in pairs (see [`IntervalRecord::merged`]); the `.hlog` keeps every
    /// interval exactly.
    pub intervals: Vec<IntervalRecord>,
    /// When the repetition's load began, on the run's clock (the clock of the faults): its
    /// intervals start from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ns: Option<u64>,
    /// True for a checkpoint of a repetition still running: the figures so far, from the
    /// intervals that ended (no service time, no schedule lag, no error examples yet).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// The service times' histogram (HdrHistogram V2, deflate, base64), so that shards' service
    /// times add up exactly; absent in records from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_histogram: Option<String>,
    /// A shard's repetition: the instant all shards agreed to start it, on rank 0's clock (ns
    /// since the Unix epoch); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_unix_ns: Option<u64>,
    /// A merged repetition: each shard's own self-check, in rank order (the merged `generator`
    /// is valid only if every one is); absent otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardCheck>,
    /// A merged open-loop repetition: the gaps between consecutive sends of all shards
    /// together, from each shard's first sends (see [`Arrivals`]); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interarrival: Option<Arrivals>,
    /// A shard's open-loop repetition: its first sends, in ns from the agreed start on rank 0's
    /// clock (at most [`MAX_SENDS_KEPT`]); what `dyno merge` interleaves. Absent otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sends_ns: Vec<u64>,
}

/// A scenario's iterations in one repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Iterations {
    /// Its steps, by request name.
    pub steps: Vec<String>,
    /// Iterations whose every step got a response.
    pub completed: u64,
    /// Iterations ended by a step without one (refused, reset, timeout…).
    pub failed: u64,
    /// End to end, of the completed ones.
    pub latency_ns: Option<LatencySummary>,
    /// Their histogram: HdrHistogram V2, deflate, base64.
    pub histogram: Option<String>,
}

/// One check on one request's responses, and how they fared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckCount {
    /// The request's name (`request` without a mix).
    pub request: String,
    /// The check as written (`status in 200,201`).
    pub check: String,
    pub passed: u64,
    pub failed: u64,
}

impl CheckCount {
    /// Adds `more` into `all`, check by check (matched by request and check).
    pub fn add(all: &mut Vec<CheckCount>, more: &[CheckCount]) {
        for m in more {
            match (all.iter_mut()).find(|c| c.request == m.request && c.check == m.check) {
                Some(c) => {
                    c.passed += m.passed;
                    c.failed += m.failed;
                }
                None => all.push(m.clone()),
            }
        }
    }
}

/// The most send times a shard keeps for the merged inter-arrival check: 20,000 sends (160 KB
/// in memory, about as much in the record) cover two seconds at 10,000 requests/s.
pub const MAX_SENDS_KEPT: usize = 20_000;

/// One shard's self-check in a merged repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardCheck {
    pub index: u32,
    pub generator: GeneratorCheck,
}

/// The merged arrivals of a sharded open loop: how evenly the shards' sends interleave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arrivals {
    /// The span the sends were taken from: from the agreed start to the earliest of the shards'
    /// last kept sends (beyond it some shard's sends are missing).
    pub window_ns: u64,
    /// Sends in the window, all shards together.
    pub sends: u64,
    /// The gap the asked rate makes (1 / rate), ns.
    pub intended_gap_ns: f64,
    /// The gaps between consecutive sends: percentiles, and the histogram (HdrHistogram V2,
    /// deflate, base64).
    pub gap_ns: Option<LatencySummary>,
    pub histogram: Option<String>,
}

/// The share of responses within a latency bound.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WithinShare {
    pub le_ns: u64,
    pub share: f64,
}

/// dyno's self-check: could the generator keep up?
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorCheck {
    /// Open loop: the rate the profile asked for; `null` in closed loop.
    pub intended_per_s: Option<f64>,
    /// Requests started per second.
    pub achieved_per_s: f64,
    /// Open loop: how late dyno itself dispatched due requests (not queueing behind the target).
    pub lag_ns: Option<LatencySummary>,
    /// dyno's CPU during the run (all threads).
    pub cpu_user_ns: u64,
    pub cpu_sys_ns: u64,
    /// CPU per request, user + system, in ns.
    pub cpu_ns_per_request: f64,
    /// The busiest load thread's CPU time over its wall time (0..1).
    pub busiest_thread: f64,
    /// Times the load threads slept and woke again.
    #[serde(default)]
    pub wakeups: u64,
    /// Of those, the sleeps on a thread's own clock for a coalescing window.
    #[serde(default)]
    pub coalesced: u64,
    /// The mean window of those sleeps, ns.
    #[serde(default)]
    pub window_mean_ns: f64,
    /// What one short sleep cost a load thread in CPU, measured as it started (ns): it decides
    /// which waits are spun and when an open loop paces itself.
    #[serde(default)]
    pub sleep_cost_ns: u64,
    /// Open loop: the widest pace a thread sent at (0 if none paced itself). A paced thread
    /// sends every request that fell due since its last wake-up at once, each up to this late by
    /// design; the verdict counts only lateness beyond it.
    #[serde(default)]
    pub pace_ns: u64,
    /// The I/O backend the load threads ran on (`io_uring` or `epoll`), and why it was chosen
    /// (absent in records from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_reason: Option<String>,
    /// System calls the load threads made per request, for their sockets and waits (counted
    /// where made: sends, receives, polls or ring submissions, connects, timers, sleeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscalls_per_request: Option<f64>,
    /// False when the generator was the bottleneck; `reason` says how it was seen.
    pub valid: bool,
    pub reason: Option<String>,
}

/// One interval of the time series.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntervalRecord {
    /// From the start of the repetition.
    pub start_ns: u64,
    pub end_ns: u64,
    pub responses: u64,
    /// Successful responses (HTTP 2xx; any complete frame for tcp).
    #[serde(default)]
    pub ok: u64,
    pub errors: u64,
    pub connects: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    /// p99.9 of the latency (0 in a record from before it was kept).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub p999_ns: u64,
    /// The service time (from the actual send) of the interval's responses: p50, p99, p99.9
    /// and max (0 where it is not measured apart, in the kv suite, and in a record from before
    /// it was kept).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub service_p50_ns: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub service_p99_ns: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub service_p999_ns: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub service_max_ns: u64,
    /// Connections dyno held open at the interval's end (connected, with a request or idle),
    /// over every thread (0 where not measured: the kv suite, and a record from before it was
    /// kept).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub open: u64,
    /// Requests in flight at the interval's end: connecting, being sent or awaiting their
    /// response (not those due but queued for a free connection).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub in_flight: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl IntervalRecord {
    /// Responses per second over the interval.
    pub fn responses_per_s(&self) -> f64 {
        crate::rate::per_s(self.responses as f64, self.end_ns - self.start_ns)
    }

    /// Two neighbouring intervals as one (for series thinned to stay bounded): their span, the
    /// sums of their counts, and the larger of each percentile (an upper bound; the `.hlog` has
    /// the exact figures).
    pub fn merged(a: &IntervalRecord, _: u64, b: &IntervalRecord, _: u64) -> IntervalRecord {
        IntervalRecord {
            start_ns: a.start_ns,
            end_ns: b.end_ns,
            responses: a.responses + b.responses,
            ok: a.ok + b.ok,
            errors: a.errors + b.errors,
            connects: a.connects + b.connects,
            p50_ns: a.p50_ns.max(b.p50_ns),
            p99_ns: a.p99_ns.max(b.p99_ns),
            max_ns: a.max_ns.max(b.max_ns),
            p999_ns: a.p999_ns.max(b.p999_ns),
            service_p50_ns: a.service_p50_ns.max(b.service_p50_ns),
            service_p99_ns: a.service_p99_ns.max(b.service_p99_ns),
            service_p999_ns: a.service_p999_ns.max(b.service_p999_ns),
            service_max_ns: a.service_max_ns.max(b.service_max_ns),
            // Gauges: as the later interval ended.
            open: b.open,
            in_flight: b.in_flight,
        }
    }
}
