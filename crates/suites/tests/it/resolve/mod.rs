//! The plan's tests: reading, resolving, and every error's words and place.

use engine::driver::*;
use engine::plan::*;
use engine::resolve::*;
use engine::schedule::ArrivalKind;
use engine::suite::*;
use engine::worker::Stop;
use std::collections::BTreeMap;
use std::path::Path;
use std::path::PathBuf;
use suites::load::plan::*;
use suites::load::{LoadModel, LoadParams};

struct FakeConfig(BTreeMap<String, String>, &'static [Family]);

impl TargetConfig for FakeConfig {
    fn families(&self) -> &'static [Family] {
        self.1
    }
    fn durability(&self) -> String {
        "fake".into()
    }
    fn options(&self) -> BTreeMap<String, String> {
        self.0.clone()
    }
    fn data_path(&self) -> Option<PathBuf> {
        None
    }
    fn open(&self) -> Result<Box<dyn Store>, DriverError> {
        Err(DriverError::new("fake targets do not open"))
    }
}

/// Five schemes: `mem` (no options), `sqlite` (option `synchronous` = normal | full), `http`
/// (request family), `fs` (kv and namespace families) and `sql` (kv, sql and lists families).
struct Fake;

impl Drivers for Fake {
    fn schemes(&self) -> Vec<&'static str> {
        vec!["mem", "sqlite", "http", "fs", "sql"]
    }
    fn default_urls(&self) -> Vec<&'static str> {
        vec!["mem:", "sqlite:"]
    }
    fn configure(
        &self,
        scheme: &str,
        _rest: &str,
        options: &BTreeMap<String, String>,
    ) -> Result<Box<dyn TargetConfig>, ConfigError> {
        for (k, v) in options {
            if scheme != "sqlite" || k != "synchronous" {
                return Err(ConfigError::option(k, "unknown option"));
            }
            if v != "normal" && v != "full" {
                return Err(ConfigError::option(k, format!("{v:?} is not allowed"))
                    .hint("choose normal or full"));
            }
        }
        let families: &'static [Family] = match scheme {
            "http" => &[Family::Request],
            "fs" => &[Family::Kv, Family::Namespace],
            "sql" => &[Family::Kv, Family::Sql, Family::Lists],
            _ => &[Family::Kv],
        };
        Ok(Box::new(FakeConfig(options.clone(), families)))
    }
}

fn parse(text: &str) -> Result<RawPlan, PlanError> {
    let suites = suites::suites(&suites::BUILT_IN);
    RawPlan::from_toml(
        Path::new("plan.toml"),
        text,
        &engine::suite::catalogue(&suites),
    )
}

fn resolve(text: &str) -> Result<Plan, PlanError> {
    parse(text)?.resolve(&suites::suites(&suites::BUILT_IN), &Fake)
}

fn err(text: &str) -> String {
    resolve(text).unwrap_err().to_string()
}

#[test]
fn a_rate_sweep_is_an_open_loop_and_takes_its_settings() {
    let plan = |extra: &str| {
        format!(
            "[suite]\nsweep = \"rate=100,200\"\n[targets.w]\nurl = \"http://127.0.0.1:1/\"\n[load]\nduration = \"2s\"\n{extra}"
        )
    };
    let mut l = resolve(&plan("max_connections = 64\narrival = \"poisson\"\n"))
        .unwrap()
        .settings_of::<LoadParams>()
        .cloned()
        .unwrap();
    l.set_rate(200.0);
    let LoadModel::Open {
        profile,
        arrival,
        max_connections,
    } = &l.model
    else {
        panic!("a point of a rate sweep is an open loop")
    };
    assert_eq!(*max_connections, 64);
    assert_eq!(*arrival, ArrivalKind::Poisson);
    assert_eq!(profile.duration_ns(), 2_000_000_000);
    // Without a sweep, the settings of an open loop still need one.
    let e = err("[targets.w]\nurl = \"http://127.0.0.1:1/\"\n[load]\nmax_connections = 64\n");
    assert!(e.contains("applies to an open loop"), "{e}");
}

