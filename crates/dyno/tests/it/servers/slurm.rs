//! dyno on a real Slurm cluster: a one-node cluster (Debian's slurm-wlm and munge, installed by
//! `./scripts/test`) started here in a temporary directory — munged, slurmctld and slurmd in
//! the foreground as this test's children, on free loopback ports, stopped at the end — runs
//! `deploy/slurm/dyno.sbatch` with 4 tasks: `srun dyno run … --shard auto` against a server on
//! loopback, then `dyno merge`. The merged record holds the 4 shards, ranks from Slurm.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The cluster's daemons, stopped (by their PIDs: this test's children) when dropped.
struct Cluster {
    daemons: Vec<Child>,
    conf: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for d in self.daemons.iter_mut().rev() {
            let _ = d.kill();
            let _ = d.wait();
        }
    }
}

impl Cluster {
    fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    fn node_state(&self) -> String {
        let o = self.cmd("sinfo").args(["-h", "-o", "%t"]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }
}

fn spawn(dir: &Path, name: &str, cmd: &mut Command) -> Child {
    let log = std::fs::File::create(dir.join(format!("{name}.out"))).unwrap();
    cmd.stdout(Stdio::from(log.try_clone().unwrap()))
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap_or_else(|e| panic!("starting {name}: {e}"))
}

fn start(dir: &Path) -> Cluster {
    let host = String::from_utf8(Command::new("hostname").arg("-s").output().unwrap().stdout)
        .unwrap()
        .trim()
        .to_string();
    // munge: a key of our own, its socket in the directory.
    let key = dir.join("munge.key");
    let mut bytes = vec![0u8; 1024];
    {
        use std::io::Read;
        std::fs::File::open("/dev/urandom")
            .unwrap()
            .read_exact(&mut bytes)
            .unwrap();
    }
    std::fs::write(&key, &bytes).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400)).unwrap();
    let socket = dir.join("munge.socket");
    let mut daemons = vec![spawn(
        dir,
        "munged",
        Command::new("munged")
            .arg("--foreground")
            .arg("--force")
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", dir.join("munged.pid").display()))
            .arg(format!("--log-file={}", dir.join("munged.log").display()))
            .arg(format!("--seed-file={}", dir.join("munged.seed").display())),
    )];
    let deadline = Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        assert!(Instant::now() < deadline, "munged did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Slurm: one node, this machine, as many CPUs as slurmd finds.
    let cpus = {
        let o = Command::new("slurmd").arg("-C").output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        (text.split_whitespace())
            .find_map(|w| w.strip_prefix("CPUs="))
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(1)
    };
    let d = dir.display();
    let conf = dir.join("slurm.conf");
    std::fs::write(
        &conf,
        format!(
            "ClusterName=dyno\nSlurmctldHost={host}(127.0.0.1)\nSlurmctldPort={}\nSlurmdPort={}\n\
             SlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\nAuthInfo=socket={}\n\
             CredType=cred/munge\nStateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSelectType=select/cons_tres\n\
             SelectTypeParameters=CR_CPU\nReturnToService=2\nMpiDefault=none\n\
             NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 State=UNKNOWN\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES\n",
            testkit::free_port(),
            testkit::free_port(),
            socket.display()
        ),
    )
    .unwrap();
    for sub in ["state", "spool"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    daemons.push(spawn(
        dir,
        "slurmctld",
        Command::new("slurmctld")
            .args(["-D", "-c", "-i"])
            .env("SLURM_CONF", &conf),
    ));
    daemons.push(spawn(
        dir,
        "slurmd",
        Command::new("slurmd").arg("-D").env("SLURM_CONF", &conf),
    ));
    let cluster = Cluster { daemons, conf };
    // Ready when the node is idle (a node that registers before slurmctld knows it may come up
    // drained: resumed).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let state = cluster.node_state();
        if state == "idle" {
            break;
        }
        if state.starts_with("drain") || state == "down" {
            let _ = cluster
                .cmd("scontrol")
                .args(["update", &format!("nodename={host}"), "state=resume"])
                .output();
        }
        assert!(
            Instant::now() < deadline,
            "the node never became idle ({state:?}):\n{}",
            std::fs::read_to_string(dir.join("slurmd.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    cluster
}

#[test]
fn srun_runs_four_shards_that_merge_into_one_record() {
    for (tool, path) in [
        ("munged", "/usr/sbin/munged"),
        ("slurmctld", "/usr/sbin/slurmctld"),
        ("slurmd", "/usr/sbin/slurmd"),
        ("srun", "/usr/bin/srun"),
        ("sbatch", "/usr/bin/sbatch"),
        ("sinfo", "/usr/bin/sinfo"),
    ] {
        if testkit::installed(tool, &[path]).is_none() {
            return;
        }
    }
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let cluster = start(dir.path());
    let server = RefServer::start();
    let url = format!("http://127.0.0.1:{}/", server.port);
    let out = dir.path().join("results");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/slurm/dyno.sbatch");
    let o = cluster
        .cmd("sbatch")
        .current_dir(dir.path())
        .args(["--wait", "--ntasks=4", "--cpus-per-task=1", "--overcommit"])
        .arg(format!("--output={}/job.out", dir.path().display()))
        .arg(&script)
        .args([&url, "-c", "4", "--requests", "250"])
        .env("DYNO", env!("CARGO_BIN_EXE_dyno"))
        .env("DYNO_OUT", &out)
        .env("DYNO_RENDEZVOUS_HOST", "127.0.0.1")
        .env("DYNO_RENDEZVOUS_PORT", testkit::free_port().to_string())
        .output()
        .unwrap();
    let job = std::fs::read_to_string(dir.path().join("job.out")).unwrap_or_default();
    assert!(
        o.status.success(),
        "sbatch: {}\n{}\njob output:\n{job}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    // Four shards, their ranks from Slurm, each a quarter of the connections.
    for i in 0..4 {
        let s = record(&out.join(format!("shard-{i}")));
        assert_schema_valid(&s);
        assert_eq!(s["plan"]["shard"]["index"], i);
        assert_eq!(s["plan"]["shard"]["count"], 4);
        assert_eq!(s["cases"][0]["reps"][0]["detail"]["load"]["requests"], 250);
    }
    let merged = record(&out.join("merged"));
    assert_schema_valid(&merged);
    assert_eq!(merged["plan"]["merged"].as_array().unwrap().len(), 4);
    let load = &merged["cases"][0]["reps"][0]["detail"]["load"];
    assert_eq!(load["requests"], 1000, "{job}");
    assert_eq!(load["ok"], 1000);
    assert!(
        job.contains("1,000"),
        "the merged table in the job's output:\n{job}"
    );
    drop(server);
    drop(cluster);
}
