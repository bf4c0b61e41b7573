//! The keys of a plan file that are not a suite's settings, each once with what it means. The
//! parser's "unknown key" messages list them from here, and the book's reference page is made
//! from the same lists (a suite's settings are described by [`super::Setting`]).

/// One key of a plan-file section.
#[derive(Debug)]
pub struct Key {
    pub name: &'static str,
    pub help: &'static str,
}

/// A section of a plan file and the keys it may hold.
#[derive(Debug)]
pub struct Section {
    /// Where it is written: `[output]`, `[[faults]]`.
    pub title: &'static str,
    /// What it is for.
    pub about: &'static str,
    pub keys: &'static [Key],
}

impl Section {
    /// Its keys' names, for messages.
    pub fn names(&self) -> Vec<&'static str> {
        self.keys.iter().map(|k| k.name).collect()
    }
}

const fn k(name: &'static str, help: &'static str) -> Key {
    Key { name, help }
}

pub const TOP: Section = Section {
    title: "the top level",
    about: "The sections of a plan file; a suite's own section (`[load]`, `[ycsb]`…) holds that suite's settings.",
    keys: &[
        k(
            "suite",
            "the run's settings (the keys below) and every suite's settings",
        ),
        k("output", "where the run is written, and in which format"),
        k(
            "targets",
            "the targets, one table each (`[targets.NAME]`), a column each in file order",
        ),
        k(
            "faults",
            "faults done to the targets' processes during the run (`[[faults]]`)",
        ),
        k("thresholds", "pass/fail criteria checked when the run ends"),
        k(
            "check",
            "whether the target's answers were right: the history kept and checked (`--check`)",
        ),
    ],
};

pub const RUN: Section = Section {
    title: "[suite]",
    about: "The run's own keys; every suite's settings may stand here too (see the settings table).",
    keys: &[
        k(
            "name",
            "the suite to run, or several YCSB workloads (`ycsb-a,ycsb-c`) (`--suite`)",
        ),
        k("reps", "measured repetitions (`-r`)"),
        k(
            "warmup",
            "run one unmeasured warm-up repetition first: true or false (`--warmup`, `--no-warmup`)",
        ),
        k(
            "seed",
            "seed of the object contents and of every random draw (`--seed`)",
        ),
        k(
            "sweep",
            "a parameter to sweep, `\"depth=1..30\"`, or an array of them (`--sweep`)",
        ),
        k("samples", "samples per sweep point (`--samples`)"),
        k(
            "levels",
            "the disturbance levels each target runs at: an array of level names",
        ),
        k(
            "level_every",
            "how often a level's disturbance recurs [default: 60s]",
        ),
    ],
};

pub const OUTPUT: Section = Section {
    title: "[output]",
    about: "Where the run goes.",
    keys: &[
        k(
            "dir",
            "the results directory (`-o`) [default: ./dyno-results/<UTC time>/]",
        ),
        k("format", "the output format (`-f`)"),
    ],
};

pub const TARGET: Section = Section {
    title: "[targets.NAME]",
    about: "One target; every key not listed here is an option of its driver (see the targets reference).",
    keys: &[
        k("url", "the target's URL (required)"),
        k(
            "process",
            "the target's process: started by dyno, or watched (`[targets.NAME.process]`)",
        ),
        k(
            "requests",
            "a mix of named, weighted requests sent instead of the URL's one (`[[targets.NAME.requests]]`)",
        ),
    ],
};

