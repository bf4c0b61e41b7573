//! The command line, as clap parses it. Values stay raw here; `cmd::resolve` checks them
//! (the same code that checks a plan file), so a bad `--objects` and a bad `objects =` get the
//! same message with their own place.

use clap::{Args, Parser, Subcommand};
use engine::plan::{Given, Kind, Origin, Sp, Value};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "dyno",
    version,
    about = "A dynamometer for storage systems and network services",
    long_about = "A dynamometer for storage systems and network services: put a system on it, run \
                  standard or custom workloads, get rates and full latency distributions you can trust.\n\n\
                  `dyno run` with no target runs the shootout suite on the embedded targets \
                  (mem, sqlite, fs, lmdb), each in a fresh temporary namespace."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a suite on targets (URLs) or a plan file.
    #[command(after_long_help = crate::exit::exit_help())]
    Run(Box<RunArgs>),
    /// Check a plan file without running anything (the checks `run` makes).
    Validate {
        /// The plan file (TOML).
        plan: PathBuf,
        /// Check it as shard I of N too (`run --shard`): whether its suite can be split, and
        /// what a split needs.
        #[arg(long, value_name = "I/N")]
        shard: Option<String>,
        /// With --shard: the shards meet at this HOST:PORT (`run --rendezvous`).
        #[arg(long, value_name = "HOST:PORT", requires = "shard")]
        rendezvous: Option<String>,
    },
    /// Render saved run records again, running nothing.
    Report {
        /// A results directory (holding run.json), a directory of them, or a run.json file.
        dir: PathBuf,
        #[arg(long, short = 'f', default_value = "table", help = report::Format::help(crate::suites::views()))]
        format: String,
        /// Also draw the plots (SVG, PNG and .dat for gnuplot) into this directory.
        #[arg(long, value_name = "DIR")]
        plots: Option<PathBuf>,
        /// Also write one self-contained HTML page (tables, plots, environment, plan): to
        /// DIR/report.html, or to FILE with --html=FILE.
        #[arg(long, value_name = "FILE", num_args = 0..=1, require_equals = true)]
        html: Option<Option<PathBuf>>,
        /// Also send the runs' time series to Prometheus remote write or InfluxDB, as
        /// `run --push` does during a run. Repeatable.
        #[arg(long = "push", value_name = "URL")]
        push: Vec<String>,
    },
    /// One exact record from the records of a run's shards (`run --shard I/N`): histograms
    /// added bucket by bucket, counts summed, the time series added interval by interval, each
    /// shard's self-check kept. Writes a new results directory and prints the report.
    Merge {
        /// The directory the shards wrote into (each shard's `-o DIR` makes DIR/shard-I), or
        /// the shards' own results directories, every rank once.
        #[arg(required = true, num_args = 1..)]
        dirs: Vec<PathBuf>,
        /// Where the merged run goes: a new or empty directory [default: a new one under
        /// dyno-results].
        #[arg(long, short = 'o', value_name = "DIR")]
        out: Option<PathBuf>,
        #[arg(long, short = 'f', default_value = "table", help = report::Format::help(crate::suites::views()))]
        format: String,
    },
    /// Compare two saved runs case by case: each figure's change with its 95% interval,
    /// p-value and verdict (improved, regressed, no change, too few repetitions, too few runs),
    /// held against this machine's run-to-run noise from the earlier runs in the history.
    Compare {
        /// The run compared against: a results directory, its run.json, or @last, @prev,
        /// @baseline:NAME from the history.
        base: PathBuf,
        /// The run judged; more runs are each judged against BASE in turn.
        #[arg(required = true, num_args = 1..)]
        new: Vec<PathBuf>,
        /// Where the history is (the results root holding history.sqlite).
        #[arg(long, value_name = "DIR", default_value = "dyno-results")]
        results: PathBuf,
        /// Changes within ±this are "no change" (criterion's noise threshold).
        #[arg(long, default_value = "2%")]
        noise: String,
        /// Output format: table, markdown, json, or html (a page with each case's latency
        /// spectra of both runs overlaid; written to --out).
        #[arg(long, short = 'f', default_value = "table")]
        format: String,
        /// With -f html: the page's file [default: compare.html].
        #[arg(long, short = 'o', value_name = "FILE")]
        out: Option<PathBuf>,
        /// Compare runs whose settings differ (rate, clients, sizes, durability, dyno's
        /// version, the machine); otherwise dyno lists the differences and refuses.
        #[arg(long)]
        allow_different: bool,
    },
    /// The runs registered in the history (results root's history.sqlite), oldest first; with
    /// --case, the headline figures of the matching cases run after run.
    History {
        /// The results root holding history.sqlite.
        #[arg(long, value_name = "DIR", default_value = "dyno-results")]
        results: PathBuf,
        /// Only this suite's runs.
        #[arg(long)]
        suite: Option<String>,
        /// The cases whose identity contains this text (e.g. "add on sqlite"): their rate, p50,
        /// p99 and errors in each run.
        #[arg(long)]
        case: Option<String>,
        /// Draw METRIC (rate, p50, p99, errors) over the runs, a line per case, as SVG, PNG and
        /// .dat in --to.
        #[arg(long, value_name = "METRIC")]
        plot: Option<String>,
        /// Where --plot writes trend-METRIC.{svg,png,dat} [default: the results root].
        #[arg(long, value_name = "DIR", requires = "plot")]
        to: Option<PathBuf>,
    },
    /// Name a registered run a baseline (@baseline:NAME for compare).
    Baseline {
        #[command(subcommand)]
        action: BaselineAction,
    },
    /// Check histories again, running nothing: those a run kept (`run --check`, in its
    /// results directory), or one history file — dyno's (JSON lines) or Jepsen's (`.edn`).
    /// Exit status: 0 valid, 1 bad input, 3 an anomaly found, 4 undecided within the budget.
    Check {
        /// A results directory (or a directory of them), or a history file.
        path: PathBuf,
        /// What the answers must be: linearizable (each key a register), or of a list-append
        /// history's transactions serializable, snapshot-isolation or read-committed [default:
        /// what the run checked; linearizable for a file].
        #[arg(long)]
        model: Option<String>,
        /// The most time spent on one key (or on a transactional history's cycle search)
        /// before it is reported unknown.
        #[arg(long, default_value = "10s")]
        budget: String,
    },
    /// List the drivers: URL forms, operation families and options.
    Targets,
    /// The adapter conformance kit: checks an adapter program (exec:PROGRAM[?OPTIONS]) against
    /// the protocol, operation by operation; exit 0 when every check passes.
    AdapterCheck {
        /// The adapter, as a target URL: exec:PROGRAM[?OPTION=VALUE…].
        url: String,
    },
    /// Serve the object-store benchmark host (for dyno:// targets), or with --http / --tcp a
    /// reference server for load tests.
    Serve(ServeArgs),
    /// Print a benchmark host's server-side statistics: operations, counts, latency.
    Stats {
        /// The host's address, e.g. 127.0.0.1:7000.
        addr: String,
        /// The host's token, if it has one.
        #[arg(long)]
        token: Option<String>,
    },
    /// Emulate a network link: a TCP proxy adding delay, jitter and a bandwidth cap per direction.
    Link(LinkArgs),
}