#[test]
fn bursts_ride_on_the_steady_rate_at_the_end_of_each_period() {
    let load = |extra: &str| {
        format!("[targets.w]\nurl = \"http://127.0.0.1:1/\"\n[load]\nduration = \"50s\"\n{extra}")
    };
    let p = resolve(&load("rate = 10\nburst = \"every=20s for=5s rate=100\"\n")).unwrap();
    let LoadModel::Open { profile, .. } = &p.settings_of::<LoadParams>().cloned().unwrap().model
    else {
        panic!("an open loop")
    };
    let got: Vec<(u64, f64)> = profile
        .stages
        .iter()
        .map(|s| (s.duration_ns / 1_000_000_000, s.to_per_s))
        .collect();
    // 50 s: two full periods (15 s light, 5 s burst) and 10 s of a third.
    assert_eq!(
        got,
        [(15, 10.0), (5, 100.0), (15, 10.0), (5, 100.0), (10, 10.0)]
    );
    assert_eq!(profile.duration_ns(), 50_000_000_000);

    let e = err(&load("burst = \"every=20s for=5s rate=100\"\n"));
    assert!(e.contains("steady open-loop rate"), "{e}");
    let e = err(&load("rate = 10\nburst = \"every=5s for=5s rate=100\"\n"));
    assert!(e.contains("shorter than its every="), "{e}");
    let e = err(&load("rate = 10\nburst = \"evry=20s for=5s rate=100\"\n"));
    assert!(e.contains("did you mean \"every\""), "{e}");
    let e = err(&load(
        "rate = 10\nburst = \"every=100ms for=5ms rate=100\"\n",
    ));
    assert!(e.contains("at most 200"), "{e}");
    let e = err("[targets.a]\nurl = \"mem:\"\n[load]\nburst = \"every=1s for=1ms rate=1\"\n");
    assert!(e.contains("burst is a setting of the load suite"), "{e}");
}

#[test]
fn sweeps_take_lists_and_ranges_and_are_checked_against_the_suite_and_bounds() {
    assert_eq!(parse_values("1..5").unwrap(), [1, 2, 3, 4, 5]);
    assert_eq!(
        parse_values("100..1000:300").unwrap(),
        [100, 400, 700, 1000]
    );
    assert_eq!(parse_values("1, 10,1_000").unwrap(), [1, 10, 1000]);
    assert!(parse_values("5..1").unwrap_err().0.contains("empty"));
    assert!(parse_values("1..5:0").unwrap_err().0.contains("step"));
    assert!(
        parse_values("0..5000")
            .unwrap_err()
            .0
            .contains("1000 points")
    );
    assert!(
        parse_values("a,b")
            .unwrap_err()
            .0
            .contains("not a whole number")
    );

    let ns = "[suite]\nname = \"namespace\"\n";
    let fs = "[targets.f]\nurl = \"fs:\"\n";
    let p = resolve(&format!(
        "{ns}sweep = [\"depth=1..30\", \"width=1,10,100,1000\"]\nsamples = 5\n{fs}"
    ))
    .unwrap();
    assert_eq!(p.reps, 5, "samples are the repetitions");
    assert_eq!(p.sweeps[0].param, "depth");
    assert_eq!(p.sweeps[0].values.len(), 30);
    assert_eq!(p.sweeps[1].values, [1, 10, 100, 1000]);
    assert_eq!(
        p.settings_of::<suites::namespace::Params>().copied(),
        Some(suites::namespace::Params {
            depth: 10,
            width: 100,
            clients: 10,
            generators: engine::fiber::Generators::from(1)
        })
    );
    let e = err(&format!("{ns}sweep = \"dept=1..3\"\n{fs}"));
    assert!(
        e.starts_with("plan.toml:3:9: the namespace suite has no parameter \"dept\" to sweep; did you mean \"depth\"?"),
        "{e}"
    );
    assert!(
        e.contains("hint: write PARAM=LIST or PARAM=A..B[:STEP]"),
        "{e}"
    );
    let e = err(&format!("{ns}sweep = \"depth=0..3\"\n{fs}"));
    assert!(e.contains("0 is outside 1..=200"), "{e}");
    let e = err(&format!("{ns}sweep = [\"depth=1\", \"depth=2\"]\n{fs}"));
    assert!(e.contains("depth is swept twice"), "{e}");
    let e = err(&format!("{ns}reps = 2\nsamples = 3\n{fs}"));
    assert!(e.contains("reps and samples are the same setting"), "{e}");
    let e = err(&format!("{ns}objects = 3\n{fs}"));
    assert!(
        e.contains("objects is a setting of the shootout suite"),
        "{e}"
    );
    let e = err("[suite]\ndepth = 3\n");
    assert!(e.contains("add --suite namespace"), "{e}");
    let e = err(&format!("{ns}[targets.m]\nurl = \"mem:\"\n"));
    assert!(
        e.contains("the namespace suite needs namespace targets"),
        "{e}"
    );
    let e = err("[suite]\nsweep = \"depth=1..3\"\n");
    assert!(
        e.contains("the shootout suite has no parameter \"depth\""),
        "{e}"
    );
    let p = resolve("[suite]\nsweep = [\"concurrency=1,2\", \"size=100,200\"]\n").unwrap();
    assert_eq!(
        p.sweeps[0].param, "clients",
        "concurrency is swept as clients"
    );
}