pub const REQUEST: Section = Section {
    title: "[[targets.NAME.requests]]",
    about: "One request of a target's mix (http://, https://, h2c://; grpc:// takes name, weight, path as its method, body as its JSON, headers as its metadata), picked by weight at each request's start and measured under its name; a key left out is the target's.",
    keys: &[
        k(
            "name",
            "its name in the table and the record [default: `METHOD PATH`]",
        ),
        k(
            "weight",
            "its share: its weight over the sum of the weights, 0 to 1000000 [default: 1]",
        ),
        k("method", "its method [default: the target's]"),
        k("path", "its path and query [default: the URL's]"),
        k(
            "headers",
            "its headers, `Name: value` each (a string of lines, or an array), sent after the target's",
        ),
        k("body", "its body [default: the target's]"),
        k(
            "body_file",
            "read its body from this file [default: the target's body]",
        ),
        k(
            "checks",
            "conditions its responses must meet, each counted (a string of lines, or an array), made after the target's",
        ),
        k(
            "checks_fail",
            "a response failing a check fails the request: true or false [default: the target's]",
        ),
        k(
            "capture",
            "values its responses give the client's next requests, `NAME = json /POINTER`, `NAME = header NAME` or `NAME = regex PATTERN` (a string of lines, or an array)",
        ),
    ],
};

pub const PROCESS: Section = Section {
    title: "[targets.NAME.process]",
    about: "A process dyno starts (and stops after the run) or watches; or a cluster of members.",
    keys: &[
        k(
            "cmd",
            "the command dyno starts, run as `sh -c \"exec CMD\"` in its own process group",
        ),
        k(
            "ready",
            "with cmd (required): ready when `tcp:HOST:PORT` accepts a connection",
        ),
        k(
            "ready_timeout",
            "how long dyno waits for ready [default: 30s]",
        ),
        k("pid", "watch this running process instead of starting one"),
        k(
            "name",
            "watch every process of this name instead of starting one",
        ),
        k(
            "members",
            "a cluster dyno starts member by member (`[[targets.NAME.process.members]]`)",
        ),
        k(
            "role",
            "a command whose output names the primary's port, for `member = \"primary\"` faults",
        ),
        k(
            "link",
            "put dyno's link emulator in front of each member, for `partition` and `slow`: true or false",
        ),
    ],
};

pub const MEMBER: Section = Section {
    title: "[[targets.NAME.process.members]]",
    about: "One member of a cluster; `{port}`, `{peer}`, `{port.NAME}`, `{dir}` and `{file}` are filled in.",
    keys: &[
        k("name", "the member's name (required)"),
        k("cmd", "the command that starts it (required)"),
        k(
            "ready",
            "when it is ready [default: `tcp:127.0.0.1:{port}`]",
        ),
        k(
            "file",
            "a file written before it starts, its path `{file}` (a configuration)",
        ),
        k(
            "aux",
            "a helper of the cluster (a sentinel): watched, never a fault's target: true or false",
        ),
    ],
};

pub const THRESHOLDS: Section = Section {
    title: "[thresholds]",
    about: "Pass/fail criteria; a broken one exits with status 4.",
    keys: &[
        k(
            "checks",
            "the criteria, `METRIC OP VALUE [target=] [test=] [level=]` each (`--threshold`)",
        ),
        k(
            "baseline",
            "the run that `baseline` in a check refers to (`--compare`)",
        ),
        k(
            "abort_on_fail",
            "check load cases' running intervals too and stop at the first broken (`--abort-on-fail`)",
        ),
        k(
            "abort_after",
            "with abort_on_fail: from how far into each repetition [default: 2s]",
        ),
    ],
};

pub const CHECK: Section = Section {
    title: "[check]",
    about: "Keep the history of every operation the suite makes and check it when each target's run ends.",
    keys: &[
        k(
            "model",
            "what the answers must be: `linearizable` (each key a register; kv and ycsb) (`--check`)",
        ),
        k(
            "budget",
            "the most time the check spends on one key before it says unknown [default: 10s]",
        ),
    ],
};

pub const STAGE: Section = Section {
    title: "stages = [{ … }]",
    about: "One stage of a load's rate schedule, in `[load]`.",
    keys: &[
        k("rate", "requests/s, or a ramp `\"1000..20000\"`"),
        k("duration", "how long the stage lasts"),
    ],
};

