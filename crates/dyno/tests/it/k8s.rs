//! The Kubernetes manifests (`deploy/k8s/`): an Indexed Job of shards, a headless Service for
//! the rendezvous, a ConfigMap holding the plan, a volume for the results, a merge Job. No
//! cluster runs here, so the test reads the manifests and checks their wiring (the shard count
//! the Job runs and the one dyno is told, the rendezvous host the Service makes, the plan's and
//! the results' mounts), then runs the Job's container command once per index, locally, with
//! the environment an Indexed Job gives each pod (JOB_COMPLETION_INDEX, the pod's host name),
//! against a server on loopback, and the merge Job's command after them.

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};

fn manifest(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/k8s")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not text: {v}"))
}

/// The value after `flag` in `args`.
fn after<'a>(args: &'a [String], flag: &str) -> &'a str {
    let i = args
        .iter()
        .position(|a| a == flag)
        .unwrap_or_else(|| panic!("no {flag} in {args:?}"));
    &args[i + 1]
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|a| text(a).to_string())
        .collect()
}

/// The mount path of the volume that `pred` picks in a pod spec.
fn mount_of(pod: &Value, pred: impl Fn(&Value) -> bool) -> String {
    let volume = (pod["volumes"].as_array().unwrap().iter())
        .find(|v| pred(v))
        .unwrap_or_else(|| panic!("no such volume: {pod}"));
    let mounts = pod["containers"][0]["volumeMounts"].as_array().unwrap();
    let m = mounts
        .iter()
        .find(|m| m["name"] == volume["name"])
        .unwrap_or_else(|| panic!("volume {} not mounted", volume["name"]));
    text(&m["mountPath"]).to_string()
}

/// The tests that need a real server.
mod servers {
    use super::*;

