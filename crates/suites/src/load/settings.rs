//! The load suite's settings: each described once (its flag, its plan-file key in `[load]` or
//! `[suite]`, its help).

use engine::plan::setting::shared;
use engine::plan::{Kind, Setting};

const HEADING: Option<&str> = Some("Load (http://, tcp://)");

/// A load setting: `key`, its kind, the value's name in `--help`, and the help.
const fn load(
    key: &'static str,
    kind: Kind,
    value_name: &'static str,
    help: &'static str,
) -> Setting {
    Setting {
        key,
        short: None,
        aliases: &[],
        kind,
        value_name,
        help,
        heading: HEADING,
    }
}

pub static DURATION: Setting = Setting {
    short: Some('d'),
    ..load(
        "duration",
        Kind::Text,
        "",
        "Load: how long each repetition offers load, e.g. 10s or 2m [default: 2s, 5 times: wrk's \
         10 s; once with --quick].",
    )
};
pub static REQUESTS: Setting = load(
    "requests",
    Kind::Int,
    "",
    "Load, closed loop: requests per connection instead of a duration (gobench's model).",
);
/// `-R`, as wrk2's and pgbench's.
pub static RATE: Setting = Setting {
    short: Some('R'),
    ..load(
        "rate",
        Kind::Number,
        "",
        "Load: an open loop at this many requests/s (`5000`), or ramping (`1000..20000`).",
    )
};
pub static RAMP: Setting = load(
    "ramp",
    Kind::Text,
    "",
    "Load: ramp from the first rate to the second over this long, then hold.",
);
pub static STAGES: Setting = load(
    "stages",
    Kind::Stages,
    "",
    "Load, open loop: the rate profile as stages, `[{ rate = 1000, duration = \"30s\" }, …]` \
     (plan files only).",
);
pub static ARRIVAL: Setting = load(
    "arrival",
    Kind::Text,
    "",
    "Load, open loop: `constant` or `poisson` arrivals [default: constant].",
);
pub static MAX_CONNECTIONS: Setting = load(
    "max_connections",
    Kind::Int,
    "",
    "Load, open loop: open connections up to this many when all are busy [default: -c].",
);
pub static TIMEOUT: Setting = load(
    "timeout",
    Kind::Text,
    "",
    "Load: a request unanswered this long is a timeout [default: 10s].",
);
pub static BURST: Setting = load(
    "burst",
    Kind::Text,
    "every=D for=D rate=R",
    "A heavy burst on top of a steady open-loop rate, for soak runs: `every=6h for=10m \
     rate=5000` (the last `for` of each `every` runs at the burst rate).",
);
pub static COALESCE: Setting = load(
    "coalesce",
    Kind::Text,
    "auto|off|WINDOW",
    "How often responses may wake a load thread: `auto` (a short window, only while many \
     responses are in flight; a dense open loop sends in paced batches), `off` (every response \
     and every request at once), or a window such as `20us`. Each wake-up costs the target's \
     core an interrupt; the wait is counted in latency.",
);
pub static MAX_LAG: Setting = load(
    "max_lag",
    Kind::Text,
    "SHARE%|DURATION",
    "Open loop: how late dyno may dispatch at p99 (beyond its pace) before the run is marked \
     invalid: a share of the corrected latency p99 (`50%`) or a time (`2ms`) [default: 50%].",
);

/// What the suite reads. `objects` and `size` are accepted as before the suites were types
/// (recorded, not used).
pub static SETTINGS: &[&Setting] = &[
    &shared::OBJECTS,
    &shared::SIZE,
    &shared::CLIENTS,
    &DURATION,
    &REQUESTS,
    &RATE,
    &RAMP,
    &STAGES,
    &ARRIVAL,
    &MAX_CONNECTIONS,
    &shared::THREADS,
    &TIMEOUT,
    &shared::INTERVAL,
    &shared::HLOG,
    &BURST,
    &COALESCE,
    &MAX_LAG,
    &shared::IO,
];