#[derive(Debug, Subcommand)]
pub enum BaselineAction {
    /// `dyno baseline set NAME RUN`: RUN (a results directory, or @last, @prev) becomes
    /// @baseline:NAME.
    Set {
        name: String,
        run: PathBuf,
        /// The results root holding history.sqlite.
        #[arg(long, value_name = "DIR", default_value = "dyno-results")]
        results: PathBuf,
    },
}

#[derive(Debug, Args)]
pub struct LinkArgs {
    /// Address to listen on, e.g. 127.0.0.1:9000.
    #[arg(long)]
    pub listen: String,
    /// Where to forward each connection, e.g. 127.0.0.1:8080.
    #[arg(long)]
    pub to: String,
    /// A preset: `lan` (0.25 ms one way, 1 Gbit/s) or `wan` (20 ms ± 2 ms, 50 Mbit/s).
    #[arg(long)]
    pub preset: Option<String>,
    /// One-way delay, e.g. 20ms [default: 0, or the preset's].
    #[arg(long)]
    pub delay: Option<String>,
    /// Each chunk's delay varies uniformly within ± this (bytes never reorder).
    #[arg(long)]
    pub jitter: Option<String>,
    /// Bandwidth cap per direction, e.g. 50mbit, 1gbit, 512kbit [default: none].
    #[arg(long)]
    pub rate: Option<String>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve the HTTP reference server (HTTP/1.1, and HTTP/2 in the clear on the same port)
    /// instead of the benchmark host.
    #[arg(long, conflicts_with = "tcp")]
    pub http: bool,
    /// Serve raw TCP: each request is a line; the response is framed by --framing.
    #[arg(long)]
    pub tcp: bool,
    /// Address to listen on [default: 127.0.0.1:7000 for the host, 127.0.0.1:8080 for HTTP,
    /// 127.0.0.1:7070 for TCP].
    #[arg(long)]
    pub listen: Option<String>,
    /// The host: clients must present this token (dyno://…?token=…).
    #[arg(long)]
    pub token: Option<String>,
    /// The host: keep objects in LMDB in this directory (fsync at commit) instead of memory. An
    /// existing directory must be empty or a store a host created.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["http", "tcp"])]
    pub store: Option<std::path::PathBuf>,
    /// What a response holds: `json` (a fixed small document) or `sizes:MIN..MAX` (a payload of
    /// a uniformly drawn size, in bytes).
    #[arg(long, default_value = "json")]
    pub body: String,
    /// Stall every response due in a window: `PAUSE/EVERY`, e.g. 500ms/5s.
    #[arg(long)]
    pub stall: Option<String>,
    /// Misbehave on every Nth request: `reset:N` or `garbage:N`.
    #[arg(long)]
    pub fault: Option<String>,
    /// One worker for every connection, taking this long over each request: a server whose
    /// capacity (1 / this time) is known, e.g. 1ms for 1,000 requests/s.
    #[arg(long, value_name = "DURATION")]
    pub service_time: Option<String>,
    /// TCP response framing: `length:4`, `line`, `close`, or `raw` (the payload alone; use
    /// `--body sizes:N..N` and the client's `framing=fixed:N`).
    #[arg(long, default_value = "length:4")]
    pub framing: String,
    /// TCP: send the response as soon as a connection opens, with no request (then close).
    #[arg(long)]
    pub on_connect: bool,
    /// Seed of the payload sizes and bytes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Target URLs (mem:, sqlite:PATH, fs:DIR, lmdb:DIR, mock:?latency=1ms …), or one plan
    /// file ending in .toml. Without any: mem, sqlite, fs and lmdb in temporary namespaces.
    pub targets: Vec<String>,
    /// The suite to run (each says what it is, from the registry).
    #[arg(long, help = crate::suites::help())]
    pub suite: Option<String>,
    /// The suites' settings (`-n`, `-c`, `--depth`, `--rate`…), each described once by the
    /// suites that read it.
    #[command(flatten)]
    pub settings: SuiteFlags,
    /// Measured repetitions; the table shows the best [default: 5 (a comparison needs 4 a side); 1 with --quick; 1 for kv and ycsb].
    #[arg(long, short = 'r', allow_negative_numbers = true)]
    pub reps: Option<i64>,
    /// Seed of the object contents [default: 1].
    #[arg(long, allow_negative_numbers = true)]
    pub seed: Option<i64>,
    /// Skip the unmeasured warm-up repetition (shootout runs one by default).
    #[arg(long, conflicts_with = "warmup")]
    pub no_warmup: bool,
    /// Run one unmeasured warm-up repetition first (load runs none by default).
    #[arg(long)]
    pub warmup: bool,
    /// A fast look: 100 objects per client, one repetition (explicit values still win).
    #[arg(long, short = 'q')]
    pub quick: bool,
    /// Where to write the run record [default: ./dyno-results/<UTC time>/].
    #[arg(long, short = 'o')]
    pub out: Option<String>,
    #[arg(long, short = 'f', help = report::Format::help(crate::suites::views()))]
    pub format: Option<String>,

