//! The ycsb suite's settings: each described once (its flag, its plan-file key, its help).

use engine::plan::setting::shared;
use engine::plan::{Kind, Setting};

const HEADING: Option<&str> = Some("YCSB suite");

pub static OPERATIONS: Setting = Setting {
    key: "operations",
    short: None,
    aliases: &[],
    kind: Kind::Int,
    value_name: "",
    help: "YCSB: operations per workload (YCSB's operationcount) [default: 1000, as its workload \
           files; 200 with --quick]. -n is the record count.",
    heading: HEADING,
};

pub static ZIPF: Setting = Setting {
    key: "zipf",
    short: None,
    aliases: &[],
    kind: Kind::Text,
    value_name: "",
    help: "YCSB: how the zipfian workloads draw keys: ycsb (YCSB's scrambled zipfian, its quirks \
           included) or exact:THETA (a true Zipf over the records, e.g. exact:0.99) [default: ycsb].",
    heading: HEADING,
};

pub static RATE: Setting = Setting {
    key: "rate",
    short: Some('R'),
    aliases: &[],
    kind: Kind::Number,
    value_name: "",
    help: "YCSB: operations/s in all (YCSB's -target), latency from each operation's intended \
           start.",
    heading: HEADING,
};

/// What the suite reads.
pub static SETTINGS: &[&Setting] = &[
    &shared::OBJECTS,
    &shared::CLIENTS,
    &shared::THREADS,
    &shared::IO,
    &shared::NAP,
    &OPERATIONS,
    &ZIPF,
    &RATE,
];
