//! A suite's settings, each described once: its plan-file key, its flag, its kind and its help.
//!
//! A [`Setting`] is the one place a setting is spelled. The command line is built from the
//! registry's settings (clap's builder, in the binary), a plan file's `[suite]` section and each
//! suite's own section (`[load]`, `[ycsb]`…) are read through them ([`Catalogue`]), the values
//! written land in [`Given`] with their place, and the suite that owns a setting reads it back
//! through the same description (`raw.settings.int(&DEPTH)`) in its `resolve`. A suite's record
//! section is the suite's own (its `Settings::record`).

use super::{Origin, PlanError, RawStage, Sp};
use crate::suggest::did_you_mean;

/// What a setting's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A whole number (`objects = 1000`, `-n 1000`).
    Int,
    /// Text (`duration = "10s"`).
    Text,
    /// A number or text (`rate = 5000`, `rate = "1000..20000"`), kept as text.
    Number,
    /// An array of `{ rate, duration }` tables (`stages = [...]`): plan files only.
    Stages,
    /// On when given: a flag without a value (`-C`), `true` or `false` in a plan file; read as
    /// the whole number 1 or 0 ([`Given::flag`]).
    Flag,
}

/// One setting of one or more suites.
#[derive(Debug)]
pub struct Setting {
    /// Its key in a plan file; its flag is `--` and the key with `-` for `_`.
    pub key: &'static str,
    pub short: Option<char>,
    /// More flag names (`--clients` for `--concurrency`).
    pub aliases: &'static [&'static str],
    pub kind: Kind,
    /// The value's name in `--help` (`DURATION`); the key in capitals when empty.
    pub value_name: &'static str,
    /// What it means, for `--help`; a setting several suites read joins each suite's sentence.
    pub help: &'static str,
    /// Where `--help` lists it (`"Load (http://, tcp://)"`), or with the run's own flags.
    pub heading: Option<&'static str>,
}

impl Setting {
    /// `max-connections` for `max_connections`: its long flag, without the dashes.
    pub fn long(&self) -> String {
        self.key.replace('_', "-")
    }

    /// Whether its value is a list (its value's name ends `,…`): its flag may then be given
    /// more than once, as pgbench's `-f` and `-D` are, the values joined by commas.
    pub fn is_list(&self) -> bool {
        self.kind == Kind::Text && self.value_name.ends_with(",…")
    }
}

/// A setting's value as written.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(i64),
    Text(String),
    Stages(Vec<RawStage>),
}

/// The settings written for the suites, each once, with its place: a flag replaces what the
/// plan file says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Given(Vec<(&'static str, Sp<Value>)>);

impl Given {
    /// Sets `key`, replacing what was there.
    pub fn set(&mut self, key: &'static str, value: Sp<Value>) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key, value)),
        }
    }

    fn get(&self, s: &Setting) -> Option<&Sp<Value>> {
        self.0.iter().find(|(k, _)| *k == s.key).map(|(_, v)| v)
    }

    /// A whole-number setting, when written.
    pub fn int(&self, s: &Setting) -> Option<Sp<i64>> {
        match self.get(s)? {
            Sp {
                value: Value::Int(v),
                at,
            } => Some(Sp::new(*v, at.clone())),
            _ => None,
        }
    }

    /// Whether a flag setting ([`Kind::Flag`]) is on, and where that was said (off when not
    /// written).
    pub fn flag(&self, s: &Setting) -> Option<Sp<bool>> {
        self.int(s).map(|v| Sp::new(v.value != 0, v.at))
    }

    /// A text (or number) setting, when written.
    pub fn text(&self, s: &Setting) -> Option<Sp<String>> {
        match self.get(s)? {
            Sp {
                value: Value::Text(v),
                at,
            } => Some(Sp::new(v.clone(), at.clone())),
            _ => None,
        }
    }

    /// The stages written (none when not).
    pub fn stages(&self, s: &Setting) -> &[RawStage] {
        match self.get(s) {
            Some(Sp {
                value: Value::Stages(v),
                ..
            }) => v,
            _ => &[],
        }
    }

    /// Every setting written, with its value, in the order written.
    pub fn entries(&self) -> impl Iterator<Item = (&'static str, &Sp<Value>)> {
        self.0.iter().map(|(k, v)| (*k, v))
    }
}

/// Every suite's settings, by the suite that reads them: what a plan file and the command line
/// may say.
#[derive(Debug, Default)]
pub struct Catalogue {
    /// Each suite's name and its settings, in the registry's order.
    pub suites: Vec<(&'static str, &'static [&'static Setting])>,
}

impl Catalogue {
    /// The settings `section` may hold: every suite's in `[suite]`, a suite's own in its
    /// section (`[load]`); `None` when no suite is named so.
    pub fn in_section(&self, section: &str) -> Option<Vec<&'static Setting>> {
        let mut all: Vec<&'static Setting> = Vec::new();
        for (name, settings) in &self.suites {
            if section == "suite" || section == *name {
                for s in settings.iter() {
                    if !all.iter().any(|a| a.key == s.key) {
                        all.push(s);
                    }
                }
            }
        }
        (section == "suite" || self.suites.iter().any(|(n, _)| *n == section)).then_some(all)
    }

    /// Each key once, with every suite's description of it, in the registry's order: what the
    /// command line offers.
    pub fn by_key(&self) -> Vec<Vec<&'static Setting>> {
        let mut out: Vec<Vec<&'static Setting>> = Vec::new();
        for s in self.suites.iter().flat_map(|(_, s)| s.iter()) {
            match out.iter_mut().find(|d| d[0].key == s.key) {
                Some(d) if d.iter().any(|x| std::ptr::eq(*x, *s)) => {}
                Some(d) => d.push(s),
                None => out.push(vec![s]),
            }
        }
        out
    }