    #[arg(
        long = "sweep",
        value_name = "PARAM=VALUES",
        help_heading = "Sweeps",
        help = crate::suites::sweep_help()
    )]
    pub sweeps: Vec<String>,
    /// Samples per point (the repetitions of each case); the sweep table and plots show their
    /// mean, min and max [default: as --reps].
    #[arg(long, allow_negative_numbers = true, help_heading = "Sweeps")]
    pub samples: Option<i64>,
    /// https://, grpcs://: trust the CA certificates of this PEM file instead of Mozilla's roots.
    #[arg(long, value_name = "FILE", help_heading = "Load (http://, tcp://)")]
    pub ca: Option<String>,
    /// https://, grpcs://: accept any certificate (a test server's self-signed one); still
    /// encrypted.
    #[arg(long, help_heading = "Load (http://, tcp://)")]
    pub insecure: bool,
    /// h2c://, grpc://, and https:// with --http-version 2: requests in flight on each
    /// connection at once, each on its own stream (h2load's -m); a closed loop runs connections × streams
    /// clients [default: 1].
    #[arg(long, value_name = "N", help_heading = "Load (http://, tcp://)")]
    pub streams: Option<String>,
    /// https://: the HTTP version: auto (HTTP/2 if the server picks h2 when offered both by
    /// ALPN, else 1.1), 1.1, or 2 (only h2 offered) [default: auto].
    #[arg(long, value_name = "VERSION", help_heading = "Load (http://, tcp://)")]
    pub http_version: Option<String>,
    /// How often a running load repetition is written into the record, so a crash loses at most
    /// this much [default: 1m].
    #[arg(long, value_name = "DURATION", help_heading = "Load (http://, tcp://)")]
    pub checkpoint: Option<String>,
    /// Progress on stderr: auto (off unless stdout is a terminal; status lines for load runs of
    /// a minute or more, else a bar with ETA), bar, lines (one per interval) or off.
    #[arg(long, default_value = "auto", value_name = "MODE")]
    pub progress: String,
    /// No progress and no informational lines on stderr (warnings and errors stay).
    #[arg(long)]
    pub quiet: bool,
    /// A CPU profile per test (its first measured repetition) of every process dyno started or
    /// watches (--pid, --process-name, [targets.NAME.process]) and of dyno itself: perf for
    /// native code, py-spy for Python, drawn as flame graphs DIR/TARGET/TEST/PROCESS-PID.svg,
    /// linked from the HTML report.
    #[arg(long, value_name = "DIR")]
    pub profile: Option<PathBuf>,
    /// Run as shard I of N generators: this one drives its part of the plan and writes its
    /// record and .hlog into DIR/shard-I (-o DIR is needed) for `dyno merge DIR`. The load
    /// suite: 1/N of --rate, phased so all shards' arrivals interleave, and its part of -c.
    /// The ycsb suite (with --rendezvous): its slice of the -n records to load (YCSB's
    /// insertstart/insertcount), its part of -c and of each workload's operations and rate,
    /// in a namespace all shards share on the server; the kv suite (with --rendezvous, without
    /// faults): its slice of the entries and its part of -c. `auto` reads Slurm's
    /// SLURM_PROCID/SLURM_NTASKS; `auto/N` a Kubernetes Indexed Job's JOB_COMPLETION_INDEX.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// With --shard: HOST:PORT where shard 0 listens and the others meet it; every
    /// repetition then starts on all shards at one agreed instant, each shard's clock offset
    /// to shard 0 measured and recorded.
    #[arg(long, value_name = "HOST:PORT", requires = "shard")]
    pub rendezvous: Option<String>,
    /// How long shards wait for each other at the rendezvous.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "60s",
        requires = "rendezvous"
    )]
    pub rendezvous_wait: String,
    /// Serve live Prometheus metrics (rates, latency quantiles, errors) at
    /// http://ADDR/metrics while the run goes, e.g. 127.0.0.1:9091.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<String>,
    /// Serve a live view of the run: a page showing each case's rate, latency and service
    /// time over time, errors and faults as they happen, that becomes the HTML report when the
    /// run ends. On 127.0.0.1 and a free port (printed at the start), or --ui=ADDR; an address
    /// other than loopback answers only requests with the token printed with it.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub ui: Option<String>,
    /// Give the live view's page a stop button, which stops the run as Ctrl-C does (the
    /// finished cases kept).
    #[arg(long, requires = "ui")]
    pub ui_stop: bool,
    /// Send each interval's figures, as the run goes, to Prometheus remote write
    /// (prom+remote://HOST:PORT/api/v1/write) or InfluxDB 1.x (influx://HOST:PORT/DATABASE),
    /// labelled with the run, target, test and repetition. Repeatable. What a destination does
    /// not take is counted in the record; the run goes on.
    #[arg(long = "push", value_name = "URL")]
    pub push: Vec<String>,
    /// Watch this process (and its descendants) for the whole run: CPU, RSS, threads, open
    /// files, bytes read and written, once a second. Repeatable.
    #[arg(
        long = "pid",
        value_name = "PID",
        allow_negative_numbers = true,
        help_heading = "Monitoring"
    )]
    pub pids: Vec<i64>,
    /// Watch every process of this name (as `ps -e` shows it). Repeatable.
    #[arg(
        long = "process-name",
        value_name = "NAME",
        help_heading = "Monitoring"
    )]
    pub process_names: Vec<String>,

    /// A fault to do to a target's process during the run, e.g. "kill every=10s after=1s",
    /// "pause target=db at=5s,12s for=2s", "restart stagger=30s". Repeatable.
    #[arg(long = "fault", value_name = "SPEC", help_heading = "Faults")]
    pub faults: Vec<String>,

    /// A pass/fail criterion checked when the run ends: METRIC OP VALUE [target=] [test=]
    /// [level=], e.g. "p99 < 10ms", "rate > 50000 target=redis", "errors < 0.1%". A failed one
    /// exits with status 4. Repeatable.
    #[arg(long = "threshold", value_name = "CHECK")]
    pub thresholds: Vec<String>,
    /// A capacity search: the highest steady open-loop rate at which this objective holds
    /// (METRIC OP VALUE, e.g. "p99 < 20ms", "errors < 0.1%"); the plan's own load runs first,
    /// then each step (of -d, -r) is a rate chosen from what came before. Repeatable: all must
    /// hold.
    #[arg(long = "find-max", value_name = "OBJECTIVE")]
    pub find_max: Vec<String>,
    /// Keep the history of every operation and check it when each target's run ends:
    /// `linearizable` (each key a register; the kv and ycsb suites). The verdict, with the
    /// smallest set of operations that cannot be ordered as its proof, is on each case; the
    /// history is written to the results directory (`dyno check DIR` reads it again).
    #[arg(long, value_name = "MODEL", help_heading = "Gates")]
    pub check: Option<String>,
    /// Check the thresholds on a load or sql case's running intervals too (from 2 s into each
    /// repetition; abort_after in the plan) and stop the run at the first broken (status 4).
    #[arg(long, help_heading = "Gates")]
    pub abort_on_fail: bool,
    /// Compare the run, when it ends, with this one (a results directory, @last, @prev,
    /// @baseline:NAME); a regressed figure exits with status 5. It is also the baseline of
    /// thresholds written `p99 < baseline * 1.05`.
    #[arg(long, value_name = "RUN", help_heading = "Gates")]
    pub compare: Option<PathBuf>,
    /// With --compare: changes within ±this are "no change".
    #[arg(
        long,
        default_value = "2%",
        requires = "compare",
        help_heading = "Gates"
    )]
    pub noise: String,
    /// With --compare: compare even when the settings differ (otherwise listed and refused).
    #[arg(long, requires = "compare", help_heading = "Gates")]
    pub allow_different: bool,

    /// HTTP: request method [default: GET].
    #[arg(long, short = 'm', help_heading = "HTTP requests")]
    pub method: Option<String>,
    /// HTTP: an extra header, `Name: value` (repeat for more).
    #[arg(long = "header", short = 'H', help_heading = "HTTP requests")]
    pub headers: Vec<String>,
    /// HTTP: request body.
    #[arg(long, help_heading = "HTTP requests")]
    pub body: Option<String>,
    /// HTTP: read the request body from this file.
    #[arg(long, help_heading = "HTTP requests")]
    pub body_file: Option<String>,
    /// HTTP: open a new connection for every request (`Connection: close`).
    #[arg(long, help_heading = "HTTP requests")]
    pub no_keepalive: bool,
    /// HTTP: send the requests of this file instead (vegeta's format: `METHOD URL`, headers,
    /// `@BODY_FILE`, a blank line between), each weighted 1 and measured under its name.
    #[arg(long, value_name = "FILE", help_heading = "HTTP requests")]
    pub requests_file: Option<String>,
    /// HTTP: fill in the `{{…}}` fields of the path, headers and body at each request
    /// (`{{seq}}`, `{{client}}`, `{{uniform A B}}`, `{{zipf N THETA}}`, `{{uuid}}`,
    /// `{{data.COLUMN}}`), or send them as written [default: true].
    #[arg(long, value_name = "BOOL", help_heading = "HTTP requests")]
    pub templates: Option<String>,
    /// HTTP: a condition each response must meet, counted passed or failed (repeat for more):
    /// `status in 200,201`, `header NAME exists`, `body contains TEXT`, `json /POINTER == VALUE`,
    /// `size < 4KiB`…
    #[arg(long, value_name = "CHECK", help_heading = "HTTP requests")]
    pub expect: Vec<String>,
    /// HTTP: a response failing a check (--expect) fails its request, not only the check.
    #[arg(long, help_heading = "HTTP requests")]
    pub expect_fail: bool,
    /// HTTP: a value each response gives the client's next requests (`{{capture.NAME}}`),
    /// `NAME = json /POINTER`, `NAME = header NAME` or `NAME = regex PATTERN` (repeat for more).
    #[arg(long, value_name = "CAPTURE", help_heading = "HTTP requests")]
    pub capture: Vec<String>,
    /// HTTP: the steps each client takes in turn, by the names of its mix's requests
    /// (`login,item,item`), each iteration timed end to end.
    #[arg(long, value_name = "STEPS", help_heading = "HTTP requests")]
    pub scenario: Option<String>,
    /// HTTP: a scenario's think time after each step: a duration or a range (`10ms..50ms`).
    #[arg(long, value_name = "DURATION", help_heading = "HTTP requests")]
    pub think: Option<String>,
    /// HTTP: the rows of `{{data.COLUMN}}`: a CSV file with a header line, or JSON lines.
    #[arg(long, value_name = "FILE", help_heading = "HTTP requests")]
    pub data_rows: Option<String>,
    /// HTTP: which data row a request takes: in-order, random or per-client [default: in-order].
    #[arg(long, value_name = "ORDER", help_heading = "HTTP requests")]
    pub data_order: Option<String>,

    /// gRPC: the .proto file describing the service; without it, the server's reflection service
    /// is asked (-H gives the call's metadata).
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "gRPC calls (grpc://, grpcs://)"
    )]
    pub proto: Option<String>,
    /// gRPC: a directory the .proto file's imports are looked up in (repeat for more).
    #[arg(
        long,
        value_name = "DIR",
        help_heading = "gRPC calls (grpc://, grpcs://)"
    )]
    pub import_path: Vec<String>,
    /// gRPC: the request message as JSON.
    #[arg(
        long,
        value_name = "JSON",
        help_heading = "gRPC calls (grpc://, grpcs://)"
    )]
    pub data: Option<String>,
    /// gRPC: read the request message's JSON from this file.
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "gRPC calls (grpc://, grpcs://)"
    )]
    pub data_file: Option<String>,
    /// gRPC: the call's deadline, sent as grpc-timeout (the server gives up after it).
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "gRPC calls (grpc://, grpcs://)"
    )]
    pub deadline: Option<String>,
}