#[test]
fn an_empty_plan_gets_zodbshootouts_defaults_and_the_default_targets() {
    let p = resolve("").unwrap();
    assert_eq!(p.suite.name(), "shootout");
    assert_eq!(
        (p.objects, p.clients, p.size, p.reps, p.warmup, p.seed),
        (1000, 2, 300, 5, true, 1)
    );
    let names: Vec<&str> = p.targets.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["mem", "sqlite"]);
    assert_eq!(p.source, "plan.toml");
    assert!(p.format.is_none() && p.out.is_none());
}

#[test]
fn quick_lowers_defaults_but_not_explicit_values() {
    let mut raw = parse("[suite]\nreps = 2\n").unwrap();
    raw.quick = true;
    let p = raw
        .resolve(&suites::suites(&suites::BUILT_IN), &Fake)
        .unwrap();
    assert_eq!((p.objects, p.reps), (QUICK_OBJECTS, 2));
}

#[test]
fn a_full_plan_keeps_target_order_names_and_options() {
    let p = resolve(
        r#"
[suite]
name = "shootout"
objects = 50
concurrency = 4
size = 1024
reps = 5
warmup = false
seed = 7

[output]
dir = "out"
format = "csv"

[targets.zeta]
url = "sqlite:/tmp/z.db"
synchronous = "full"

[targets.alpha]
url = "mem:"
"#,
    )
    .unwrap();
    assert_eq!(
        (p.objects, p.clients, p.size, p.reps, p.warmup, p.seed),
        (50, 4, 1024, 5, false, 7)
    );
    let names: Vec<&str> = p.targets.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["zeta", "alpha"], "columns keep the file's order");
    assert_eq!(p.targets[0].config.options()["synchronous"], "full");
    assert_eq!(p.out, Some(PathBuf::from("out")));
    assert_eq!(p.format.as_ref().map(|f| f.value.as_str()), Some("csv"));
    let rec = p.record();
    assert_eq!(rec.targets[0].url, "sqlite:/tmp/z.db");
    assert_eq!(rec.size_bytes, 1024);
}

#[test]
fn url_query_options_reach_the_driver() {
    let mut raw = RawPlan::default();
    raw.targets.push(RawTarget {
        name: None,
        url: Sp::new("sqlite:/x.db?synchronous=full".into(), Origin::Arg(1)),
        options: vec![],
        process: None,
        requests: Vec::new(),
    });
    raw.targets.push(RawTarget {
        name: None,
        url: Sp::new("sqlite:/y.db".into(), Origin::Arg(2)),
        options: vec![],
        process: None,
        requests: Vec::new(),
    });
    let p = raw
        .resolve(&suites::suites(&suites::BUILT_IN), &Fake)
        .unwrap();
    assert_eq!(p.targets[0].config.options()["synchronous"], "full");
    assert_eq!(
        p.targets[1].name, "sqlite-2",
        "same scheme twice gets a suffix"
    );
    assert_eq!(p.source, "command line");
}