    /// The suites' names, for messages.
    pub fn names(&self) -> Vec<&'static str> {
        self.suites.iter().map(|(n, _)| *n).collect()
    }

    /// A key no suite reads in `section`: the message, with the keys it may hold.
    pub fn unknown(&self, at: Origin, key: &str, section: &str, more: &[&str]) -> PlanError {
        let mut known: Vec<&str> = more.to_vec();
        for s in self.in_section(section).unwrap_or_default() {
            if !known.contains(&s.key) {
                known.push(s.key);
            }
        }
        PlanError::new(
            at,
            format!(
                "unknown key `{key}` in [{section}]; {}known keys: {}",
                did_you_mean(key, known.iter().copied()),
                known.join(", ")
            ),
        )
    }
}

/// Settings more than one suite reads.
pub mod shared {
    use super::{Kind, Setting};

    pub static OBJECTS: Setting = Setting {
        key: "objects",
        short: Some('n'),
        aliases: &[],
        kind: Kind::Int,
        value_name: "",
        help: "Objects per client per test (zodbshootout's -n); the record count for kv and ycsb, \
               the keys for append (10 there) [default: 1000; 100 with --quick].",
        heading: None,
    };
    pub static CLIENTS: Setting = Setting {
        key: "concurrency",
        short: Some('c'),
        aliases: &["connections", "clients"],
        kind: Kind::Int,
        value_name: "",
        help: "Concurrent clients (zodbshootout's -c); connections for the load suite \
               [default: 2 for shootout and magma; 10 for load and namespace; 1 for kv, ycsb \
               and sql, as YCSB's and pgbench's; 4 for append].",
        heading: None,
    };
    pub static SIZE: Setting = Setting {
        key: "size",
        short: Some('s'),
        aliases: &[],
        kind: Kind::Int,
        value_name: "",
        help: "Bytes per object [default: 300].",
        heading: None,
    };
    pub static THREADS: Setting = Setting {
        key: "threads",
        short: Some('j'),
        aliases: &[],
        kind: Kind::Int,
        value_name: "",
        help: "Generator threads: the load's event loops, or the threads that carry a store \
               suite's clients (many per thread on network drivers) [default: the cores dyno may \
               use, at most one per connection or client].",
        heading: None,
    };
    pub static INTERVAL: Setting = Setting {
        key: "interval",
        short: None,
        aliases: &[],
        kind: Kind::Text,
        value_name: "",
        help: "The time series' interval, 10ms to 1h: a load's, and the sql suite's (pgbench's \
               -P and --aggregate-interval) [default: 1s].",
        heading: None,
    };
    pub static HLOG: Setting = Setting {
        key: "hlog",
        short: None,
        aliases: &[],
        kind: Kind::Text,
        value_name: "FILE",
        help: "Write an HdrHistogram interval log (.hlog) here, an --interval's latencies a \
               line: a load's responses, the sql suite's transactions that succeeded [default: \
               none, but a run whose repetitions last a minute or more, or a shard's, writes \
               latency.hlog in its folder].",
        heading: None,
    };
    pub static IO: Setting = Setting {
        key: "io",
        short: None,
        aliases: &[],
        kind: Kind::Text,
        value_name: "auto|uring|epoll",
        help: "The generator threads' I/O: `uring` (io_uring: a loop turn's sends and its wait in \
               one system call), `epoll`, or `auto` [default]: for the load suite's connections \
               io_uring where the kernel allows it, epoll otherwise; for the other suites' \
               clients epoll, which measured cheaper for them. The record says which ran and \
               why.",
        heading: None,
    };
    pub static NAP: Setting = Setting {
        key: "nap",
        short: None,
        aliases: &[],
        kind: Kind::Text,
        value_name: "DURATION",
        help: "How long a generator thread on epoll sleeps, when none of its clients is ready \
               and no reply is in, before it waits for one, up to 1ms (e.g. 50us): never past a \
               deadline, and only while replies come within the nap. Replies that come \
               meanwhile wake no one and are taken when the nap ends, up to that late: fewer \
               wake-ups of the generator, which on loopback the server's core pays for (on a VM \
               an interrupt through the hypervisor each) [default: 0, it waits at once].",
        heading: None,
    };
    pub static TOPOLOGY: Setting = Setting {
        key: "topology",
        short: None,
        aliases: &[],
        kind: Kind::Text,
        value_name: "",
        help: "Run each target in these topologies (a column each): inproc, loopback, lan, wan. \
               With no target: dyno's own host (`host:`), e.g. --topology inproc,loopback,lan,wan.",
        heading: None,
    };
}