    #[test]
    fn the_manifests_wire_an_indexed_job_of_shards_that_runs_and_merges() {
        let job = manifest("job.yaml");
        let service = manifest("service.yaml");
        let config = manifest("configmap.yaml");
        let pvc = manifest("pvc.yaml");
        let merge = manifest("merge-job.yaml");
        // The Job: indexed, all its pods at once, as many as the shards dyno is told of.
        assert_eq!(job["kind"], "Job");
        let spec = &job["spec"];
        assert_eq!(spec["completionMode"], "Indexed");
        let n = spec["completions"].as_u64().unwrap();
        assert_eq!(spec["parallelism"].as_u64(), Some(n), "every shard at once");
        let pod = &spec["template"]["spec"];
        let container = &pod["containers"][0];
        let args = strings(&container["args"]);
        assert_eq!(args[0], "run");
        assert_eq!(after(&args, "--shard"), format!("auto/{n}"));
        // The rendezvous: shard 0's pod by the name the headless Service gives it.
        assert_eq!(service["spec"]["clusterIP"], "None");
        let subdomain = text(&pod["subdomain"]);
        assert_eq!(subdomain, text(&service["metadata"]["name"]));
        let (host, port) = after(&args, "--rendezvous").rsplit_once(':').unwrap();
        assert_eq!(
            host,
            format!("{}-0.{subdomain}", text(&job["metadata"]["name"]))
        );
        let port: u64 = port.parse().unwrap();
        assert_eq!(service["spec"]["ports"][0]["port"].as_u64(), Some(port));
        assert_eq!(container["ports"][0]["containerPort"].as_u64(), Some(port));
        let labels = spec["template"]["metadata"]["labels"].as_object().unwrap();
        for (k, v) in service["spec"]["selector"].as_object().unwrap() {
            assert_eq!(labels.get(k), Some(v), "the Service selects the Job's pods");
        }
        // The plan: the ConfigMap's plan.toml, mounted where dyno reads it.
        let plan_dir = mount_of(pod, |v| {
            v["configMap"]["name"] == config["metadata"]["name"]
        });
        assert_eq!(args[1], format!("{plan_dir}/plan.toml"));
        let plan = text(&config["data"]["plan.toml"]);
        // The results: a volume every pod writes and the merge reads.
        let claim = text(&pvc["metadata"]["name"]);
        assert!(
            pvc["spec"]["accessModes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m == "ReadWriteMany")
        );
        let results = mount_of(pod, |v| v["persistentVolumeClaim"]["claimName"] == claim);
        assert_eq!(after(&args, "-o"), results);
        let merge_pod = &merge["spec"]["template"]["spec"];
        let merge_args = strings(&merge_pod["containers"][0]["args"]);
        let merge_results = mount_of(merge_pod, |v| {
            v["persistentVolumeClaim"]["claimName"] == claim
        });
        assert_eq!(
            merge_args,
            [
                "merge",
                &merge_results,
                "-o",
                &format!("{merge_results}/merged")
            ]
        );
        assert_eq!(
            text(&container["command"][0]),
            text(&merge_pod["containers"][0]["command"][0])
        );

        // Now the pods' command, N times here: the plan pointed at a server on loopback (and
        // shortened), the mounts as directories, the rendezvous host as 127.0.0.1.
        let _g = serial();
        let server = RefServer::start();
        let dir = tempfile::tempdir().unwrap();
        let local_plan = dir.path().join("plan");
        std::fs::create_dir(&local_plan).unwrap();
        let url = format!("http://127.0.0.1:{}/", server.port);
        let plan = plan
            .lines()
            .map(|l| match l.split_once('=').map(|(k, _)| k.trim()) {
                Some("url") => format!("url = \"{url}\""),
                Some("duration") => "duration = \"2s\"".into(),
                Some("rate") => "rate = 400".into(),
                Some("concurrency") => format!("concurrency = {}\nreps = 1", 2 * n),
                _ => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(local_plan.join("plan.toml"), plan).unwrap();
        let local_results = dir.path().join("results");
        let rendezvous = format!("127.0.0.1:{}", testkit::free_port());
        let local = |a: &str| -> String {
            if a.starts_with(&format!("{host}:")) {
                rendezvous.clone()
            } else if let Some(rest) = a.strip_prefix(&plan_dir) {
                format!("{}{rest}", local_plan.display())
            } else if let Some(rest) = a.strip_prefix(&results) {
                format!("{}{rest}", local_results.display())
            } else {
                a.to_string()
            }
        };
        let pods: Vec<Child> = (0..n)
            .map(|i| {
                Command::new(env!("CARGO_BIN_EXE_dyno"))
                    .args(args.iter().map(|a| local(a)))
                    .env_remove("SLURM_PROCID")
                    .env_remove("SLURM_NTASKS")
                    .env("JOB_COMPLETION_INDEX", i.to_string())
                    .env(
                        "HOSTNAME",
                        format!("{}-{i}", text(&job["metadata"]["name"])),
                    )
                    .current_dir(dir.path())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for (i, p) in pods.into_iter().enumerate() {
            let o = p.wait_with_output().unwrap();
            assert!(
                o.status.success(),
                "pod {i}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let o = Command::new(env!("CARGO_BIN_EXE_dyno"))
            .args(merge_args.iter().map(|a| local(a)))
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "merge: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let merged = record(&local_results.join("merged"));
        assert_schema_valid(&merged);
        let shards = merged["plan"]["merged"].as_array().unwrap();
        assert_eq!(shards.len() as u64, n);
        for (i, s) in shards.iter().enumerate() {
            assert_eq!(s["index"], i, "ranks from JOB_COMPLETION_INDEX");
        }
        let load = &merged["cases"][0]["reps"][0]["detail"]["load"];
        assert_eq!(load["generator"]["intended_per_s"], 400.0);
        let requests = load["requests"].as_u64().unwrap();
        assert!((780..=820).contains(&requests), "400/s for 2 s: {requests}");
        drop(server);
    }
}