#[test]
fn invalid_toml_names_line_and_column() {
    let e = err("[suite]\nobjects = = 3\n");
    assert!(e.starts_with("plan.toml:2:11: invalid TOML:"), "{e}");
    assert!(e.contains("hint: see the book's \"Plan files\""), "{e}");
}

#[test]
fn unknown_keys_are_named_with_a_suggestion() {
    assert_eq!(
        err("[suite]\nobjets = 3\n"),
        "plan.toml:2:1: unknown key `objets` in [suite]; did you mean \"objects\"? known keys: \
         name, reps, warmup, seed, sweep, samples, levels, level_every, objects, size, concurrency, \
         threads, io, nap, topology, thousands, test_time, duration, requests, rate, ramp, stages, arrival, \
         max_connections, timeout, interval, hlog, burst, coalesce, max_lag, depth, width, \
         operations, zipf, builtin, script, define, scale, transactions, latency_limit, max_tries, connect, query_mode, fillfactor, partitions, partition_method, unlogged_tables, foreign_keys, vacuum, vacuum_all, tables, table_size, range_size, point_selects, simple_ranges, sum_ranges, order_ranges, distinct_ranges, index_updates, non_index_updates, delete_inserts, range_selects, skip_trx, auto_inc, secondary, create_secondary, rand_type, rand_spec_iter, rand_spec_pct, rand_spec_res, rand_pareto_h, rand_zipfian_exp, isolation, writes_per_key"
    );
    assert_eq!(
        err("[sute]\n"),
        "plan.toml:1:2: unknown key `sute` in the plan's top level; did you mean \"suite\"? \
         known keys: suite, output, targets, faults, thresholds, check, shootout, magma, load, \
         namespace, kv, ycsb, sql, append"
    );
    assert_eq!(
        err("[output]\nfmt = \"csv\"\n"),
        "plan.toml:2:1: unknown key `fmt` in [output]; known keys: dir, format"
    );
}

#[test]
fn wrong_types_say_what_to_write() {
    assert_eq!(
        err("[suite]\nobjects = \"10\"\n"),
        "plan.toml:2:11: `objects` must be an integer, not a string\n  hint: write e.g. \
         objects = 1000 (no quotes)"
    );
    assert_eq!(
        err("[suite]\nwarmup = 1\n"),
        "plan.toml:2:10: `warmup` must be a boolean, not an integer\n  hint: write warmup = \
         true or warmup = false"
    );
    assert_eq!(
        err("suite = 3\n"),
        "plan.toml:1:9: `suite` must be a table, not an integer\n  hint: write it as a [suite] section"
    );
}

#[test]
fn out_of_range_values_give_the_bound_and_the_default() {
    assert_eq!(
        err("[suite]\nobjects = 0\n"),
        "plan.toml:2:11: objects must be at least 1, got 0\n  hint: the default is 1000"
    );
    assert_eq!(
        err("[suite]\nconcurrency = 5000\n"),
        "plan.toml:2:15: concurrency must be at most 1024, got 5000\n  hint: each client is \
         an OS thread; the default is 2"
    );
    assert!(err("[suite]\nsize = 8\n").starts_with("plan.toml:2:8: size must be at least 16"));
    assert!(err("[suite]\nreps = 0\n").starts_with("plan.toml:2:8: reps must be at least 1"));
    assert_eq!(
        err("[suite]\nseed = -1\n"),
        "plan.toml:2:8: seed must not be negative\n  hint: use any integer from 0 to 2^63-1"
    );
    let e = err("[suite]\nobjects = 1000000\nconcurrency = 100\n");
    assert!(
        e.starts_with("plan.toml:2:11: objects × concurrency × size"),
        "{e}"
    );
    assert!(e.contains("hint: lower one of"), "{e}");
    assert_eq!(
        err("[output]\ndir = \" \"\n"),
        "plan.toml:2:7: output directory is empty\n  hint: name a directory, or leave it out \
         for ./dyno-results/<time>/"
    );
}