/// The suites' settings on the command line: one flag per setting of the registry's suites
/// (clap's builder, from each [`engine::plan::Setting`]), read back as the plan's [`Given`].
#[derive(Debug, Clone, Default)]
pub struct SuiteFlags(pub Given);

fn by_key() -> Vec<Vec<&'static engine::plan::Setting>> {
    crate::suites::catalogue()
        .by_key()
        .into_iter()
        .filter(|d| d[0].kind != Kind::Stages)
        .collect()
}

/// The id of a flag setting's `--no-…` ([`Kind::Flag`]).
fn off(s: &engine::plan::Setting) -> &'static str {
    Box::leak(format!("no_{}", s.key).into_boxed_str())
}

impl clap::FromArgMatches for SuiteFlags {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut given = Given::default();
        for d in by_key() {
            let s = d[0];
            let value = match s.kind {
                Kind::Int => m.get_one::<i64>(s.key).map(|v| Value::Int(*v)),
                // The later of `--connect` and `--no-connect` wins (each overrides the other).
                Kind::Flag => match (m.get_flag(s.key), m.get_flag(off(s))) {
                    (true, _) => Some(Value::Int(1)),
                    (_, true) => Some(Value::Int(0)),
                    _ => None,
                },
                _ if s.is_list() => (m.get_many::<String>(s.key))
                    .map(|v| Value::Text(v.cloned().collect::<Vec<_>>().join(","))),
                _ => (m.get_one::<String>(s.key)).map(|v| Value::Text(v.clone())),
            };
            if let Some(value) = value {
                // One name per setting and process: the flag a message names.
                let name = match value {
                    Value::Int(0) if s.kind == Kind::Flag => format!("--no-{}", s.long()),
                    _ => format!("--{}", s.long()),
                };
                let flag: &'static str = Box::leak(name.into_boxed_str());
                given.set(s.key, Sp::new(value, Origin::Flag(flag)));
            }
        }
        Ok(SuiteFlags(given))
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = SuiteFlags::from_arg_matches(m)?;
        Ok(())
    }
}

