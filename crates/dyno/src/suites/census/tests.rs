//! The census end to end through dyno's commands, in this process (the binary's registry has
//! no census): `run`, `validate` (with `--shard`), `run --shard` twice and `merge`, `report`.

use crate::cli::Cli;
use clap::Parser;
use std::path::Path;
use std::process::ExitCode;

/// `dyno ARGS…`, its exit status or its error's message.
fn dyno(args: &[&str]) -> Result<ExitCode, String> {
    let cli = Cli::try_parse_from(["dyno"].iter().chain(args)).map_err(|e| e.to_string())?;
    crate::cmd::run(cli).map_err(|e| format!("{e:#}"))
}

/// The figures of the last repetition of `record`'s census on `target`.
fn census_of(record: &results::RunRecord, target: &str) -> super::Figures {
    let case = (record.cases.iter()).find(|c| c.target == target).unwrap();
    assert_eq!(case.test, "count");
    super::view::figures_of(case.reps.last().unwrap())
}

fn report(dir: &Path) -> String {
    let records = results::store::load(dir).unwrap();
    let mut text = Vec::new();
    report::render(report::Format::Table, &records, crate::suites::views(), &mut text).unwrap();
    String::from_utf8(text).unwrap()
}

#[test]
fn a_census_runs_from_its_flag_and_its_plan_section_and_its_shards_merge() {
    let dir = tempfile::tempdir().unwrap();
    let d = |p: &str| dir.path().join(p).display().to_string();
    let sqlite = format!("sqlite:{}", d("c.db"));

    // Its flag, in `dyno run --help` under its own heading.
    let mut cli = <Cli as clap::CommandFactory>::command();
    let help = cli.find_subcommand_mut("run").unwrap().render_help().to_string();
    assert!(help.contains("Census suite:") && help.contains("--headcount <HEADCOUNT>"), "{help}");

    // Its flag, its record section and detail, its table.
    let args = ["run", "--suite", "census", "--headcount", "120", "mem:", &sqlite];
    let code = dyno(&[&args[..], &["--reps", "2", "--quiet", "-o", &d("one")]].concat());
    assert_eq!(code, Ok(ExitCode::SUCCESS));
    let r = &results::store::load(Path::new(&d("one"))).unwrap()[0];
    assert_eq!(r.plan.custom["census"]["headcount"], 120);
    for target in ["mem", "sqlite"] {
        let want = super::Figures { written: 120, counted: 120, missing: 0 };
        assert_eq!(census_of(r, target), want);
    }
    let text = report(Path::new(&d("one")));
    assert!(text.starts_with("census of 120 keys\n"), "{text}");
    assert!(text.contains("sqlite"), "{text}");

    // Its plan-file section; its shard rule, checked by `dyno validate`.
    let plan = d("census.toml");
    std::fs::write(&plan, "[suite]\nname = \"census\"\n[census]\nheadcount = 3\n[targets.m]\nurl = \"mem:\"\n").unwrap();
    assert_eq!(dyno(&["validate", &plan]), Ok(ExitCode::SUCCESS));
    assert_eq!(dyno(&["validate", &plan, "--shard", "1/3"]), Ok(ExitCode::SUCCESS));
    let refused = dyno(&["validate", &plan, "--shard", "1/4"]).unwrap_err();
    assert!(refused.contains("give --headcount 4 at least"), "{refused}");
    std::fs::write(&plan, "[census]\nheadcount = \"many\"\n").unwrap();
    let refused = dyno(&["validate", &plan]).unwrap_err();
    assert!(refused.contains("census.toml:2:13: `headcount` must be an integer"), "{refused}");

    // Two shards, each counting its slice (50 and 51 of 101 keys), merged into one census.
    for shard in ["0/2", "1/2"] {
        let args = ["run", "--suite", "census", "--headcount", "101", "mem:", "--quiet"];
        let code = dyno(&[&args[..], &["--reps", "1", "--shard", shard, "-o", &d("shards")]].concat());
        assert_eq!(code, Ok(ExitCode::SUCCESS));
    }
    let half = &results::store::load(Path::new(&d("shards/shard-0"))).unwrap()[0];
    assert_eq!(census_of(half, "mem").written, 50);
    let code = dyno(&["merge", &d("shards"), "-o", &d("merged")]);
    assert_eq!(code, Ok(ExitCode::SUCCESS));
    let merged = &results::store::load(Path::new(&d("merged"))).unwrap()[0];
    let whole = super::Figures { written: 101, counted: 101, missing: 0 };
    assert_eq!(census_of(merged, "mem"), whole);
    assert_eq!(merged.plan.merged.len(), 2);
    let text = report(Path::new(&d("merged")));
    assert!(text.contains("census of 101 keys"), "{text}");
}