#[test]
fn unknown_suite_and_scheme_get_suggestions() {
    assert_eq!(
        err("[suite]\nname = \"shootot\"\n"),
        "plan.toml:2:8: unknown suite \"shootot\"; did you mean \"shootout\"? suites: shootout, magma, load, namespace, kv, ycsb, sql, append"
    );
    let e = err("[targets.a]\nurl = \"sqlit:/tmp/a.db\"\n");
    assert!(
        e.starts_with(
            "plan.toml:2:7: unknown target scheme \"sqlit\"; did you mean \"sqlite\"? schemes: mem, sqlite, http"
        ),
        "{e}"
    );
    let e = err("[targets.a]\nurl = \"/tmp/a.db\"\n");
    assert!(
        e.starts_with("plan.toml:2:7: \"/tmp/a.db\" is not a target URL"),
        "{e}"
    );
}

#[test]
fn target_problems_point_at_the_target_or_the_option() {
    assert_eq!(
        err("[targets.a]\nsynchronous = \"full\"\n"),
        "plan.toml:1:10: target `a` has no url\n  hint: add e.g. url = \"sqlite:/tmp/dyno.db\" to it"
    );
    assert_eq!(
        err("[targets.a]\nurl = \"sqlite:/a.db\"\nsynchronous = \"fast\"\n"),
        "plan.toml:3:15: sqlite: option synchronous: \"fast\" is not allowed\n  hint: choose normal or full"
    );
    assert_eq!(
        err("[targets.a]\nurl = \"sqlite:/a.db?synchronous=full\"\nsynchronous = \"full\"\n"),
        "plan.toml:3:1: option \"synchronous\" is set both here and in the URL\n  hint: keep one of the two"
    );
    assert_eq!(
        err("[targets.\"a b\"]\nurl = \"mem:\"\n"),
        "plan.toml:1:10: target name \"a b\" is not allowed\n  hint: use up to 64 letters, \
         digits, '_', '-' or '.'"
    );
    // An array is lines (headers, checks): of strings only.
    assert_eq!(
        err("[targets.a]\nurl = \"mem:\"\nsize = [1]\n"),
        "plan.toml:3:9: `size` must be a string, not an integer\n  hint: write e.g. size = \"…\" (in quotes)"
    );
    assert_eq!(
        err("[targets.a]\nurl = \"mem:\"\nsize = { a = 1 }\n"),
        "plan.toml:3:8: target option `size` must be a string, number, boolean or array of lines, not a table"
    );
}

#[test]
fn flags_are_named_as_flags() {
    let mut raw = RawPlan::default();
    let at = Origin::Flag("--objects");
    (raw.settings).set("objects", Sp::new(engine::plan::Value::Int(-5), at));
    assert_eq!(
        raw.resolve(&suites::suites(&suites::BUILT_IN), &Fake)
            .unwrap_err()
            .to_string(),
        "--objects: objects must be at least 1, got -5\n  hint: the default is 1000"
    );
}

#[test]
fn a_load_plan_with_stages_becomes_an_open_loop_profile() {
    let p = resolve(
        "[load]\nstages = [{ rate = 1000, duration = \"2s\" }, { rate = \"1000..3000\", duration = \"1s\" }]\narrival = \"poisson\"\n[targets.api]\nurl = \"http://h/\"\n",
    )
    .unwrap();
    assert_eq!(
        p.suite.name(),
        "load",
        "request targets choose the load suite"
    );
    assert!(!p.warmup, "load has no warm-up unless asked");
    assert_eq!(
        (p.clients, p.reps),
        (10, 5),
        "wrk's 10 s as 5 repetitions of 2 s"
    );
    let l = p.settings_of::<LoadParams>().unwrap();
    let LoadModel::Open {
        profile,
        arrival,
        max_connections,
    } = &l.model
    else {
        panic!()
    };
    assert_eq!(*arrival, ArrivalKind::Poisson);
    assert_eq!(*max_connections, 10);
    assert_eq!(profile.stages.len(), 2);
    assert_eq!(profile.expected_count(), 2000.0 + 2000.0);
    let rec = p.record().load.unwrap();
    assert_eq!((rec.model.as_str(), rec.stages.len()), ("open", 2));
}