impl clap::Args for SuiteFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        by_key().into_iter().fold(cmd, |cmd, d| {
            let s = d[0];
            // Each suite's sentence, as clap's derive writes a doc comment: no final period.
            let help: Vec<&str> = d.iter().map(|s| s.help.trim_end_matches('.')).collect();
            let mut arg = clap::Arg::new(s.key)
                .long(s.long())
                .help(help.join(". "))
                .visible_aliases(s.aliases.iter().copied())
                .action(match (s.kind, s.is_list()) {
                    (Kind::Flag, _) => clap::ArgAction::SetTrue,
                    (_, true) => clap::ArgAction::Append,
                    (_, false) => clap::ArgAction::Set,
                });
            arg = match s.kind {
                Kind::Flag => arg,
                Kind::Int => {
                    (arg.allow_negative_numbers(true)).value_parser(clap::value_parser!(i64))
                }
                _ => (arg.allow_negative_numbers(true)).value_parser(clap::value_parser!(String)),
            };
            if let Some(c) = s.short {
                arg = arg.short(c);
            }
            arg = match s.value_name {
                _ if s.kind == Kind::Flag => arg,
                "" => arg.value_name(s.key.to_uppercase()),
                name => arg.value_name(name),
            };
            if let Some(h) = s.heading {
                arg = arg.help_heading(h);
            }
            if s.kind != Kind::Flag {
                return cmd.arg(arg);
            }
            // A flag's way back off, for a plan file that turns it on.
            let no = clap::Arg::new(off(s))
                .long(format!("no-{}", s.long()))
                .action(clap::ArgAction::SetTrue)
                .help(format!(
                    "Turns --{} off (where a plan file says {} = true)",
                    s.long(),
                    s.key
                ))
                .overrides_with(s.key)
                .help_heading(s.heading);
            cmd.arg(arg.overrides_with(off(s))).arg(no)
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        SuiteFlags::augment_args(cmd)
    }
}
