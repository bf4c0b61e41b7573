//! The A/A test of the CI gate, on a real server (`dyno serve --http`, loopback): one plan run
//! twice, the second run judged against the first by `--compare`, 20 times over, with the
//! default repetitions. Two identical runs must not be called different: the share of figure
//! verdicts claiming a change, and of p-values below 0.05, is at most α (5%), and the gate
//! passes at least 19 times in 20. The same server made slower (it answers nothing for 20 ms in
//! every 100 ms) is found regressed at least 19 times in 20. (With 10 ms in 100 it was found 16
//! times in 20 in a CI run: its p99 ×7, where the earlier runs' p99s, on this VM, spread so
//! widely (a run-to-run variance of 0.74 on the log scale) that only a change beyond ×9.6 was
//! visible — an honest "no change", and a test of the VM's noise more than of the gate.)
//!
//! Every pair runs back to back on a shared, noisy machine: what the repetitions of one run
//! cannot show (the machine drifting between runs) the verdicts take from the earlier runs of
//! the plan in the history, which is why three runs come first.

use crate::common::*;
use std::path::Path;

/// Pairs of runs, and slowed runs.
const PAIRS: usize = 20;
/// The level the gate promises.
const ALPHA: f64 = 0.05;

/// The plan: the load suite on `port`, open loop at 2,000 requests a second (latency from each
/// request's intended start, so a stalled server cannot hide its stalls), 200 ms a repetition,
/// the default repetitions.
fn plan(d: &Path, port: u16) -> std::path::PathBuf {
    let plan = d.join(format!("plan-{port}.toml"));
    std::fs::write(
        &plan,
        format!(
            "[suite]\nname = \"load\"\nconcurrency = 4\n\n[load]\nduration = \"200ms\"\nrate = 2000\n\n\
             [targets.endpoint]\nurl = \"http://127.0.0.1:{port}/\"\n"
        ),
    )
    .unwrap();
    plan
}

/// Runs `plan` into `out` (judged against `base` when given): the exit status.
fn run(d: &Path, plan: &Path, out: &str, base: Option<&str>) -> i32 {
    let mut c = dyno(d);
    c.arg("run").arg(plan).args(["--quiet", "-o", out]);
    if let Some(base) = base {
        c.args(["--compare", base]);
    }
    let o = c.output().unwrap();
    let code = o.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 5,
        "{out}: {code}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    code
}

/// The verdicts and p-values in `out`'s compare.json: (claims, judged, p < α, p-values).
fn tally(d: &Path, out: &str) -> [usize; 4] {
    let text = std::fs::read_to_string(d.join(out).join("compare.json")).unwrap();
    let c: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut t = [0; 4];
    for f in c["cases"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|k| k["figures"].as_array().unwrap())
    {
        let v = f["verdict"].as_str().unwrap();
        assert_ne!(v, "too-few-reps", "the default repetitions are enough: {f}");
        assert_ne!(v, "too-few-runs", "three runs came first: {f}");
        t[0] += usize::from(matches!(v, "improved" | "regressed"));
        t[1] += 1;
        if let Some(p) = f["p_value"].as_f64() {
            if p < ALPHA {
                eprintln!("{out}: p = {p:.4} on {}: {f}", f["figure"]);
            }
            t[2] += usize::from(p < ALPHA);
            t[3] += 1;
        }
    }
    t
}

/// The tests that need a real server.
mod servers {
    use super::*;

    #[test]
    fn identical_runs_are_not_called_different_and_a_slower_server_is() {
        let _g = serial();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let same = RefServer::start();
        let slow = RefServer::serve(&["--http", "--stall", "20ms/100ms"]);
        let (plan_same, plan_slow) = (plan(d, same.port), plan(d, slow.port));
        for i in 0..3 {
            run(d, &plan_same, &format!("r/first-{i}"), None);
        }
        let (mut aa, mut gate_passed, mut slow_found) = ([0; 4], 0, 0);
        for i in 0..PAIRS {
            let base = format!("r/a-{i}");
            run(d, &plan_same, &base, None);
            let again = format!("r/b-{i}");
            gate_passed += usize::from(run(d, &plan_same, &again, Some(&base)) == 0);
            for (sum, n) in aa.iter_mut().zip(tally(d, &again)) {
                *sum += n;
            }
            let slower = format!("r/slow-{i}");
            match run(d, &plan_slow, &slower, Some(&base)) {
                5 => slow_found += 1,
                _ => eprintln!(
                    "{slower} not found regressed: {}",
                    std::fs::read_to_string(d.join(&slower).join("compare.json")).unwrap()
                ),
            }
        }
        let [claims, judged, low_p, p_values] = aa;
        eprintln!(
            "A/A: {claims} of {judged} verdicts claimed a change; {low_p} of {p_values} p-values < 0.05; \
             the gate passed {gate_passed} of {PAIRS}; the slowed server was found regressed {slow_found} of {PAIRS}"
        );
        assert!(judged >= PAIRS * 5, "{judged}");
        assert!(
            claims as f64 <= ALPHA * judged as f64,
            "{claims} of {judged}"
        );
        assert!(
            low_p as f64 <= ALPHA * p_values as f64,
            "{low_p} of {p_values}"
        );
        assert!(
            gate_passed as f64 >= 0.95 * PAIRS as f64,
            "{gate_passed} of {PAIRS}"
        );
        assert!(slow_found >= PAIRS - 1, "{slow_found} of {PAIRS}");
    }
}