#[test]
fn a_ramp_then_holds_the_top_rate_for_the_rest_of_the_duration() {
    let p = resolve(
        "[load]\nrate = \"1000..3000\"\nramp = \"1s\"\nduration = \"3s\"\n[targets.api]\nurl = \"http://h/\"\n",
    )
    .unwrap();
    let LoadModel::Open { profile, .. } = &p.settings_of::<LoadParams>().cloned().unwrap().model
    else {
        panic!()
    };
    assert_eq!(profile.duration_ns(), 3_000_000_000);
    assert_eq!(profile.rate_at(500_000_000), Some(2000.0));
    assert_eq!(profile.rate_at(2_000_000_000), Some(3000.0));
}

#[test]
fn closed_loop_defaults_and_gobench_counts() {
    let p = resolve("[targets.api]\nurl = \"http://h/\"\n").unwrap();
    let l = p.settings_of::<LoadParams>().cloned().unwrap();
    assert!(matches!(
        l.model,
        LoadModel::Closed {
            stop: Stop::Duration {
                ns: DEFAULT_DURATION_NS
            }
        }
    ));
    assert_eq!(l.timeout_ns, DEFAULT_TIMEOUT_NS);
    let p = resolve("[load]\nrequests = 50\n[targets.api]\nurl = \"http://h/\"\n").unwrap();
    assert!(matches!(
        p.settings_of::<LoadParams>().cloned().unwrap().model,
        LoadModel::Closed {
            stop: Stop::Count(50)
        }
    ));
}

#[test]
fn load_mistakes_are_named() {
    assert_eq!(
        err("[load]\nrat = 5\n[targets.api]\nurl = \"http://h/\"\n"),
        "plan.toml:2:1: unknown key `rat` in [load]; did you mean \"rate\"? known keys: objects, size, \
         concurrency, duration, requests, rate, ramp, stages, arrival, max_connections, threads, timeout, interval, hlog, burst, coalesce, max_lag, io"
    );
    assert_eq!(
        err("[load]\nstages = [{ rate = 5 }]\n[targets.api]\nurl = \"http://h/\"\n"),
        "plan.toml:2:11: a stage needs a rate and a duration\n  hint: write { rate = 1000, duration = \"30s\" }"
    );
    assert_eq!(
        err("[load]\nrate = 100\n"),
        "plan.toml:2:8: rate is a setting of the load suite, and this run is shootout\n  hint: load settings apply to http:// and tcp:// targets"
    );
    assert_eq!(
        err("[load]\ninterval = \"1ms\"\n[targets.api]\nurl = \"http://h/\"\n"),
        "plan.toml:2:12: interval must be between 10ms and 1h\n  hint: the time series keeps one histogram per interval"
    );
}