pub const FAULT: Section = Section {
    title: "[[faults]]",
    about: "One fault (`--fault \"ACTION KEY=VALUE…\"` on the command line, the same words).",
    keys: &[
        k(
            "action",
            "kill, restart, pause, partition, slow or restart-clients",
        ),
        k(
            "target",
            "the target whose process it acts on (optional when there is one)",
        ),
        k(
            "member",
            "a cluster's member: its name, `any`, `one-replica` or `primary`",
        ),
        k("every", "repeat at this interval"),
        k("at", "at these times on the run's clock"),
        k("stagger", "each member in turn, this far apart"),
        k(
            "after",
            "kill: how long until the process is started again [default: 1s]",
        ),
        k("for", "pause, partition, slow: how long [default: 1s]"),
        k(
            "clients",
            "partition: `cut` dyno's clients off the member too, or let them `pass` [default: cut]",
        ),
        k(
            "healthy",
            "at least this long between one fault's end and the next",
        ),
        k("delay", "slow: one-way delay added"),
        k("jitter", "slow: the delay varies within ± this"),
        k("rate", "slow: bandwidth cap per direction"),
    ],
};

/// Every section, in the order the reference shows them.
pub const SECTIONS: [&Section; 11] = [
    &TOP,
    &RUN,
    &OUTPUT,
    &TARGET,
    &REQUEST,
    &PROCESS,
    &MEMBER,
    &THRESHOLDS,
    &CHECK,
    &STAGE,
    &FAULT,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Catalogue, Kind, RawFault, RawPlan, Setting};

    /// A plan file holding `key` in `section` (with a value of some type), or `None` for the
    /// sections not written as TOML tables here.
    fn plan_with(section: &Section, key: &str) -> Option<String> {
        let t = "[targets.a]\nurl = \"mem:\"\n";
        Some(match section.title {
            "the top level" => format!("[{key}]\n{t}"),
            "[suite]" | "[output]" | "[thresholds]" | "[check]" => {
                format!("{}\n{key} = \"x\"\n{t}", section.title)
            }
            "[targets.NAME]" => format!("[targets.a]\n{key} = \"x\"\n"),
            "[targets.NAME.process]" => format!("{t}[targets.a.process]\n{key} = \"x\"\n"),
            "[[targets.NAME.process.members]]" => {
                format!("{t}[[targets.a.process.members]]\n{key} = \"x\"\n")
            }
            "[[targets.NAME.requests]]" => {
                format!("{t}[[targets.a.requests]]\n{key} = \"x\"\n")
            }
            "stages = [{ … }]" => format!("[load]\nstages = [{{ {key} = \"x\" }}]\n{t}"),
            _ => return None,
        })
    }

    #[test]
    fn every_listed_key_is_one_the_parser_reads() {
        let mut checked = 0;
        for section in SECTIONS {
            for key in section.keys {
                let err = match plan_with(section, key.name) {
                    Some(text) => {
                        static STAGES: Setting = Setting {
                            key: "stages",
                            short: None,
                            aliases: &[],
                            kind: Kind::Stages,
                            value_name: "",
                            help: "",
                            heading: None,
                        };
                        static LOAD: [&Setting; 1] = [&STAGES];
                        let settings = Catalogue {
                            suites: vec![("load", &LOAD)],
                        };
                        let plan = RawPlan::from_toml("p.toml".as_ref(), &text, &settings);
                        plan.err().map(|e| e.to_string())
                    }
                    None => RawFault::from_flag(&format!("kill {}=1s", key.name))
                        .and_then(|f| f.resolve(&["a"]))
                        .err()
                        .map(|e| e.to_string()),
                };
                let err = err.unwrap_or_default();
                assert!(
                    !err.contains("unknown"),
                    "{} {}: {err}",
                    section.title,
                    key.name
                );
                checked += 1;
            }
        }
        assert_eq!(
            checked,
            SECTIONS.iter().map(|s| s.keys.len()).sum::<usize>()
        );
        // The check can fail: a key the parser does not read is reported.
        let text = plan_with(&OUTPUT, "colour").unwrap();
        let settings = Catalogue::default();
        let err = RawPlan::from_toml("p.toml".as_ref(), &text, &settings).unwrap_err();
        assert!(err.to_string().contains("unknown key `colour`"), "{err}");
    }
}