#[test]
fn topologies_expand_each_target_into_a_column_each() {
    let mut raw =
        parse("[suite]\ntopology = \"inproc, wan\"\n[targets.a]\nurl = \"mem:\"\n").unwrap();
    let expanded = expand_topologies(
        &raw.targets,
        &raw.settings
            .text(&engine::plan::setting::shared::TOPOLOGY)
            .unwrap(),
    )
    .unwrap();
    let names: Vec<&str> = expanded
        .iter()
        .map(|t| t.name.as_ref().unwrap().value.as_str())
        .collect();
    assert_eq!(names, ["a-inproc", "a-wan"]);
    assert_eq!(expanded[1].options.last().unwrap().1.value, "wan");
    raw.targets.clear();
    let expanded = expand_topologies(
        &raw.targets,
        &raw.settings
            .text(&engine::plan::setting::shared::TOPOLOGY)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(expanded[0].url.value, "host:", "no target: dyno's own host");
    assert_eq!(
        err("[suite]\ntopology = \",\"\n"),
        "plan.toml:2:12: no topology named\n  hint: write e.g. inproc,loopback,lan,wan"
    );
    assert_eq!(
        err("[suite]\ntopology = \"lan\"\n[targets.api]\nurl = \"http://h/\"\n"),
        "plan.toml:2:12: http: targets run where their address says; topologies apply to host: \
         (dyno's own host)\n  hint: drop --topology, or run host: (no target) in several topologies"
    );
}

#[test]
fn split_url_parts() {
    let u = split_url("sqlite:/tmp/a.db?synchronous=full&x").unwrap();
    assert_eq!(u.scheme, "sqlite");
    assert_eq!(u.rest, "/tmp/a.db");
    assert_eq!(u.query, [("synchronous", "full"), ("x", "true")]);
    assert!(split_url("/tmp/a").is_none());
    assert!(split_url(":x").is_none());
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    /// A plan that uses most of the reader: every section, spans, arrays of tables.
    const VALID: &str = "[suite]\nname = \"load\"\nreps = 2\nwarmup = false\n\n[load]\nduration = \"2s\"\nmax_connections = 16\narrival = \"poisson\"\nmax_lag = \"25%\"\nstages = [{ rate = \"10..20\", duration = \"1s\" }]\n\n[output]\nformat = \"csv\"\ndir = \"out\"\n\n[targets.web]\nurl = \"http://127.0.0.1:8080/x\"\n\n[targets.api]\nurl = \"http://[::1]:8081/y\"\n";

    /// Reads and resolves `text`: a plan or an error, never a panic; an error names its place.
    fn read(text: &str) {
        match parse(text).and_then(|raw| raw.resolve(&suites::suites(&suites::BUILT_IN), &Fake)) {
            Ok(_) => {}
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn any_text_is_a_plan_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
            read(&String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn mutated_plans_are_plans_or_errors(
            edits in prop::collection::vec((any::<usize>(), 0x20u8..0x7f), 1..6),
            cut in any::<usize>(),
        ) {
            let mut b = VALID.as_bytes().to_vec();
            for (at, v) in edits {
                let at = at % b.len();
                b[at] = v;
            }
            b.truncate(cut % (b.len() + 1) + b.len() / 2);
            read(&String::from_utf8_lossy(&b));
        }

        #[test]
        fn any_url_is_a_target_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..120)) {
            let url = String::from_utf8_lossy(&bytes).into_owned();
            let _ = split_url(&url);
            let raw = RawPlan {
                targets: vec![RawTarget {
                    name: None,
                    url: Sp::new(url, Origin::Arg(1)),
                    options: Vec::new(),
                    process: None,
                    requests: Vec::new(),
                }],
                ..RawPlan::default()
            };
            let _ = raw.resolve(&suites::suites(&suites::BUILT_IN), &Fake);
        }
    }

    #[test]
    fn the_fuzzed_plan_is_itself_valid() {
        parse(VALID)
            .unwrap()
            .resolve(&suites::suites(&suites::BUILT_IN), &Fake)
            .unwrap();
    }
}

mod append;
mod links;
mod nap;
mod sql;

/// `-c`'s help says each suite's own default, as the suite has it.
#[test]
fn the_clients_help_says_each_suites_default() {
    let help = engine::plan::setting::shared::CLIENTS.help;
    let list = help
        .split("[default: ")
        .nth(1)
        .unwrap()
        .trim_end_matches("].");
    let mut said = BTreeMap::new();
    for group in list.split("; ") {
        let (n, names) = group.split_once(" for ").unwrap();
        let names = names.split(", as ").next().unwrap();
        for name in names
            .split([',', ' '])
            .filter(|w| !w.is_empty() && *w != "and")
        {
            said.insert(name.to_string(), n.parse::<u32>().unwrap());
        }
    }
    for s in suites::suites(&suites::BUILT_IN) {
        assert_eq!(
            said.get(s.name()),
            Some(&s.clients().default),
            "{}: {help}",
            s.name()
        );
    }
    assert_eq!(said.len(), suites::BUILT_IN.len(), "{said:?}");
}
